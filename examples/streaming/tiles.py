"""Views of the tiles: TMA boxes in global memory, the stage ring in shared memory, each thread's vectors.

Global tensors are row-major ``(M, N)``; TMA sees them as ``(M, N / B, B)`` (``B = plan.box_inner``) so
that a ``rows × chunk`` tile is one box ``(rows, chunk / B, B)``. In shared memory a tile is plain
row-major ``rows × chunk``; consumer thread ``t`` of a row reads the 16-byte vectors ``t, t + T, t + 2T, …``
of it (``T = plan.threads_per_row``), which is the view :func:`thread_view` gives.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32

from .plan import Plan

DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16, "fp32": cutlass.Float32}


def cute_dtype(plan: Plan) -> type:
    return DTYPES[plan.dtype]


def box_tiler(plan: Plan) -> tuple[int, int, int]:
    return (plan.rows, plan.box_groups, plan.box_inner)


def box_layout(plan: Plan, slots: int) -> cute.Layout:
    """``slots`` tiles in shared memory as TMA writes them: ``(rows, chunk/B, B, slot)``, row-major tiles."""
    c, b = plan.chunk, plan.box_inner
    return cute.make_layout((plan.rows, plan.box_groups, b, slots), stride=(c, b, 1, plan.rows * c))


def thread_layout(plan: Plan, slots: int) -> cute.Layout:
    """The same ``slots`` tiles as ``((vec, T, vectors), row, slot)``: element ``[(None, t, j), r, s]`` is
    thread ``t``'s ``j``-th 16-byte vector of row ``r`` in slot ``s``."""
    v, t, c = plan.vec, plan.threads_per_row, plan.chunk
    return cute.make_layout(((v, t, plan.vectors), plan.rows, slots), stride=((1, v, v * t), c, plan.rows * c))


def tma_view(plan: Plan, ptr: cute.Pointer, m: Int32) -> cute.Tensor:
    """A row-major ``(m, N)`` tensor at ``ptr`` as TMA addresses it: ``(m, N/B, B)``."""
    n, b = plan.n, plan.box_inner
    return cute.make_tensor(ptr, cute.make_layout((m, n // b, b), stride=(n, b, 1)))


def global_thread_view(plan: Plan, ptr: cute.Pointer, m: Int32) -> cute.Tensor:
    """``(m, N)`` at ``ptr`` as ``((vec, T, vectors), chunk, row)``, for threads that access global memory
    with the same vectors they read from shared memory (weights; the ``st.global`` store)."""
    v, t = plan.vec, plan.threads_per_row
    layout = cute.make_layout(((v, t, plan.vectors), plan.chunks, m), stride=((1, v, v * t), plan.chunk, plan.n))
    return cute.make_tensor(ptr, layout)


def partition_tiles(plan: Plan, atom: cute.CopyAtom, gmem: cute.Tensor, smem: cute.Tensor) -> tuple[Any, Any]:
    """TMA partitions: ``smem[(None, slot)]`` and ``gmem[(None, row_block, chunk, 0)]``."""
    from cutlass.cute.nvgpu import cpasync

    tiles = cute.local_tile(gmem, box_tiler(plan), (None, None, None))
    return cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(smem, 0, 3), cute.group_modes(tiles, 0, 3)
    )


def thread_coords(plan: Plan, warp: Int32, lane: Int32) -> tuple[Int32, Int32]:
    """(first row of the tile this thread works on, its index among the row's threads)."""
    p = plan.warps_per_row
    if p == 1:
        return warp, lane
    return warp // p, (warp % p) * 32 + lane


def row_of(plan: Plan, first_row: Int32, r: int) -> Int32:
    """The ``r``-th row (of ``plan.rows_per_warp``) a thread works on: warps interleave over rows."""
    return first_row + r * plan.consumer_warps
