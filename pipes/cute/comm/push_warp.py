"""The all-gather's pushes by a spare warp of the gated kernel itself (SM copies), beside its load warp's gate.

With the copy engines (:class:`pipes.comm.ChunkPusher`, the default) the pushes run off the SMs. A warp of
the gated GEMM can do the same job with its own stores (:class:`ChunkSender`): the kernel that waits for
the peers' chunks also sends this rank's, so no second kernel needs an SM the GEMM holds. The pushes are
dealt to every CTA's push warp: work item ``i · chunks_per_rank + j`` (the ``i``-th peer in push order,
this rank's ``j``-th chunk) goes to CTA ``item mod ctas`` (:func:`push_items`). Per launch, each CTA's
whole warp::

    every peer p, in push order:      Credits(p's credit word for this rank).wait(epoch)   ld.acquire.sys
    every item (p, chunk) of this CTA: ChunkSender.send → p's gathered A, then p's flag[chunk] = epoch
                                      (fence.acq_rel.sys, bar.warp.sync, st.release.sys)

One warp moves a few GB/s (its 16-byte loads in flight, each waiting on HBM), so a push needs many warps
at once: pick ``chunk_rows`` so that the items are about as many as the CTAs (:func:`sm_chunk_rows`).

Flags and credits hold epochs (the load warp's gate waits with ``GateSpec(exact=False)``; each rank grants
with ``pipes.comm.grant_credits(buffers, epoch)`` after its kernel). :class:`PushingGateArgs` carries the
gate's three arguments under the same names (``flags``, ``rank``, ``value``), so the load warp's
:class:`ChunkGate` reads it as it reads :class:`GateArgs`, and the push warp's pointers after them.
``pipes.check.gather.chunk_pusher(device=rank, epoch_credits=True)`` models this order
(``catalogue.comm.GATHER_GOOD``: ``all_gather_sm``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import cutlass
import cutlass.cute as cute
from cutlass import Int32

from ...chunks import ChunkPlan
from ..state import TraceStatic
from .chunk_sender import ChunkSender
from .credits import Credits
from .flags import ReadyFlags


def first_push(peer_index: Any, chunks_per_rank: int, cta: Any, ctas: Any) -> Any:
    """The first of this rank's chunks (counted from 0 within its block) that CTA ``cta`` of ``ctas`` pushes
    to the ``peer_index``-th peer; it pushes every ``ctas``-th one after it. Items are numbered peer by peer
    (``peer_index · chunks_per_rank + j``) and dealt round-robin (``item mod ctas``). Python ints (the host,
    the tests) and DSL integers (the push warp) alike."""
    return (cta + ctas - (peer_index * chunks_per_rank) % ctas) % ctas


def push_items(plan: ChunkPlan, cta: int, ctas: int) -> list[tuple[int, int]]:
    """``(peer index, own chunk j)`` of every push CTA ``cta`` of ``ctas`` makes (:func:`first_push`)."""
    if isinstance(ctas, bool) or not isinstance(ctas, int) or ctas < 1 or not 0 <= cta < ctas:
        raise ValueError(f"push_items: cta = {cta!r} of ctas = {ctas!r} is invalid: allowed 0 <= cta < ctas")
    per = plan.chunks_per_rank
    return [(i, j) for i in range(plan.world - 1) for j in range(first_push(i, per, cta, ctas), per, ctas)]


def sm_chunk_rows(plan_rows: int, world: int, ctas: int, low: int = 32, high: int = 1024) -> int:
    """Rows per chunk for SM pushes by ``ctas`` CTAs: the smallest power of two in ``[low, high]`` that leaves
    at most one push per CTA (``(world − 1) · rows_per_rank / chunk_rows <= ctas``; ``high`` if none does).
    Smaller chunks cost flags, not bandwidth; ``ValueError`` if it does not divide a rank's rows."""
    rows_per_rank = plan_rows // world
    rows = low
    while rows < high and (world - 1) * rows_per_rank > ctas * rows:
        rows *= 2
    if rows_per_rank % rows:
        raise ValueError(
            f"sm_chunk_rows: {rows} rows per chunk (about one push per CTA) does not divide a rank's "
            f"{rows_per_rank} rows ({plan_rows} / {world}): choose chunk_rows yourself"
        )
    return rows


class PushingGateArgs(NamedTuple):
    """The gate's arguments (``flags``: this rank's chunk flags, ``rank``, ``value``: the launch's epoch) and
    the push warp's: ``src`` (this rank's block of A, ``rows_per_rank × K``), and per peer in push order
    (:meth:`pipes.chunks.ChunkPlan.push_peers`) its gathered A (``peer_data``), its chunk flags
    (``peer_flags``) and its credit word for this rank (``peer_credits``); ``epoch`` (``Int32``)."""

    flags: Any
    rank: Any
    value: Any
    src: Any
    peer_data: tuple[Any, ...]
    peer_flags: tuple[Any, ...]
    peer_credits: tuple[Any, ...]
    epoch: Any


@dataclass(frozen=True)
class ChunkPushWarp(TraceStatic):
    """One warp pushing this rank's chunks of ``sender.plan`` to every peer (see the module docstring)."""

    sender: ChunkSender

    @property
    def peers(self) -> int:
        return self.sender.plan.world - 1

    @cute.jit
    def run(self, args: PushingGateArgs) -> None:
        """This CTA's share of the launch's pushes (:func:`first_push`): every peer's credit first, then its
        items peer by peer. The whole warp."""
        plan = self.sender.plan
        per = plan.chunks_per_rank
        bx, by, bz = cute.arch.block_idx()
        gx, gy, gz = cute.arch.grid_dim()
        cta = Int32(bx) + Int32(gx) * (Int32(by) + Int32(gy) * Int32(bz))
        ctas = Int32(gx) * Int32(gy) * Int32(gz)
        for i in cutlass.range_constexpr(self.peers):
            Credits(args.peer_credits[i], "sys").wait(0, args.epoch)
        first = args.rank * per
        for i in cutlass.range_constexpr(self.peers):
            flags = ReadyFlags(args.peer_flags[i], "sys", "chunks")
            for j in cutlass.range(first_push(i, per, cta, ctas), per, ctas, unroll=1):
                self.sender.send(args.src, first + j, args.peer_data[i], flags, args.epoch)


__all__ = ["ChunkPushWarp", "PushingGateArgs", "first_push", "push_items", "sm_chunk_rows"]
