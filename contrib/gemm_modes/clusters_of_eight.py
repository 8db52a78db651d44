"""Clusters of eight, 4×2: a ping-pong pair widened to them, and a split replaced by ping-pong 192-row tiles in them;
``gemm_modes.autotable``'s steps before the subtiles.

A ping-pong tile in a 1×2 pair, whichever step took it, that takes one wave: its two column tiles share each tile
of the long side's operand (multicast to both), but every row tile loads its own copy of the short side's. In 4×2
clusters four row tiles share each of those too, and two column tiles still share each of the long side's; the L2
serves a quarter of the short side's fetches. Clusters of eight do not span GPCs, so a 132-SM GPU holds only 15 at
once (``clusters_of_four.resident_clusters``): the step widens only where the cluster-tiles fit that one wave. In a
second wave eights lost (2056×752×5752: ping-pong 128×112 in 2×4 and 4×2 ran 0.47–0.61 of torch).

==============  =========================================  ===========================================================
                1×2 (the pick; or 4×1)                     4×2 (this step)
==============  =========================================  ===========================================================
long side's     one copy a pair, multicast to its two      the same: one copy a pair of column tiles
operand         column tiles
short side's    one copy a row tile                        one copy per four row tiles, multicast to them
operand
waves           one                                        one, where the cluster-tiles fit the 15 eights held at once
==============  =========================================  ===========================================================

cuBLAS runs this plan (torch 2.11: ``nvjet`` 192×88, 192×72, 192×112 in 4×2 at 169×10368×4664, 143×8688×3560,
210×9688×10200, where ours in 1×2 ran 0.815, 0.851, 0.841 of torch and in 4×2 0.973, 0.976, 0.990; in 4×1
0.74–0.84, in 2×2 0.955). NVIDIA H200 with PDL, 2026-11-30, ours / torch's CUDA graph against the table without
the step, in the same rounds (``benchmarks/gemm.py --sweep --against-table``), on shapes drawn at random from 9,000
draws where it changes the pick:

- ping-pong 192-row tiles (a short N of 144–200 against M of 8500–11300, a short M of 140–217): 32 shapes
  **0.970 → 1.076**, 25 faster by 2–26 %, none slower by more than 2 % (161×10360×4328 0.790 → 0.992); 24 more
  drawn after it landed **0.982 → 1.065**, 15 faster by 2–18 %, none slower (203×10400×7048 0.837 → 1.005);
- ping-pong 128-row tiles (a short M of 136–406 on Cᵀ, a short N of 536–992 against M of 2160–2912, squares near
  1432): 23 shapes **0.910 → 1.033**, 17 faster by 2–31 %, 1 slower (348×3200×3200 1.196 → 1.076)
  (2552×816×14712 0.776 → 1.017, 142×6064×2280 0.784 → 0.974, 1432³ 0.816 → 0.960); 24 more drawn after it landed
  **0.888 → 1.014**, 21 faster, 2 slower by under 3 %.

A ping-pong 128-row tile in clusters of four along the rows (4×1, ``gemm_modes.clusters_of_four``) over an even
count of column tiles gains the same way, each tile of the long side's operand then multicast to two: on 25 shapes
(24 drawn where it changes the pick, about 1 in 85, and 2960×344×2664, where cuBLAS runs 128×88 in eights: torch
2.11 ``nvjet`` 88×128 in 4×2 on its column-major output) **0.968 → 1.016, 16 faster by 2–17 %, none slower**
(6960×216×4712 0.821 → 0.963, 409×3056×4744 0.821 → 0.951, 2960×344×2664 0.877 → 0.998); 24 drawn after it
landed **0.980 → 1.024, 16 faster, 1 slower by 2.6 %**. So does a 64-row one up to :data:`FOURS_64_WIDEST` wide: of 24
drawn with any width 0.983 → 1.028, the 15 up to 136 wide all 2.6–18 % faster (3648×144×8320 0.983 → 1.163,
2680×80×2320 0.761 → 0.879), the 8 of 192–256 (64-row tiles twice as wide, on squares) 0.974–0.997 and 1032³'s
64×176 1.042; with the bound, 25 drawn after (about 1 draw in 160) **0.987 → 1.022, 13 faster, 1 slower by 3.7 %**
(173×3336×3712 0.861 → 0.971, 3120×136×2576 0.867 → 0.960).

64-row ping-pong pairs (not drawn where one wave holds them in eights) and cooperative pairs keep their cluster;
cooperative 192-row pairs in 4×2 ran 0.972 → 0.984 of torch on 23 shapes, 5 faster, 1 slower: left out.

**A split in their place** (:func:`replaces_split`): where the pick splits K (split-K or stream-K) over a short side of
:data:`SPLIT_SHORT_SIDES` (N, or M on Cᵀ), ping-pong 192-row tiles in its two column tiles (at most
``short_side.PINGPONG_192_WIDEST`` wide) in clusters of 4×2 may hold the whole long side in one wave; where they fill
at least :data:`MIN_WAVE_FILL` of it, they run unsplit instead: no partial sums through the workspace, no fix-up,
and the short side's operand multicast to four. cuBLAS's plan at 11456×168×12136 (torch 2.11: ``nvjet`` 88×192 in
2×4 on its column-major output, our 192×88 in 4×2; ours 0.972 of torch against the pick's 0.909, cooperative
192×176 2×1 split in 2). Same card and day, against the table without it, 24 shapes drawn where it changes the
pick and that one: **0.982 → 1.065, 23 faster by 2–26 %, none slower** (9240×200×15112 aligned stream-K 0.788 →
0.991, 163×11296×5112 split-K in 2 0.887 → 1.003, 8928×144×7496 0.943 → 1.016); 24 more drawn after it landed
**0.997 → 1.066, 19 faster, none slower** (9632×200×13336 0.790 → 0.989).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from . import clusters_of_four
from .modes import TunedConfig
from .short_side import PINGPONG_192_WIDEST, pingpong_192_width

#: The ping-pong tile heights measured in clusters of eight, by the cluster they widen (the module's docstring; no
#: ping-pong 192-row tile takes clusters of four along the rows).
MEASURED_HEIGHTS = {(1, 2): (128, 192), (4, 1): (64, 128)}
#: The widest 64-row ping-pong tile in fours that goes in eights: the long side's 64-row operand tile, which 4×2
#: multicasts to two, is then at least a third of each k-step's loads. Wider ones (64-row tiles twice as wide, on
#: squares) ran 0.97–1.00 of the fours (the module's docstring).
FOURS_64_WIDEST = 128
#: The short sides :func:`replaces_split` lays in two column tiles of a ping-pong 192-row tile: past one such tile's
#: widest, up to two of them.
SPLIT_SHORT_SIDES = range(PINGPONG_192_WIDEST + 1, 2 * PINGPONG_192_WIDEST + 1)
#: The share of the clusters of eight held at once the unsplit tiles must keep busy (:func:`replaces_split`): at
#: most one wave, and no fewer than this of it, since the split it replaces fills the SMs with its parts.
MIN_WAVE_FILL = 0.8


def widened(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """``config``, a ping-pong tile of :data:`MEASURED_HEIGHTS` rows in a 1×2 pair or in clusters of four along the
    rows (4×1, over an even count of column tiles), in clusters of eight, 4×2 (four row tiles share each tile of the
    short side's operand, two column tiles each of the long side's), where its cluster-tiles then fit one wave
    (:func:`~gemm_modes.clusters_of_four.resident_clusters` of eight on ``sms`` SMs); else None."""
    cluster = (config.cluster_m, config.cluster_n)
    if config.schedule is not Schedule.PINGPONG or config.tile_m not in MEASURED_HEIGHTS.get(cluster, ()):
        return None
    rows, cols = config.launch_shape(m, n)
    if cluster == (4, 1) and -(-cols // config.tile_n) % 2:
        return None  # an odd count of column tiles would leave half of each last cluster idle
    if cluster == (4, 1) and config.tile_m == 64 and config.tile_n > FOURS_64_WIDEST:
        return None
    # measured with staging buffers of its own: the ring's stage count was weighed for the pair
    eight = config.with_(cluster_m=4, cluster_n=2, staging_in_ring=False)
    if eight.cluster_tiles(rows, cols) > clusters_of_four.resident_clusters(8, sms):
        return None
    return eight


def describe(tile: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``tile`` runs in clusters of eight, in one clause (``--explain``)."""
    rows, cols = tile.launch_shape(m, n)
    return (
        f"in clusters of 4×2: {tile.cluster_tiles(rows, cols)} of them, one wave of the "
        f"{clusters_of_four.resident_clusters(8, sms)} held at once"
    )


