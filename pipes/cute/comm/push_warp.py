"""The all-gather's pushes by a spare warp of the gated kernel itself (SM copies), beside its load warp's gate.

With the copy engines (:class:`pipes.comm.ChunkPusher`, the default) the pushes run off the SMs. A warp of
the gated GEMM can do the same job with its own stores (:class:`ChunkSender`): the kernel that waits for
the peers' chunks also sends this rank's, so no second kernel needs an SM the GEMM holds. Per launch, the
whole warp::

    every peer p, in push order:   Credits(p's credit word for this rank).wait(epoch)   ld.acquire.sys
    every peer p, every own chunk: ChunkSender.send → p's gathered A, then p's flag[chunk] = epoch
                                   (fence.acq_rel.sys, bar.warp.sync, st.release.sys)

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

from ..state import TraceStatic
from .chunk_sender import ChunkSender
from .credits import Credits
from .flags import ReadyFlags


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
        """The launch's pushes: every peer's credit first, then the chunks peer by peer. The whole warp."""
        plan = self.sender.plan
        for i in cutlass.range_constexpr(self.peers):
            Credits(args.peer_credits[i], "sys").wait(0, args.epoch)
        first = args.rank * plan.chunks_per_rank
        for i in cutlass.range_constexpr(self.peers):
            flags = ReadyFlags(args.peer_flags[i], "sys", "chunks")
            for chunk in cutlass.range(first, first + plan.chunks_per_rank, unroll=1):
                self.sender.send(args.src, chunk, args.peer_data[i], flags, args.epoch)


__all__ = ["ChunkPushWarp", "PushingGateArgs"]
