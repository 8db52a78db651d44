"""A one-wave ping-pong tile of 128 rows turned into 64 rows twice as wide: ``gemm_modes.autotable``'s last
tile step.

Where a ping-pong pick of 128-row tiles in pairs takes one wave, every CTA owns one tile, and ping-pong's
second math warpgroup has none: the one that works issues two m64 wgmmas of the tile's width per k-step.
A 64-row tile about twice as wide gives it one m64 wgmma of twice the width instead, the same output per
CTA; in clusters of four along M, each B tile is multicast to four CTAs. cuBLAS runs such tiles on these
shapes (torch 2.11 at 1056³: nvjet 176×64 in clusters of 2×4; at 5768×136: 136×64 in 1×4)::

    1136² in 128×88 tiles, one per CTA            in 64×192 tiles, one per CTA, clusters of four along M
    ┌──────┬──────┬─ … 13 columns                 ┌──────────────┬─ … 6 columns
    │128×88│      │                               │    64×192    │
    ├──────┼──────┼─ … 9 rows                     ├──────────────┼─ … 18 rows
    (117 tiles; one warpgroup each: 2 × m64n88)   (108 tiles; one warpgroup each: 1 × m64n192)

:func:`halved` takes the narrowest width of :data:`WIDTHS` whose clusters of four the GPU holds at once
(``clusters_of_four.resident_clusters``), else, where M and N are within :data:`SQUARE_RATIO` of each other,
the narrowest whose clusters of two it holds, where that tile holds fewer outputs than the pick's
(:data:`PAIR_SHARE`; cuBLAS at 1384³: 232×64 in 1×2, 22 × 6 = 132 tiles). Only 128-row picks: where the
pick already has 64 rows, a wider one gains no wgmma width per row and its padding can cost (1024³ 64×128
→ 64×160 1.010 → 0.878), and for M of one or two 64-row tiles, a cluster of four along M idles half its
CTAs (128×4096×14336 64×64 → 64×144 1.139 → 0.711).

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds. Widths 144–192 in 16-column steps,
clusters of four only: on 26 fresh shapes of the 112 of 90,000 draws it changes, 0.926 → 1.073, 22 faster, 2
slower by more than 2 % (1136³ 0.916 → 1.143, 6104×152×3024 0.782 → 0.915). Then widths to 256 in 8-column
steps (the odd multiples of 8 in wide subtiles, ``gemm_modes.wide_subtiles``) and clusters of two. The fours
gained everywhere: 8 of 8 (1176³ 1.049 → 1.334), then on 30 fresh shapes of the 69 of 9,000 draws they and
pairs on squares (before the share bound) change, 0.939 → 1.066, 29 faster, none slower (651×2312×3568 0.637 →
0.871, 677×2392×13648 1.025 → 1.462). A pair where a four fits lost on 5 of 6 squares (1104³ 64×160 2×1
against 64×192 4×1 1.001 → 0.895). The pairs gained on squares (13 of 13, 1384³ 0.880 → 1.004), but off the
squares they were a wash: on 20 shapes with M and N within 2× 0.928 → 0.926, and past 2× 6 of 13 slower
(745×2112×5504 64×192 0.990 → 0.890); there, where the pair holds as many outputs as the pick (64×224 for
128×112), 8 of 11 ran slower, where fewer (64×232 for 128×128) 7 of 9 faster. As landed, on 22 shapes (14
drawn with M and N within 2×, 8 squares): **0.880 → 0.952, 15 faster, 1 slower** (1824×968×8280 0.850 → 0.835;
1632×1136×5888 0.829 → 1.002, 1376³ 0.941 → 1.134).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .clusters_of_four import resident_clusters
from .modes import TunedConfig

#: The 64-row tiles' widths, narrowest first: 8-column steps up to the widest wgmma (n256).
WIDTHS = tuple(range(144, 257, 8))

#: Clusters of two only where the longer of M and N is at most this many times the shorter, and where the
#: 64-row tile holds at most :data:`PAIR_SHARE` of the pick's outputs (each CTA's multiply-adds per k).
SQUARE_RATIO = 2
PAIR_SHARE = 0.97


def halved(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """The 64-row ping-pong tile of the narrowest of :data:`WIDTHS` whose cluster-tiles the GPU holds at
    once, in clusters of four along M, else (M and N within :data:`SQUARE_RATIO`, a tile under
    :data:`PAIR_SHARE` of the pick's) of two, in place of ``config``, a ping-pong 128-row tile in pairs that
    takes one wave (each cluster one tile); None where ``config`` is anything else (swapped, split,
    stream-K) or no width fits."""
    if config.schedule is not Schedule.PINGPONG or config.tile_m != 128 or config.cluster_size != 2:
        return None
    if config.swap_ab or config.split_k > 1 or config.stream_k:
        return None
    if config.cluster_tiles(m, n) > sms // 2:
        return None
    for width in WIDTHS:
        fours = TunedConfig(GemmConfig(64, width, 4, 1, Schedule.PINGPONG))
        if fours.cluster_tiles(m, n) <= resident_clusters(4, sms):
            return fours
    if max(m, n) > SQUARE_RATIO * min(m, n):
        return None
    for width in WIDTHS:
        pairs = TunedConfig(GemmConfig(64, width, 2, 1, Schedule.PINGPONG))
        if pairs.cluster_tiles(m, n) <= resident_clusters(2, sms):
            return pairs if 64 * width <= PAIR_SHARE * config.tile_m * config.tile_n else None
    return None


_COUNT = {2: "two", 4: "four"}


def describe(wide: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``wide`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = -(-m // wide.tile_m), -(-n // wide.tile_n)
    return (
        f"one {pick.tile_m}×{pick.tile_n} tile per CTA: 64×{wide.tile_n} tiles instead ({rows} × {cols} in "
        f"{wide.cluster_tiles(m, n)} clusters of {_COUNT[wide.cluster_m]} along M, ≤ "
        f"{resident_clusters(wide.cluster_m, sms)} at once), one "
        f"m64n{wide.tile_n} wgmma per k-step where {pick.tile_m}×{pick.tile_n} takes two of n{pick.tile_n}"
    )