def replaces_split(config: TunedConfig, m: int, n: int, sms: int, swappable: bool) -> TunedConfig | None:
    """Ping-pong 192-row tiles in clusters of 4×2, unsplit, in place of ``config``, a split-K or stream-K pick on an M×N
    output whose short side (N, or M on Cᵀ where ``swappable``: no bias, B as (N, K)) is one of
    :data:`SPLIT_SHORT_SIDES`, in two column tiles, where their cluster-tiles take one wave of eights and fill at least
    :data:`MIN_WAVE_FILL` of it; else None."""
    if not config.partial_sums:
        return None
    swap = m < n
    short_side = m if swap else n
    if short_side not in SPLIT_SHORT_SIDES or (swap and not swappable):
        return None
    tile = GemmConfig(192, pingpong_192_width(short_side, 2), 4, 2, Schedule.PINGPONG, wg_split="m")
    eight = TunedConfig(tile, swap_ab=swap)
    rows, cols = eight.launch_shape(m, n)
    held = clusters_of_four.resident_clusters(8, sms)
    if not MIN_WAVE_FILL * held <= eight.cluster_tiles(rows, cols) <= held:
        return None
    return eight


def describe_split(tile: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``tile`` took the place of the split ``pick``, in one clause (``--explain``)."""
    rows, cols = tile.launch_shape(m, n)
    side, extent = ("M", m) if tile.swap_ab else ("N", n)
    how = "stream-K" if pick.stream_k else f"split-K in {pick.split_k}"
    return (
        f"unsplit in place of {how}: {side} = {extent} in 2 column tiles of ping-pong 192×{tile.tile_n}, "
        f"{tile.cluster_tiles(rows, cols)} clusters of 4×2, one wave of the "
        f"{clusters_of_four.resident_clusters(8, sms)} held at once"
    )
