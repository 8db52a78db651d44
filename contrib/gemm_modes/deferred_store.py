"""The deferred epilogue (cooperative, ``TunedConfig(deferred_chunks=n)``): a tile's outputs are stored
while the *next* tile's first k-tiles run on the tensor cores, each math warp on its own.

The staged epilogue (:mod:`hopper_gemm.epilogue_store`) keeps both math warpgroups off the tensor
cores while they convert, ``stmatrix`` into the staging ring, meet at a 256-thread named barrier and
wait for one warp's TMA stores: 3–4 % of a cooperative 4096³ GEMM. Here the math warpgroups only
convert the finished accumulators to the output dtype (:attr:`DeferredStore.held`, ``acc_registers / 2``
registers of packed pairs) and start the next tile. After issuing the wgmmas of each of its first
``n`` k-tiles, every warp stores one ``n``-th of its held subtiles: ``stmatrix`` into its own 16-row
piece of a staging buffer, then its own lane 0 TMA-stores that piece (a 16 × ``epi_n`` box). The
staging ring is per warp (:class:`pipes.cute.WarpSync`: the warp's lanes sync with each other only),
so no warp waits for another and the wgmmas in flight keep the tensor cores busy meanwhile.

The staging memory is the staged epilogue's: buffer ``s`` of (rows, ``epi_n``) is, row for row, the
pieces ``8 s … 8 s + 7`` of (16, ``epi_n``) (the same swizzle; a CPU test checks the two layouts
agree), so the ``stmatrix`` partition is unchanged and only the TMA store sees 16-row boxes.

Plain ``st.global`` from the accumulator registers (4-byte pairs) was measured first and ran 8–12 %
slower than the staged epilogue, in 1 chunk or 4 alike: one such warp store touches 8 rows, so a
256×128 tile takes 4096 L1 wavefronts, which (our reading, not profiled) hold up the math warps'
own instruction stream more than the whole staged epilogue costs.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.nvgpu import cpasync

#: Rows of one warp's piece of an output subtile (a wgmma accumulator fragment's rows per warp).
WARP_ROWS = 16


class DeferredStore:
    """One math thread's held outputs and its warp's store path (a trace-time object; ``held`` is registers).

    ``epi``: the :class:`~hopper_gemm.epilogue_store.EpilogueStage` (its ``stmatrix`` partition and
    subtile grid); ``pieces``: the staging memory as (16, ``epi_n``, 8 × buffers) pieces;
    ``warp``: this warp's index among the tile's math warps (its 16-row piece of every subtile).
    """

    def __init__(self, kernel: Any, epi: Any, acc_shape: Any, pieces: cute.Tensor, warp: Any) -> None:
        cfg = kernel.modes.config
        self.epi = epi
        self.chunks = cfg.deferred_chunks
        self.tile_shape = (cfg.tile_m, cfg.tile_n)
        self.tma_c = epi.tma_c
        self.atom_c = epi.atom_c
        self.held = cute.make_rmem_tensor(acc_shape, kernel.out_dtype)
        self.subtiles = epi.r2s.retile(self.held)
        self.per_sub = cute.size(epi.frag_shape)
        self.subtile_count = epi.subtile_grid[0] * epi.subtile_grid[1]
        self.per_chunk = self.subtile_count // self.chunks
        self.pieces = pieces
        self.warps = 4 * cfg.warpgroups_per_tile
        self.warp = warp
        self.piece_rows = cfg.epi_tile[0] // WARP_ROWS  # 16-row pieces per subtile
        self.is_storer = cute.arch.lane_idx() == 0
        self.tiles_m = Int32((self.tma_c.shape[0] + cfg.tile_m - 1) // cfg.tile_m)

    def nowhere(self) -> tuple[Int32, Int32]:
        """Tile coordinates past M: what a CTA holds before its first tile (nothing is stored for it)."""
        return self.tiles_m, Int32(0)

    def store_chunk(self, chunk: int, staging: Any, tm: Any, tn: Any) -> Any:
        """:func:`store_chunk` of this held tile: the work ``hopper_gemm.mainloop`` runs under its k-tiles."""
        return store_chunk(self, chunk, staging, tm, tn)


@cute.jit
def hold(deferred: cutlass.Constexpr, acc: cute.Tensor) -> None:
    """Convert the finished accumulators into the held registers (the next tile may then overwrite ``acc``)."""
    deferred.held.store(acc.load().to(deferred.held.element_type))


@cute.jit
def store_chunk(deferred: cutlass.Constexpr, chunk: cutlass.Constexpr, staging: Any, tm: Any, tn: Any) -> Any:
    """This warp's pieces of the held subtiles of chunk ``chunk``, as part of tile (tm, tn); returns the
    staging handle (one commit per subtile)."""
    epi = deferred.epi
    gc = cute.local_tile(deferred.tma_c, deferred.tile_shape, (tm, tn))
    gc_pieces = cute.zipped_divide(gc, (WARP_ROWS, epi.kernel.config.epi_n))
    sc_part, gc_part = cpasync.tma_partition(
        deferred.atom_c, 0, cute.make_layout(1), cute.group_modes(deferred.pieces, 0, 2), gc_pieces
    )
    out = cute.make_rmem_tensor(epi.frag_shape, epi.kernel.out_dtype)
    sub_n = epi.subtile_grid[1]
    real = tm < deferred.tiles_m
    for sub in cutlass.range_constexpr(chunk * deferred.per_chunk, (chunk + 1) * deferred.per_chunk):
        for v in cutlass.range_constexpr(deferred.per_sub):
            out[v] = deferred.subtiles[sub * deferred.per_sub + v]
        slot = staging.acquire()
        cute.copy(epi.r2s, out, epi.smem_part[(None, None, None, slot)])
        staging.publish()
        if deferred.is_storer:  # noqa: SIM102 - a trace-time-safe nesting of two run-time tests
            if real:
                piece = (sub // sub_n) * deferred.piece_rows + deferred.warp
                buffer = slot * deferred.warps + deferred.warp
                cute.copy(deferred.atom_c, sc_part[(None, buffer)], gc_part[(None, (piece, sub % sub_n))])
        staging.commit()
    return staging


@cute.jit
def flush(deferred: cutlass.Constexpr, staging: Any, tm: Any, tn: Any) -> Any:
    """Store every chunk of the held tile (after the last tile, or where a tile's epilogue is not deferred)."""
    for chunk in cutlass.range_constexpr(deferred.chunks):
        staging = store_chunk(deferred, chunk, staging, tm, tn)
    return staging
