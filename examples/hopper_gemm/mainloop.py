"""The math warpgroups' k-loop over one tile: wait for a stage, issue its wgmmas, release the stage before.

Shared by both schedules (ping-pong hands the tensor cores on between the last issue and the last wait,
which is why the caller finishes the loop).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.nvgpu import warpgroup


def peeks_after(k: Any, k_tiles: Any) -> Any:
    """Whether the k-loop peeks (``try_wait``) at k-tile k + 1's slot after issuing k-tile k: only when the
    tile has that k-tile. ``try_wait`` on a phase that is not coming blocks until the hardware's time limit
    (~4 µs on an H100), which the CTA's last tile would pay at every launch. Python ints (the CPU checker's
    model of this loop) and DSL integers alike."""
    return k + 1 < k_tiles


@cute.jit
def mainloop(
    tiled_mma: cute.TiledMma, regs: Any, consumer: Any, k_tiles: Int32, staging: Any, under: Any = None
) -> tuple[Any, Any]:
    """One tile's k-loop into ``regs.acc``; returns the ``(consumer, staging)`` handles. Keeps one k-tile of
    wgmmas in flight: the slot of k-tile k-1 is released once the wgmmas of k-tile k are issued and those
    of k-1 are complete. The caller waits for the last group and releases the last slot (so ping-pong can
    hand the tensor cores on first).

    ``under``: work a mode hides under the k-loop (``gemm_modes``' deferred epilogue), a ``(work, tm, tn)``
    whose ``work.store_chunk(j, staging, tm, tn)`` runs right after the wgmmas of k-tile j are issued, for
    j < ``work.chunks`` (the rest after the loop when K has fewer k-tiles). None: ``staging`` comes back
    untouched."""
    acc, a_frag, b_frag = regs.acc, regs.a_frag, regs.b_frag
    token = consumer.try_wait()
    slot = consumer.wait(token)
    # The first k-tile of a tile overwrites the accumulators: no zero fill needed.
    _issue_k_tile(tiled_mma, acc, a_frag, b_frag, slot, True)
    if cutlass.const_expr(under is not None):
        work, held_tm, held_tn = under
        staging = _store_under(work, 0, staging, held_tm, held_tn)
    if peeks_after(0, k_tiles):
        token = consumer.try_wait()
    for k in cutlass.range(1, k_tiles, unroll=1):
        slot = consumer.wait(token)
        _issue_k_tile(tiled_mma, acc, a_frag, b_frag, slot, False)
        if cutlass.const_expr(under is not None):
            for chunk in cutlass.range_constexpr(1, work.chunks):
                if k == chunk:
                    staging = _store_under(work, chunk, staging, held_tm, held_tn)
        warpgroup.wait_group(1)
        consumer.release()
        if peeks_after(k, k_tiles):
            token = consumer.try_wait()
    if cutlass.const_expr(under is not None):
        for chunk in cutlass.range_constexpr(1, work.chunks):
            if k_tiles <= chunk:
                staging = _store_under(work, chunk, staging, held_tm, held_tn)
    return consumer, staging


@cute.jit
def _issue_k_tile(
    tiled_mma: cute.TiledMma,
    acc: cute.Tensor,
    a_frag: cute.Tensor,
    b_frag: cute.Tensor,
    slot: Any,
    overwrite: cutlass.Constexpr,
) -> None:
    """The wgmmas of one k-tile (stage ``slot``) as one wgmma group."""
    warpgroup.fence()
    # A fresh atom per k-tile: its ACCUMULATE field is set inside this region only.
    atom = cute.make_mma_atom(tiled_mma.op)
    atom.set(warpgroup.Field.ACCUMULATE, not overwrite)
    for kb in cutlass.range_constexpr(cute.size(a_frag, mode=[2])):
        cute.gemm(atom, acc, a_frag[None, None, kb, slot], b_frag[None, None, kb, slot], acc)
        atom.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()


def _store_under(work: Any, chunk: int, staging: Any, tm: Any, tn: Any) -> Any:
    """``work.store_chunk(...)`` as a call that takes ``work`` (a method call inside a run-time loop would
    make the DSL carry the trace-time object through the loop)."""
    return work.store_chunk(chunk, staging, tm, tn)
