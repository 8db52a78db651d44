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
(``clusters_of_four.resident_clusters``). Only 128-row picks: where the pick already has 64 rows, a wider
one gains no wgmma width per row and its padding can cost (1024³ 64×128 → 64×160 1.010 → 0.878), and for
M of one or two 64-row tiles, a cluster of four along M idles half its CTAs (128×4096×14336 64×64 →
64×144 1.139 → 0.711).

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds: first on the 26 shapes of
90,000 draws where it also replaced 64-row picks, 0.953 → 1.028 (the three losses all 64-row picks, the
22 gains all 128-row ones: 1136³ 0.916 → 1.143, 2184×560×3632 1.085 → 1.531); then, 128-row picks only,
on 26 fresh shapes of the 112 of 90,000 draws it changes: 0.926 → 1.073, 22 faster, 2 slower by more than
2 % (246×3952×2496 1.246 → 1.171, 5696×152×2816 0.921 → 0.893); 6104×152×3024 0.782 → 0.915, 462×2112×2048
0.778 → 1.025, 2296×536×8232 0.910 → 1.259.
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .clusters_of_four import resident_clusters
from .modes import TunedConfig

#: The 64-row tiles' widths, narrowest first: 16-column steps up to the widest a ping-pong warpgroup holds.
WIDTHS = (144, 160, 176, 192)


def halved(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """The 64-row ping-pong tile of the narrowest of :data:`WIDTHS` in clusters of four along M whose
    cluster-tiles the GPU holds at once, in place of ``config``, a ping-pong 128-row tile in pairs that
    takes one wave (each cluster one tile); None where ``config`` is anything else (swapped, split, stream-K)
    or no width fits."""
    if config.schedule is not Schedule.PINGPONG or config.tile_m != 128 or config.cluster_size != 2:
        return None
    if config.swap_ab or config.split_k > 1 or config.stream_k:
        return None
    if config.cluster_tiles(m, n) > sms // 2:
        return None
    for width in WIDTHS:
        wide = TunedConfig(GemmConfig(64, width, 4, 1, Schedule.PINGPONG))
        if wide.cluster_tiles(m, n) <= resident_clusters(4, sms):
            return wide
    return None


def describe(wide: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``wide`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = -(-m // wide.tile_m), -(-n // wide.tile_n)
    return (
        f"one {pick.tile_m}×{pick.tile_n} tile per CTA: 64×{wide.tile_n} tiles instead ({rows} × {cols} in "
        f"{wide.cluster_tiles(m, n)} clusters of four along M, ≤ {resident_clusters(4, sms)} at once), one "
        f"m64n{wide.tile_n} wgmma per k-step where {pick.tile_m}×{pick.tile_n} takes two of n{pick.tile_n}"
    )
