"""A short M's swapped 192-row pick in 256-row tiles: a ``gemm_modes.autotable`` step after the tile steps.

Where M is short (at most ``short_side.PADDING_ALONE_MAX`` rows, and shorter than N) the table computes
Cᵀ = B·Aᵀ in cooperative 192-row tiles whose warpgroups split the width, M cut into column tiles
(``short_side.pick``). A cooperative tile of 256 rows (``short_side.PAIRED_ROWS``: each warpgroup 128 of them
and the whole width) covers N in a quarter fewer row tiles, each loading M's operand once for 256 rows
of N instead of 192. ``short_side.pick`` already weighs these tiles against a 192-row pick in a 1×2
cluster, in 1×2 only. This step weighs them in either cluster against any such 192-row pick, whatever
cluster it took, and takes the fastest by ``tile_time`` where ``short_side.MARGIN`` faster:

* in a 1×2 cluster (an even count of column tiles of M, the pair sharing one tile of N's operand);
* in a 2×1 cluster (an odd count of column tiles) only where N's 256-row tiles come in an even count: an
  odd one pads a pair with an idle CTA, and there the estimate misleads.

cuBLAS runs these tiles on such shapes: ``nvjet_sm90_tst_256x104_64x4_2x1_v_bz_coopA`` at 298×18432×7168 (72 row
tiles of N; our swapped cooperative 256×104 2×1 ran 0.966 of torch against the 192×160 1×2 pick's 0.871) and at
301×10456×16272 (41 row tiles: the step leaves it, though there it ran 0.960 against 0.877).

NVIDIA H200 with PDL, 2026-11-30, ours / torch's CUDA graph against the table without the step, in the same
rounds (``benchmarks/gemm.py --sweep --against-table``). Without the 2×1 bound, on 47 shapes where it changes
the pick (14 of 36 drawn from 9,000 draws where a first, wider form did, 30 of 9,000 further draws, three
found by hand), 1.031 of the pick's speed, 31 faster and 8 slower by more than 2 %: in 1×2
all 12 ran 1.8–5.9 % faster (541×8192×28672 1.053); in 2×1 with an even count of N's row tiles 21 ran 1.058
(14 faster, 2 slower: 332×19440×2472 0.965), with an odd count 14 ran 0.987 (6 faster, 6 slower:
342×10848×2872 0.844, 294×19544×7144 0.892, 298×8840×14872 0.894). The bound was chosen on those 47, not on
draws after it: as it stands the step changes 33 of them, 1.050 of the pick's speed, 25 faster, 2 slower.
"""

from __future__ import annotations

from hopper_gemm.config import Schedule

from . import short_side
from .modes import TunedConfig
from .tile_time import tile_time


def replaces(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """The 256-row tile that takes the place of ``config`` on an M×N output (the module's docstring), or None
    where ``config`` is not a short M's swapped cooperative 192-row tile or no such tile is
    ``short_side.MARGIN`` faster by ``tile_time``."""
    swapped_192 = config.swap_ab and config.tile_m == 192 and config.wg_split == "n"
    if not swapped_192 or config.schedule is not Schedule.COOPERATIVE or config.partial_sums:
        return None
    if not m < n or m > short_side.PADDING_ALONE_MAX:
        return None
    tiles = [t for t in short_side.short_side_tiles(m, swap_ab=True, rows_of=(short_side.PAIRED_ROWS,)) if pairs(t, n)]
    best = short_side.fastest(tiles, n, m, sms)
    if best is None or best[1] * short_side.MARGIN >= tile_time(config, n, m, sms):
        return None
    return best[0]


def pairs(tile: TunedConfig, n: int) -> bool:
    """Whether ``tile``'s cluster pads no pair with an idle CTA on N's side: 1×2 (its pair shares a tile of N),
    or 2×1 over an even count of N's row tiles."""
    return tile.cluster_m == 1 or -(-n // tile.tile_m) % tile.cluster_m == 0


def describe(tile: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``tile`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = -(-n // tile.tile_m), -(-m // tile.tile_n)
    return (
        f"N = {n} in {rows} row tiles of {tile.tile_m} (cluster {tile.cluster_m}×{tile.cluster_n}) against "
        f"{-(-n // pick.tile_m)} of {pick.tile_m}, M = {m} in {cols} column tiles of {tile.tile_n}: per SM "
        f"{tile_time(tile, n, m, sms):.0f} against {tile_time(pick, n, m, sms):.0f} (tile_time)"
    )
