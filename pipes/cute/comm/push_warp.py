"""The all-gather's pushes by a spare warp of the gated kernel itself (SM copies), beside its load warp's gate.

With the copy engines (:class:`pipes.comm.ChunkPusher`, the default) the pushes run off the SMs. A warp of
the gated GEMM can do the same job with its own stores (:class:`ChunkSender`): the kernel that waits for
the peers' chunks also sends this rank's, so no second kernel needs an SM the GEMM holds. The pushes are
dealt to the push warps of every CTA (``warps`` of them per CTA; worker ``cta · warps + warp``): work
item ``i · chunks_per_rank + j`` (the ``i``-th peer in push order, this rank's ``j``-th chunk) goes to
worker ``item mod workers`` (:func:`push_items`). Per launch, each push warp::

    every peer p, in push order:      Credits(p's credit word for this rank).wait(epoch)   ld.acquire.sys
    every item (p, chunk) it is dealt: ChunkSender.send → p's gathered A, then p's flag[chunk] = epoch
                                      (fence.acq_rel.sys, bar.warp.sync, st.release.sys)

One warp moves only a few GB/s (its 16-byte loads in flight, each waiting on HBM), so a push needs many
warps at once: pick ``chunk_rows`` so that the items are about as many as the workers
(:func:`sm_chunk_rows`). Measured on 2×H200 at 8192×4096×2048, one push warp per CTA: 128 items of 32
rows ran 14–20 % over the GEMM alone, 64 of 64 rows 33 %, 32 of 128 rows 58 %.

Flags and credits hold epochs (the load warp's gate waits with ``GateSpec(exact=False)``; each rank grants
with ``pipes.comm.grant_credits(buffers, epoch)`` after its kernel). :class:`PushingGateArgs` carries the
gate's three arguments under the same names (``flags``, ``rank``, ``value``), so the load warp's
:class:`ChunkGate` reads it as it reads :class:`GateArgs`, and the push warp's pointers after them.
``pipes.check.gather.chunk_pusher(device=rank, epoch_credits=True)`` models this order
(``catalogue.all_gather.GATHER_GOOD``: ``all_gather_sm``).
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
from .gate import MAX_CHUNKS, GateSpec


def first_push(peer_index: Any, chunks_per_rank: int, worker: Any, workers: Any) -> Any:
    """The first of this rank's chunks (counted from 0 within its block) that push warp ``worker`` of
    ``workers`` pushes to the ``peer_index``-th peer; it pushes every ``workers``-th one after it. Items are
    numbered peer by peer (``peer_index · chunks_per_rank + j``) and dealt round-robin (``item mod
    workers``). Python ints (the host, the tests) and DSL integers (the push warps) alike."""
    return (worker + workers - (peer_index * chunks_per_rank) % workers) % workers


def push_items(plan: ChunkPlan, worker: int, workers: int) -> list[tuple[int, int]]:
    """``(peer index, own chunk j)`` of every push that warp ``worker`` of ``workers`` makes (:func:`first_push`)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1 or not 0 <= worker < workers:
        raise ValueError(
            f"push_items: worker = {worker!r} of workers = {workers!r} is invalid: allowed 0 <= worker < workers"
        )
    per = plan.chunks_per_rank
    return [(i, j) for i in range(plan.world - 1) for j in range(first_push(i, per, worker, workers), per, workers)]


def sm_chunk_rows(plan_rows: int, world: int, workers: int, low: int = 16, high: int = 1024) -> int:
    """Rows per chunk for SM pushes by ``workers`` push warps: the smallest power of two in ``[low, high]``
    that leaves at most one push per warp (``(world − 1) · rows_per_rank / chunk_rows <= workers``) and at
    most :data:`~pipes.cute.comm.gate.MAX_CHUNKS` chunks for the gate (``high`` if none does). Smaller
    chunks cost flags, not bandwidth; ``ValueError`` if it does not divide a rank's rows."""
    rows_per_rank = plan_rows // world
    rows = low
    while rows < high and ((world - 1) * rows_per_rank > workers * rows or plan_rows > MAX_CHUNKS * rows):
        rows *= 2
    if rows_per_rank % rows:
        raise ValueError(
            f"sm_chunk_rows: {rows} rows per chunk (about one push per warp) does not divide a rank's "
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
    """``warps`` warps of every CTA pushing this rank's chunks of ``sender.plan`` to every peer (see the
    module docstring)."""

    sender: ChunkSender
    warps: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.warps, bool) or not isinstance(self.warps, int) or not 1 <= self.warps <= 4:
            raise ValueError(f"ChunkPushWarp.warps = {self.warps!r} is invalid: allowed an int in [1, 4]")

    @property
    def peers(self) -> int:
        return self.sender.plan.world - 1

    def check_feeds(self, gate: GateSpec | None, spare_warps: int = 3) -> None:
        """``ValueError`` unless these warps can feed ``gate``: at most ``spare_warps`` of them (the producer
        warpgroup's warps beside its load warp), a gate to wait on their chunks, the same chunks, and flags
        that hold epochs (``GateSpec(exact=False)``)."""
        if self.warps > spare_warps:
            raise ValueError(
                f"ChunkPushWarp.warps = {self.warps}: the producer warpgroup has {spare_warps} warps beside the "
                "load warp"
            )
        if gate is None:
            raise ValueError(
                "a push warp needs a gate: the kernel pushes its chunks for peers whose gates wait on them"
            )
        if self.sender.plan != gate.plan:
            raise ValueError(
                f"the push warp sends chunks of {self.sender.plan}, the gate waits on {gate.plan}: allowed one plan"
            )
        if gate.exact:
            raise ValueError(
                "SM pushes raise each flag to the launch's epoch: the gate must wait until a flag has reached it "
                "(GateSpec(exact=False)), not for the copy engine's parity token"
            )

    @cute.jit
    def run(self, args: PushingGateArgs, warp: Any = 0) -> None:
        """Push warp ``warp`` (of :attr:`warps`) of this CTA: its share of the launch's pushes
        (:func:`first_push`), every peer's credit first, then its items peer by peer. The whole warp."""
        plan = self.sender.plan
        per = plan.chunks_per_rank
        bx, by, bz = cute.arch.block_idx()
        gx, gy, gz = cute.arch.grid_dim()
        cta = Int32(bx) + Int32(gx) * (Int32(by) + Int32(gy) * Int32(bz))
        worker = cta * self.warps + Int32(warp)
        workers = Int32(gx) * Int32(gy) * Int32(gz) * self.warps
        for i in cutlass.range_constexpr(self.peers):
            Credits(args.peer_credits[i], "sys").wait(0, args.epoch)
        first = args.rank * per
        for i in cutlass.range_constexpr(self.peers):
            flags = ReadyFlags(args.peer_flags[i], "sys", "chunks")
            for j in cutlass.range(first_push(i, per, worker, workers), per, workers, unroll=1):
                self.sender.send(args.src, first + j, args.peer_data[i], flags, args.epoch)


__all__ = ["ChunkPushWarp", "PushingGateArgs", "first_push", "push_items", "sm_chunk_rows"]
