"""The communication warps without the GEMM: the T_comm baseline of benchmarks/comm_overlap.py.

One warp per CTA, as many CTAs as the GEMM launches, each shipping exactly the tiles its GEMM CTA would
compute, in the same order (:class:`pipes.tile_order.TileOrder`), with the same device code
(:func:`tile_comm.ship.push_tile`): the same transport moving the same bytes, with nothing to wait for.
It also sets the same per-CTA start/end flags, so a receiver cannot tell it from the fused kernel.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from hopper_gemm.config import GemmConfig

from pipes.cute.comm import TileCopy
from pipes.tile_order import TileOrder

from .args import DeviceArgs
from .config import CommConfig
from .ship import WARP, cta_event, push_tile


class CommAlone:
    """``__call__(c, clusters, stream, comm_args)``: ship every tile of ``c`` (M, N) as the fused kernel would."""

    def __init__(self, gemm: GemmConfig, comm: CommConfig) -> None:
        TileCopy(gemm.tile_m, gemm.tile_n, comm.unroll, comm.pace_ns)  # ValueError for a tile it cannot copy
        self.gemm = gemm
        self.comm = comm
        self.order = TileOrder(gemm.cluster_m, gemm.cluster_n, gemm.raster, gemm.group)

    @cute.jit
    def __call__(self, c: cute.Tensor, clusters: Int32, stream: Any, comm_args: Any) -> None:
        g = self.gemm
        # The GEMM's grid (no cluster launch: nothing is shared between the CTAs here).
        self.kernel(c, comm_args).launch(grid=(g.cluster_m, g.cluster_n, clusters), block=(WARP, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, c: cute.Tensor, packed: Any) -> None:
        g = self.gemm
        cfg = self.comm
        args = DeviceArgs.of(packed)
        cta_m, cta_n, cluster_id = cute.arch.block_idx()
        _, _, clusters = cute.arch.grid_dim()
        tiles_m = (c.shape[0] + g.tile_m - 1) // g.tile_m
        tiles_n = (c.shape[1] + g.tile_n - 1) // g.tile_n
        clusters_m, clusters_n = self.order.cluster_grid(tiles_m, tiles_n)
        cta_event(args, cfg, 0)
        for linear in cutlass.range(cluster_id, clusters_m * clusters_n, clusters, unroll=1):
            tm, tn = self.order.cta_tile(linear, clusters_m, clusters_n, cta_m, cta_n)
            if (tm < tiles_m) & (tn < tiles_n):
                push_tile(c, args, tm, tn, tiles_n, cfg, g.tile_m, g.tile_n)
        cta_event(args, cfg, 1)
