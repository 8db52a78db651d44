"""A thin side (at most 128) across one wave of 64-row ping-pong tiles: ``gemm_modes.autotable``'s step after
the split halves.

Where M or N is at most 128 against a side at least 16 times longer, the table's pick is a 128-row tile in
clusters of four along the long side, one per CTA, and few enough of them that a quarter or more of the SMs
sit idle. Laid with the thin side as the rows (Cᵀ = B·Aᵀ where N is thin) in 64-row ping-pong tiles, one or
two of them fill it, and the long side cut into as many columns as the SMs then hold makes one nearly full
wave of tiles a quarter to a half the pick's area. cuBLAS runs this plan at 9016×112×6096 (torch 2.11: nvjet
64×144 on Cᵀ in 2×1)::

    9016×112 in 128×112 tiles, 4×1                  on Cᵀ (112×9016) in 64×144 tiles, 2×1
    71 tiles on 71 of 132 SMs                        2 × 63 = 126 tiles on 126 SMs
    per CTA 128×112 = 14336 multiply-adds per k      per CTA 64×144 = 9216; the A tile multicast to both rows

:func:`replaces` takes ⌈thin / 64⌉ row tiles (the thin side filling at least :data:`SIDE_FILL` of them) and
the narrowest width, in 8-column steps of 64–256, whose columns take at most the SMs' share per row tile; the
tiles must fill at least :data:`BUSY_SHARE` of the SMs and have less area than the pick's. The cluster pairs
the two row tiles (2×1) where there are two, else two columns (1×2).

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds. On every pick with a side of 128 or
less filling under 75 % of the SMs (31 shapes: 30 of the 144 of 9,000 draws it changed and 9016×112×6096):
0.936 → 0.907, 13 faster and 12 slower; the losses were picks of 64 rows already (4792×88×4256 0.875 →
0.609, 4344×96×2064 1.374 → 0.941) and thin sides filling little of their 64-row tiles (8936×72×2840: 72 of
128 rows, 0.914 → 0.767), the gains 128-row picks whose thin side fills its tiles (9016×112×6096 0.818 →
1.006, 8896×64×3800 0.866 → 1.025, 115×8520×10736 0.773 → 0.982). Gated so (128-row picks or more, the thin
side filling 85 % of its tiles), on **26 drawn after (every shape it changes is about 1 draw in 130) 0.931 →
1.033, 24 faster by more than 2 %, 1 slower** (8712×112×12096 0.801 → 1.014, 8704×64×13672 0.927 → 1.160;
122×4800×3080 0.943 → 0.887).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .modes import TunedConfig

#: The longest thin side: one or two 64-row tiles.
THIN = 128
#: The long side is at least this many times the thin one.
LONG_RATIO = 16
#: The share of its 64-row tiles the thin side must fill (72 of 128 lost: 8936×72×2840 0.914 → 0.767).
SIDE_FILL = 0.85
#: The pick is replaced where its tiles keep fewer than this share of the SMs busy.
IDLE_BELOW = 0.75
#: The share of the SMs the new tiles keep busy, at least.
BUSY_SHARE = 0.9


def replaces(config: TunedConfig, mnk: tuple[int, int, int], sms: int, swappable: bool) -> TunedConfig | None:
    """The 64-row tiles across the thin side (module docstring) in place of ``config``; None where the problem
    (``swappable``: no bias, B as (N, K)), the pick (64 rows already, split, stream-K, or a wave that keeps
    :data:`IDLE_BELOW` of the SMs busy or more) or the sides leave it alone."""
    m, n, _ = mnk
    if not swappable or config.split_k > 1 or config.stream_k or config.tile_m < 128:
        return None
    thin, long_side = min(m, n), max(m, n)
    if thin > THIN or long_side < LONG_RATIO * thin:
        return None
    if config.launch_tiles(m, n) >= IDLE_BELOW * sms:
        return None
    row_tiles = -(-thin // 64)
    if thin < SIDE_FILL * row_tiles * 64:
        return None
    width = -(-long_side // (sms // row_tiles) // 8) * 8
    if not 64 <= width <= 256 or 64 * width >= config.tile_m * config.tile_n:
        return None
    cluster = (2, 1) if row_tiles == 2 else (1, 2)
    tiles = TunedConfig(GemmConfig(64, width, *cluster, Schedule.PINGPONG), swap_ab=n < m)
    return tiles if tiles.launch_tiles(m, n) >= BUSY_SHARE * sms else None


def describe(tiles: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`replaces` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = tiles.launch_shape(m, n)
    return (
        f"{pick.launch_tiles(m, n)} tiles of {pick.tile_m}×{pick.tile_n} on {sms} SMs: the thin side's {rows} rows "
        f"in {-(-rows // 64)} of 64, {cols} in columns of {tiles.tile_n}, {tiles.launch_tiles(m, n)} tiles of "
        f"64×{tiles.tile_n}{' on Cᵀ' if tiles.swap_ab else ''}"
    )
