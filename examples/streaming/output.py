"""Where the consumer warps' results go, one chunk at a time: the staging ring and a TMA store (the
default), or each thread's 16-byte vectors straight to global memory (``Store.ST_GLOBAL``).

Both kernels (RMSNorm, axpby) produce a chunk the same way: every thread puts its vectors of the chunk
(:func:`put`), then :func:`finish_chunk` hands the chunk on — with TMA: ``publish`` the staging slot
(``fence.proxy.async`` + the epilogue barrier), release the input slot, warp 0 issues the TMA store,
``commit``; without: release the input slot.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import cutlass
import cutlass.cute as cute

from .plan import Store


class Output(NamedTuple):
    """A kernel's output views: the staging ring per thread (``staged``), global memory per thread
    (``direct``), and the TMA store's atom and partitions (``atom``, ``staged_part``, ``global_part``)."""

    staged: Any
    direct: Any
    atom: Any
    staged_part: Any
    global_part: Any
    m: Any  # rows of the output (direct stores past it are skipped)


@cute.jit
def put(plan: cutlass.Constexpr, output: Output, value: Any, out_slot: Any, at: tuple, j: cutlass.Constexpr) -> None:
    """This thread's ``j``-th vector of the chunk at ``at = (blk, k, row, index)`` (row block, chunk,
    row of the tile, thread of the row)."""
    blk, k, row, index = at
    if cutlass.const_expr(plan.config.store is Store.TMA):
        output.staged[(None, index, j), row, out_slot].store(value)
    else:
        grow = blk * plan.rows + row
        col = k * plan.chunk + (index + j * plan.threads_per_row) * plan.vec
        if (grow < output.m) & (col < plan.n):
            output.direct[(None, index, j), k, grow].store(value)


@cute.jit
def finish_chunk(
    plan: cutlass.Constexpr, output: Output, stores: Any, consumer: Any, warp: Any, out_slot: Any, at: tuple
) -> tuple[Any, Any]:
    """Hand chunk ``at = (blk, k)`` on and release its input slot; returns the two pipeline handles (their
    state changed, and the caller's loop carries them)."""
    blk, k = at
    if cutlass.const_expr(plan.config.store is Store.TMA):
        stores.publish()
        consumer.release()
        if warp == 0:
            cute.copy(output.atom, output.staged_part[(None, out_slot)], output.global_part[(None, blk, k, 0)])
        stores.commit()
    else:
        consumer.release()
    return stores, consumer
