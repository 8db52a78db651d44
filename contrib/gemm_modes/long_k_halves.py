"""``long_k``'s split on 192-row halves: ``gemm_modes.autotable``'s step right after ``long_k``.

``long_k`` splits a narrow N (or, on Cᵀ, a short M) over a long K on cooperative 128-row tiles, one or two
column tiles wide: each of the two warpgroups issues m64 × the whole width per k-step, and a 128-row tile
of a 2,000–6,000-row side leaves the wave's CTAs partly idle. A 192-row tile whose warpgroups each take
every row and half the columns (``wg_split="n"``, as ``split_halves`` runs them) does the same rows in
fewer, narrower column halves; in as many parts or fewer it keeps at least as many CTAs busy for fewer
multiply-adds each::

    2864×432 in 128×216 tiles (2×1), K in 2 parts     192×112, warpgroups along N, K in 2 parts (1×2)
    ┌────────┬────────┐                                ┌──────┬──────┬──────┬──────┐
    │128×216 │        │ 23 rows × 2 parts              │192×  │      │      │      │ 15 rows × 2 parts
    │        │        │                                │  112 │      │      │      │
    ├────────┼─ …                                      ├──┬───┼─ …
    92 CTAs of 132; per k-step each warpgroup          120 CTAs; per k-step each warpgroup
    m64n216: 27648 multiply-adds per CTA / 2 parts     3 × m64n56: 21504 / 2 parts

:func:`replaces` weighs the tiles 192 × ⌈N / c⌉ (16-column steps, :data:`MIN_WIDTH`–256) in clusters of 1×2
(:data:`CLUSTERS`), in 2 parts up to the pick's own, each of at least ``long_k.MIN_PART_K_TILES`` k-tiles,
whose clusters the GPU holds at once and whose tiles keep at least as many CTAs busy as the pick
(``split_halves.fewest_multiply_adds``); the one of fewest multiply-adds per CTA and k-step wins where that
is fewer than the pick's.

NVIDIA H200, 2026-11-30, ours / torch against the ``long_k`` pick in the same rounds
(``benchmarks/gemm.py --sweep --against-table``): with clusters of 1×2, 2×1 and 1×1, 34 shapes of random
small-side and projection draws 1.086 → 1.143, 25 faster by more than 2 % and two slower, both outside
1×2 (2464×520×12600 1.372 → 0.987 in 1×1, 506×2264×6184 0.958 → 0.789 in 2×1); in 1×2 only, on **38 fresh
shapes (every one it changes in 9,000 draws) 1.030 → 1.123, 34 faster, one slower** (3024×216×9680 in 4 parts
of 5, 0.978 of the pick; 2864×432×7216 1.020 → 1.291, 4144×232×2720 0.716 → 0.856). About 1 draw in 240 of
the three families, all small-side or projection shapes.
"""

from __future__ import annotations

from hopper_gemm.config import Schedule

from . import long_k
from .modes import TunedConfig
from .split_halves import Search, fewest_multiply_adds

#: The narrowest half tile: 192×112 gives each warpgroup m64n56 per k-step, still wider than the m64n48 that
#: ``split_halves.NARROW_WIDTH`` found slow; 80–96 wide halves were most of the candidates below it.
MIN_WIDTH = 112
#: A pair along N shares each 192-row A tile (fewer rows of K from L2 per CTA than a pair along M); 1×1 and 2×1
#: lost the two shapes they alone took (2464×520×12600 1.372 → 0.987, 506×2264×6184 0.958 → 0.789).
CLUSTERS = ((1, 2),)


def replaceable(split: TunedConfig) -> bool:
    """Whether :func:`replaces` weighs halves in place of ``split``: a cooperative 128-row split-K pick, as
    ``long_k`` makes them."""
    return split.split_k > 1 and split.tile_m == 128 and split.schedule is Schedule.COOPERATIVE


def per_cta_work(split: TunedConfig) -> float:
    """Multiply-adds per CTA and k-step of a split: its tile's over its parts."""
    return split.tile_m * split.tile_n / split.split_k


def replaces(split: TunedConfig, mnk: tuple[int, int, int], sms: int) -> TunedConfig | None:
    """The 192-row halves (module docstring) in place of ``split``, a pick :func:`replaceable` says they may
    take, on its own output (Cᵀ where it is swapped); None where none fits or none does fewer multiply-adds
    per CTA and k-step."""
    if not replaceable(split):
        return None
    search = Search(
        parts=tuple(range(2, split.split_k + 1)),
        fewest_k_tiles=long_k.MIN_PART_K_TILES,
        min_width=MIN_WIDTH,
        clusters=CLUSTERS,
    )
    least = per_cta_work(split)
    busy = split.launch_tiles(mnk[0], mnk[1])
    halves = fewest_multiply_adds(search, split, mnk, sms, least=least, busy=busy)
    return halves if halves is not None and per_cta_work(halves) < least else None


def describe(halves: TunedConfig, split: TunedConfig, mnk: tuple[int, int, int]) -> str:
    """Why :func:`replaces` took ``split``'s place, in one clause (``--explain``)."""
    m, n, _ = mnk
    return (
        f"on 192-row halves: 192×{halves.tile_n} tiles whose warpgroups split N, {halves.split_k} parts on "
        f"{halves.launch_tiles(m, n)} CTAs (the 128-row split: {split.launch_tiles(m, n)}), per CTA "
        f"{per_cta_work(halves):.0f} multiply-adds per k against {per_cta_work(split):.0f}"
    )
