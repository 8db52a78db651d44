"""The epilogue's store path: accumulators → staging buffer (``stmatrix``) → TMA store, subtile by subtile.
The staging ring (:class:`pipes.cute.TmaStoreStaging`) owns the buffer reuse; this module the partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32
from cutlass.cute.nvgpu import cpasync


class EpilogueStage:
    """Registers → staging buffer (``stmatrix``) → TMA store, one ``epi_tile`` subtile at a time."""

    def __init__(
        self,
        kernel: Any,
        tiled_mma: cute.TiledMma,
        atom_c: cute.CopyAtom,
        tma_c: cute.Tensor,
        sc: cute.Tensor,
        math_tidx: Any,
    ) -> None:
        self.kernel = kernel
        self.atom_c = atom_c
        self.tma_c = tma_c
        self.sc = sc
        cfg = kernel.config
        store_atom = sm90_utils.sm90_get_smem_store_op(kernel.c_layout, elem_ty_d=kernel.out_dtype, elem_ty_acc=Float32)
        # four 8×8 matrices a warp (16 columns) where the subtile is 16 or more columns wide, else two;
        # transposed into a column-major C's staging buffer (M contiguous)
        matrices = 4 if cfg.epi_n % 16 == 0 else 2
        m_major = kernel.c_layout.is_m_major_c()
        stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(m_major, matrices), kernel.out_dtype)
        if matrices == 2 and kernel.out_dtype.width == 16:
            store_atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(m_major, 2), kernel.out_dtype)
        self.r2s = cute.make_tiled_copy_S(store_atom, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma))
        thr_r2s = self.r2s.get_slice(math_tidx)
        self.smem_part = thr_r2s.partition_D(sc)
        self.frag_shape = cute.shape(thr_r2s.partition_S(cute.make_identity_tensor(cfg.epi_tile)))
        # Subtiles of the tile one tiled MMA covers (with wg_split "n": a warpgroup's half).
        self.subtile_grid = (cfg.mma_tile[0] // cfg.epi_tile[0], cfg.mma_tile[1] // cfg.epi_tile[1])
        self.is_storer = cute.arch.make_warp_uniform(cute.arch.warp_idx()) % (4 * cfg.warpgroups_per_tile) == 0


@cute.jit
def store_tile(
    epi: cutlass.Constexpr, acc: cute.Tensor, staging: Any, tm: Any, tn: Any, subtiles: cutlass.Constexpr = None
) -> Any:
    """The epilogue of one tile: each subtile converted, staged and TMA-stored (one commit each); returns the
    staging handle. ``epi_batch`` = b subtiles share one ``acquire(slots=b)`` and one ``publish``.
    ``subtiles``: (first, end) in store order to store only those (a split-K part's share); None: all."""
    kernel = epi.kernel
    batch = kernel.config.epi_batch
    retiled = epi.r2s.retile(acc)
    per_sub = cute.size(epi.frag_shape)
    values = cute.make_rmem_tensor(epi.frag_shape, Float32)
    parts = store_partitions(epi, tm, tn)
    outs = [cute.make_rmem_tensor(epi.frag_shape, kernel.out_dtype) for _ in range(batch)]
    lo, hi = (0, epi.subtile_grid[0] * epi.subtile_grid[1]) if subtiles is None else subtiles
    for first in cutlass.range_constexpr(lo, hi, batch):
        for j in cutlass.range_constexpr(batch):
            for v in cutlass.range_constexpr(per_sub):
                values[v] = retiled[(first + j) * per_sub + v]
            outs[j].store(values.load().to(kernel.out_dtype))
        staging.acquire(slots=batch)
        for j in cutlass.range_constexpr(batch):
            cute.copy(epi.r2s, outs[j], epi.smem_part[(None, None, None, staging.slot(j))])
        staging.publish()
        for j in cutlass.range_constexpr(batch):
            staging = tma_store(epi, staging, parts, first + j)
    return staging


@cute.jit
def store_halves(
    epi: cutlass.Constexpr,
    acc: cute.Tensor,
    staging: Any,
    tm: Any,
    tn: Any,
    math_wg: Any,
    subtiles: cutlass.Constexpr = None,
) -> Any:
    """The epilogue of one tile whose warpgroups split its columns (``wg_split="n"``): subtile by subtile,
    each warpgroup stages its half's subtile in buffer ``math_wg`` of a two-buffer ``acquire``, and the
    storing warp stores both (one commit each). Half h of tile (tm, tn) is ``mma_tile`` (tm, 2·tn + h).
    ``subtiles``: (first, end) of each half's subtiles to store only those (a split-K part's share); None: all."""
    kernel = epi.kernel
    retiled = epi.r2s.retile(acc)
    per_sub = cute.size(epi.frag_shape)
    values = cute.make_rmem_tensor(epi.frag_shape, Float32)
    out = cute.make_rmem_tensor(epi.frag_shape, kernel.out_dtype)
    halves = [store_partitions(epi, tm, 2 * tn + h) for h in range(2)]
    lo, hi = (0, epi.subtile_grid[0] * epi.subtile_grid[1]) if subtiles is None else subtiles
    for sub in cutlass.range_constexpr(lo, hi):
        for v in cutlass.range_constexpr(per_sub):
            values[v] = retiled[sub * per_sub + v]
        out.store(values.load().to(kernel.out_dtype))
        staging.acquire(slots=2)
        cute.copy(epi.r2s, out, epi.smem_part[(None, None, None, staging.slot(math_wg))])
        staging.publish()
        for h in cutlass.range_constexpr(2):
            staging = tma_store(epi, staging, halves[h], sub)
    return staging


def staging_layout(out_dtype: Any, c_layout: Any, subtile: tuple[int, int], buffers: int) -> Any:
    """The staging buffers' shared-memory layout: CUTLASS's (a swizzle atom, or 8-column interleaved blocks)
    where one spans a row-major subtile's width, else plain rows ``subtile`` columns long. An odd multiple
    of 8 wider than 8 (24, 88, 200 columns) would take interleaved 8-column blocks, and its TMA store one
    16-byte row piece per block; as plain rows (16-byte multiples) one box covers the whole subtile."""
    rows, cols = subtile
    if c_layout.is_n_major_c() and cols % 16 and cols > 8:
        return cute.make_layout((rows, cols, buffers), stride=(cols, 1, rows * cols))
    return sm90_utils.make_smem_layout_epi(out_dtype, c_layout, subtile, buffers)


def store_partitions(epi: Any, tm: Any, tn: Any) -> tuple[Any, Any]:
    """(staging buffers, ``mma_tile`` (tm, tn)'s subtiles in C) as the TMA store atom partitions them."""
    cfg = epi.kernel.config
    gc = cute.local_tile(epi.tma_c, cfg.mma_tile, (tm, tn))
    gc_sub = cute.zipped_divide(gc, cfg.epi_tile)
    return cpasync.tma_partition(epi.atom_c, 0, cute.make_layout(1), cute.group_modes(epi.sc, 0, 2), gc_sub)


@cute.jit
def tma_store(epi: cutlass.Constexpr, staging: Any, parts: Any, sub: cutlass.Constexpr) -> Any:
    """The storing warp TMA-stores the buffer at the cursor as subtile ``sub``; every thread commits."""
    sc_part, gc_part = parts
    sub_n = epi.subtile_grid[1]
    if epi.is_storer:
        cute.copy(epi.atom_c, sc_part[(None, staging.index)], gc_part[(None, (sub // sub_n, sub % sub_n))])
    staging.commit()
    return staging


def tile_origin(coords: cute.Tensor, config: Any, tm: Any, tn: Any, half: Any = 0) -> Any:
    """``coords`` (an ``mma_tile``'s) in C for tile (tm, tn): with ``wg_split="n"`` warpgroup ``half``'s
    columns start ``half × mma_tile[1]`` into the tile (the ``mma_tile`` (tm, 2·tn + half) of
    :func:`store_halves`)."""
    return _Offset(coords, tm * config.tile_m, tn * config.tile_n + half * config.mma_tile[1])


@dataclass(frozen=True)
class _Offset:
    """``coords`` shifted by the tile's origin: (row, col) in C of each accumulator value."""

    coords: cute.Tensor
    row0: Any
    col0: Any

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        row, col = self.coords[i]
        return self.row0 + row, self.col0 + col
