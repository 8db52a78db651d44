"""Ping-pong 192-row tiles: a narrow cooperative 192-row pick run ping-pong; ``gemm_modes.autotable``'s step after
the others, before clusters of eight and the subtiles.

The short-side rules cut a short side of C (N, or M computed as Cᵀ = B·Aᵀ) into column tiles under 192 rows of the
long side, cooperative with the warpgroups along the width: each warpgroup 192 rows × half the width, so the width
comes in 16-column steps. Where the width is at most ``short_side.PINGPONG_192_WIDEST`` (two or more column tiles),
each warpgroup can hold a whole 192×width tile instead (three m64 wgmmas per k-step, 1.5 × width fp32 accumulators a
thread: 192 at 128 columns) and the two take turns, ping-pong, one's epilogue under the other's mainloop. The width
then comes in 8-column steps: 144 rows of M in two column tiles of 72 in place of 80. cuBLAS runs such tiles (torch
2.11: ``nvjet`` 192×104 and 192×112 in 1×2, not cooperative, at 406×18432×7168 and 444×18432×7168).

=============  ======================================  ===========================================================
role           cooperative 192×W (the pick)            ping-pong 192×W′ (this step)
=============  ======================================  ===========================================================
load warp      one 192×64 + W×64 stage per k-step      the same, each stage to one warpgroup's tile in turn
math           both warpgroups, 192 × W/2 each         one warpgroup per tile, 192 × W′; the other's epilogue under it
W              a multiple of 16                        ⌈short side / column tiles⌉ in 8-column steps
cluster        1×2 (or 2×1, 1×1)                       the same; 1×2 as 4×2 where one wave fits (``clusters_of_eight``)
=============  ======================================  ===========================================================

NVIDIA H200 with PDL, 2026-11-30, ours / torch's CUDA graph against the table without the step, in the same rounds
(``benchmarks/gemm.py --sweep --against-table``), 32 shapes drawn at random from 9,000 draws where each form changes
the pick: a short N (row-major C, widths up to 128) 0.960 → 1.034, 28 faster by 2–23 %, none slower
(8800×144×2144 0.778 → 0.955, 6120×336×2832 1.021 → 1.219); a short M on Cᵀ at widths up to 96 0.927 → 0.981,
27 faster, none slower by more than 1.3 % (311×5736×3168 0.826 → 0.958). A short M's picks 104–128 wide are
``short_side.PINGPONG_192_WIDTHS``' tiles already. Clusters of four and splits were not measured and keep their
schedule.

A ping-pong 192-row pair then goes in clusters of eight where those fit one wave (``gemm_modes.clusters_of_eight``).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .modes import TunedConfig
from .short_side import PINGPONG_192_WIDEST, pingpong_192_width


def replaces(config: TunedConfig, m: int, n: int) -> TunedConfig | None:
    """The ping-pong 192-row tile that takes the place of ``config`` on an M×N output, or None where ``config``
    is not a cooperative 192-row tile with its warpgroups along a width of at most
    ``short_side.PINGPONG_192_WIDEST``, in two or more column tiles, a cluster of one or two and no split."""
    if config.tile_m != 192 or config.wg_split != "n" or config.schedule is not Schedule.COOPERATIVE:
        return None
    if config.tile_n > PINGPONG_192_WIDEST or config.cluster_size > 2 or config.partial_sums:
        return None
    short_side = m if config.swap_ab else n
    column_tiles = -(-short_side // config.tile_n)
    if column_tiles < 2:
        return None
    tile = GemmConfig(
        192,
        pingpong_192_width(short_side, column_tiles),
        config.cluster_m,
        config.cluster_n,
        Schedule.PINGPONG,
        wg_split="m",
    )
    return TunedConfig(tile, swap_ab=config.swap_ab)


def describe(tile: TunedConfig, pick: TunedConfig, m: int, n: int) -> str:
    """Why ``tile`` took ``pick``'s place, in one clause (``--explain``)."""
    side, extent = ("M", m) if tile.swap_ab else ("N", n)
    return (
        f"run ping-pong, each warpgroup a whole 192×{tile.tile_n} tile ({side} = {extent} in "
        f"{-(-extent // tile.tile_n)} of them), not half of a cooperative 192×{pick.tile_n}"
    )
