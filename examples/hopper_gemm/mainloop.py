"""The math warpgroups' k-loop over one tile: wait for a stage, issue its wgmmas, release the stage before.
Both schedules share it (ping-pong hands the tensor cores on before the last wait: the caller ends the loop).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.nvgpu import warpgroup


def peeks_after(k: Any, k_tiles: Any) -> Any:
    """Whether the k-loop peeks (``try_wait``) at k-tile k + 1's slot after issuing k-tile k: only if the tile
    has one. ``try_wait`` on a phase that is not coming blocks until the hardware's time limit (~4 µs on an
    H100), at the CTA's last tile. Python ints (the CPU checker's model) and DSL integers alike."""
    return k + 1 < k_tiles


@cute.jit
def mainloop(
    tiled_mma: cute.TiledMma, regs: Any, consumer: Any, k_tiles: Int32, staging: Any, under: Any = None
) -> tuple[Any, Any]:
    """One tile's k-loop into ``regs.acc``; returns the ``(consumer, staging)`` handles. One k-tile of wgmmas
    stays in flight: k-tile k-1's slot is released once k-tile k is issued and k-1 is complete. The caller
    waits for the last group and releases the last slot.

    ``under``: a mode's work hidden under the loop (the deferred epilogue), ``(work, tm, tn)``:
    ``work.store_chunk(j, staging, tm, tn)`` runs after k-tile j's wgmmas are issued, for j < ``work.chunks``
    (the rest after the loop). None: ``staging`` comes back untouched."""
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
    """``work.store_chunk(...)`` as a plain call (a method call in a run-time loop would make the DSL carry
    ``work`` through it)."""
    return work.store_chunk(chunk, staging, tm, tn)
