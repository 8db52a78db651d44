"""The load warp of the GEMM kernel: one stream of (tile, k) A/B k-tiles into the ``mainloop`` ring, each
``acquire`` → two TMA copies on the slot's barrier (multicast where a cluster shares the operand) → ``commit``.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

from pipes.cute import read_once_policy
from pipes.cute.comm import ChunkGate

from .kernel_parts import Copies, LoadSources, Shared, rows_first


@cute.jit
def load(
    kernel: cutlass.Constexpr, decl: cutlass.Constexpr, copies: Copies, shared: Shared, grid: Any, extra: Any = None
) -> None:
    """The load warp, in the order the math warpgroups walk (``kernel.order``), then what a mode plans after
    the whole tiles. With a ``gate`` (``extra``: its ``GateArgs``) a tile row waits for its chunks of A."""
    # The kernel object itself must stay out of the run-time loops below (the DSL would try to carry it).
    cfg, order = kernel.config, kernel.order
    atom_a, tma_a, atom_b, tma_b = copies.atom_a, copies.tma_a, copies.atom_b, copies.tma_b
    sa, sb = shared.a, shared.b
    cluster = cute.make_layout((cfg.cluster_m, cfg.cluster_n, 1))
    coord = (grid.cta_m, grid.cta_n, 0)
    # A is shared by the CTAs of a cluster row (same m), B by those of a column (same n).
    a_mask = cute.make_layout_image_mask(cluster, coord, mode=1)
    b_mask = cute.make_layout_image_mask(cluster, coord, mode=0)
    ga = cute.local_tile(tma_a, (cfg.tile_m, cfg.tile_k), (None, None))
    gb = cute.local_tile(tma_b, (cfg.tile_n, cfg.tile_k), (None, None))
    sa_part, ga_part = cpasync.tma_partition(
        atom_a, grid.cta_n, cute.make_layout(cfg.cluster_n), cute.group_modes(sa, 0, 2), cute.group_modes(ga, 0, 2)
    )
    sb_part, gb_part = cpasync.tma_partition(
        atom_b, grid.cta_m, cute.make_layout(cfg.cluster_m), cute.group_modes(sb, 0, 2), cute.group_modes(gb, 0, 2)
    )
    producer = decl.mainloop.producer()
    # Each A tile is loaded by every cluster column, each B tile by every cluster row: read by one, the
    # operand streams through L2 once (B at small M) and goes first, keeping L2 for the other.
    policies = (read_once_policy(grid.clusters_n), read_once_policy(grid.clusters_m))
    sources = LoadSources(atom_a, ga_part, sa_part, a_mask, atom_b, gb_part, sb_part, b_mask, *policies)
    gate_spec = kernel.gate
    gate = ChunkGate.of(gate_spec, extra) if cutlass.const_expr(gate_spec is not None) else None
    rotate_tiles = kernel.problem.a_rows_rotated_by // cfg.tile_m  # GemmKernel checked: whole tiles, no mode
    a_tile_rows = cute.size(ga, mode=[2])
    for linear in cutlass.range(grid.cluster_id, grid.whole_tiles, grid.clusters, unroll=1):
        tm, tn = order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
        if cutlass.const_expr(gate is not None):
            tm = rows_first(gate_spec, cfg.tile_m, tm, extra)
            gate = gate.wait_tile(tm)  # A's rows of this tile row are here and visible to the TMA
        if cutlass.const_expr(rotate_tiles > 0):  # C's tile row tm reads A's tile row tm + rotate_tiles, wrapped
            tm = (tm + rotate_tiles) % a_tile_rows
        producer = load_k_tiles(cfg, producer, sources, tm, tn, 0, grid.k_tiles)
    if cutlass.const_expr(kernel.modes is not None):  # a mode's work after the whole tiles (split k-loops)
        producer = kernel.modes.load_rest(kernel, producer, sources, grid)
    producer.tail()


@cute.jit
def load_k_tiles(
    cfg: cutlass.Constexpr, producer: Any, src: LoadSources, tm: Any, tn: Any, k_begin: Any, k_end: Any
) -> Any:
    """A and B k-tiles ``[k_begin, k_end)`` of tile (tm, tn) into the ring; returns the producer handle."""
    for k in cutlass.range(k_begin, k_end, unroll=1):
        slot = producer.acquire()
        bar = producer.barrier(slot)
        a_dst, b_dst = src.sa[(None, slot)], src.sb[(None, slot)]
        _tma_copy(src.atom_a, src.ga[(None, tm, k)], a_dst, (bar, src.a_policy), src.a_mask, cfg.cluster_n > 1)
        _tma_copy(src.atom_b, src.gb[(None, tn, k)], b_dst, (bar, src.b_policy), src.b_mask, cfg.cluster_m > 1)
        producer.commit()
    return producer


def load_atom(tensor: cute.Tensor, smem: cute.ComposedLayout, tile: tuple[int, int], multicast: int) -> Any:
    """The TMA load atom and tensor of one operand: multicast to ``multicast`` CTAs when more than one."""
    op = cpasync.CopyBulkTensorTileG2SOp() if multicast == 1 else cpasync.CopyBulkTensorTileG2SMulticastOp()
    # One stage's layout: the outer layout sliced and the swizzle put back. Slicing the composed layout
    # itself aborts the DSL (4.8.1) when the tile's rows are not a multiple of the swizzle atom's (168).
    stage = cute.make_composed_layout(smem.inner, 0, cute.slice_(smem.outer, (None, None, 0)))
    return cpasync.make_tiled_tma_atom(op, tensor, stage, tile, num_multicast=multicast)


@cute.jit
def _tma_copy(
    atom: cute.CopyAtom, src: cute.Tensor, dst: cute.Tensor, on: Any, mask: Any, multicast: cutlass.Constexpr
) -> None:
    """One TMA load; ``on``: (the slot's barrier, the L2 policy). Never the DSL's default policy 0, which
    measured 0 … 1.5 % slower than CUTLASS C++'s EVICT_NORMAL."""
    bar, policy = on
    if cutlass.const_expr(multicast):
        cute.copy(atom, src, dst, tma_bar_ptr=bar, mcast_mask=mask, cache_policy=policy)
    else:
        cute.copy(atom, src, dst, tma_bar_ptr=bar, cache_policy=policy)
