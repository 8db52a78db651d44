"""The all-gather's pushes: each rank's row block of A to every peer GPU in chunks, by the copy engines.

Rank ``r`` of ``world`` holds rows ``[r·R, (r+1)·R)`` of the gathered matrix (``R = rows / world``); every
rank's GEMM needs all of them. Each rank owns a buffer holding the whole gathered matrix, its chunk flags
(one ``uint32`` per chunk, :class:`pipes.chunks.ChunkPlan`) and one credit word per sending rank, in torch
symmetric memory (:class:`GatherBuffers`, :class:`pipes.comm.PeerGroup`). Per launch, on rank ``r``::

    launching stream, before the kernel (begin):  own block → own rows of the gathered buffer (unless in
                                                  place); the start event
    the kernel (its launch call): the load warp's ChunkGate waits for each other rank's chunk before its
                                  first TMA load of it (pipes.cute.comm.ChunkGate)
    copy streams, after it (push): queued directly (or one CUDA graph replay, ``graph=True``)
        stream 0, per peer p:           take p's credit for r (wait credits[r] ≥ 1 on p, write 0)
        per chunk c of r, per peer p:   cudaMemcpyAsync(chunk c → the same rows on p)
          (streams in turn)             cuStreamWriteValue32(p's flags[c] = parity_token(epoch)), fenced
    launching stream:                   waits for the copy work before its next work
    granting stream, after the kernel (grant): credits[s] = 1 for every sender s (this launch consumed)

**Why these orders.** The flag write's own memory barrier (the default of ``cuStreamWriteValue32``, a
system-wide fence) puts the chunk's bytes before its flag for every observer, and the load warp acquires
the flag at system scope, then fences for its TMA loads. The copy work is the same for every launch of
one parity: flags alternate the two tokens :func:`~pipes.epoch.parity_token`
(1, 2; never a fresh 0), which is unambiguous only because of the credit: the sender takes a peer's credit
before its first copy of a launch, and the peer gives it back (writes 1) only after its kernel consumed the
launch before — so a flag holds this launch's token or the previous one's, never one two launches old, and
no chunk is overwritten while a GEMM still reads it. A credit given back before the sender took it for that
launch would be lost (the sender writes 0 after its wait); the kernel has waited for every chunk's flag
by its end, and every flag follows its sender's take, so granting after the kernel is safe. Launches must
take consecutive epochs (:meth:`ChunkPusher.begin` refuses others).

The copy streams wait only on credits the peers give after their kernels; the kernel waits only on flags
the peers' copy streams raise: no cycle — as long as the copies need no SM. Queued directly on the streams,
a peer ``cudaMemcpyAsync`` runs on a copy engine. Replayed from a CUDA graph with four or more copy
streams, the copies did not progress while the gated kernel held every SM (2×H100, 2026-11-27: the
chunk waits trapped at 4 streams in the second launch, at 8 in the first, with 16 MiB chunks; 2 and 3
streams, and every count queued directly, ran clean; those graphs were still built lazily, which alone
deadlocked 4 ranks — see :meth:`ChunkPusher.prepare` — so the 4-stream limit may be too strict). The
graph is the default up to :data:`MAX_GRAPH_STREAMS` streams and refused above: its host time per launch
is one call, and queued call by call the pushes of the next launch started late enough to cost the
all-gather GEMM 4–28 % of its time on 2×H100 and up to half its speed on 4×H100 (2026-11-28,
``tp_ag_gemm --bench`` with and without the graph). Queue :meth:`ChunkPusher.push` after the kernel's
launch call (the call loads the kernel's module, and loading a module while a stream waits would wait
forever).

:func:`push_plan` and :func:`queue_push` are plain Python (the order of every queued operation, checked on
the CPU); :class:`ChunkPusher` runs them on CUDA streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..chunks import ChunkPlan
from ..epoch import as_int32, parity_token
from .gather_buffers import GatherBuffers
from .stream_ops import (
    Timeline,
    TimingEvents,
    capture,
    check_consecutive,
    check_cuda,
    copy_streams,
    cuda_event,
    new_streams,
    record,
    take_credit,
)

#: Copy streams a rank's pushes go over by default. One: each rank then sends to one peer at a time at the
#: link's rate (4×H200, 2026-11-28, 96 MiB to three peers in 16 MiB copies: one stream 318 GB/s per GPU,
#: two 278; the all-gather GEMM at 8192×2048×8192 411 µs against 433, at 4096×7168×8192 681 against 716;
#: on 2×H200 one and two streams ran alike).
PUSH_STREAMS = 1

#: The most copy streams a replayed graph of pushes may use (more hung on 2×H100; see the module docstring).
MAX_GRAPH_STREAMS = 3


@dataclass(frozen=True)
class ChunkCopy:
    """One chunk's copy to one peer: ``rows`` rows of ``width_bytes``, at byte offsets from the source's
    start and from the peer's gathered buffer's start."""

    peer: int
    chunk: int
    src_offset: int
    dst_offset: int
    width_bytes: int
    rows: int


def push_plan(plan: ChunkPlan, rank: int, row_bytes: int, src_pitch: int, dst_pitch: int) -> list[ChunkCopy]:
    """Every copy of ``rank``'s chunks to every peer, in :meth:`ChunkPlan.pushes` order. ``row_bytes``:
    bytes of a row's data; ``src_pitch``, ``dst_pitch``: bytes between rows of the source block and of a
    peer's gathered buffer."""
    if row_bytes > min(src_pitch, dst_pitch):
        raise ValueError(f"rows of {row_bytes} bytes do not fit pitches of {src_pitch} / {dst_pitch} bytes")
    first_own = plan.chunks_of(rank)[0]
    copies = []
    for chunk, peer in plan.pushes(rank):
        src = (chunk - first_own) * plan.chunk_rows * src_pitch
        dst = plan.rows_of(chunk)[0] * dst_pitch
        copies.append(ChunkCopy(peer, chunk, src, dst, row_bytes, plan.chunk_rows))
    return copies


class StreamQueue(Protocol):
    """What :func:`queue_push` queues, stream by stream (stream 0 first; the others fork from it)."""

    def take_credit(self, stream: int, address: int) -> None: ...
    def copy(self, stream: int, copy: ChunkCopy) -> None: ...
    def raise_flag(self, stream: int, address: int, value: int) -> None: ...
    def fork(self, streams: int) -> None: ...
    def join(self, streams: int) -> None: ...


def queue_push(
    queue: StreamQueue,
    copies: list[ChunkCopy],
    buffers: GatherBuffers,
    token: int,
    streams: int,
    *,
    credits: bool = True,
    flags: bool = True,
) -> None:
    """One launch's copy work: on stream 0 every peer's credit for this rank (before any copy into it, on
    any stream), fork, then each copy on the streams in turn followed on its stream by its chunk's flag at
    the peer (``token``), join back to stream 0. Without ``credits`` or ``flags``: the same copies on the
    same streams without those (:meth:`ChunkPusher.copy_only`)."""
    taken = []
    for c in copies:
        if credits and c.peer not in taken:
            taken.append(c.peer)
            queue.take_credit(0, buffers.peers[c.peer].credit(buffers.rank))
    queue.fork(streams)
    for i, c in enumerate(copies):
        queue.copy(i % streams, c)
        if flags:
            queue.raise_flag(i % streams, buffers.peers[c.peer].flag(c.chunk), token)
    queue.join(streams)


def check_push(src: Any, plan: ChunkPlan, buffers: GatherBuffers) -> None:
    """``ValueError`` naming what does not fit: the source must be this rank's row block on the GPU that
    holds ``buffers.local``, every gathered buffer ``plan.rows`` rows of the source's width and type."""
    if buffers.world < 2 or plan.world != buffers.world:
        raise ValueError(
            f"the plan gathers {plan.world} ranks but the buffers hold {buffers.world} (this rank and "
            f"{len(buffers.peers)} peer(s)): an all-gather needs at least two, the same on both"
        )
    plan.check_rank(buffers.rank)
    if sorted(buffers.peers) != [r for r in range(plan.world) if r != buffers.rank]:
        raise ValueError(f"rank {buffers.rank}'s peers are {sorted(buffers.peers)}: allowed every other rank")
    device = getattr(src, "device", None)
    if device is None or getattr(src, "dim", lambda: 0)() != 2:
        raise ValueError("the all-gather pushes a 2-D torch tensor: this rank's row block of A")
    if device.type != "cuda":
        kind = "page-locked host memory" if src.is_pinned() else "pageable host memory"
        raise ValueError(
            f"the source block is in {kind}: the copy engines push from this GPU's memory (move it with "
            f".to('cuda:{buffers.local.data.device.index}') first)"
        )
    home = buffers.local.data.device
    if device != home:
        raise ValueError(f"the source block is on {device}, the rank's gathered buffer on {home}: allowed the same GPU")
    rows, columns = src.shape
    if rows != plan.rows_per_rank:
        raise ValueError(
            f"the source block has {rows} rows; rank {buffers.rank} holds rows / world = {plan.rows} / "
            f"{plan.world} = {plan.rows_per_rank}"
        )
    if src.stride(1) != 1:
        raise ValueError(f"the source block's rows must be contiguous (stride {tuple(src.stride())})")
    for where, target in (("this rank's", buffers.local), *((f"rank {p}'s", t) for p, t in buffers.peers.items())):
        data = target.data
        if tuple(data.shape) != (plan.rows, columns) or data.stride(1) != 1:
            raise ValueError(
                f"{where} gathered buffer is {tuple(data.shape)} (strides {tuple(data.stride())}): allowed "
                f"({plan.rows}, {columns}) with contiguous rows, the source block's width"
            )
        if data.dtype != src.dtype:
            raise ValueError(f"{where} gathered buffer holds {data.dtype}, the source {src.dtype}: they must match")


def grant_credits(buffers: GatherBuffers, value: int, stream: Any = None) -> None:
    """On ``stream`` (a raw handle; None: the current stream), after this rank's kernel: every sender's
    credit word in this rank's buffers to ``value`` — 1 for the copy engine's binary credit
    (:meth:`ChunkPusher.grant`), the launch's epoch for SM pushes (their warps wait with
    :meth:`pipes.cute.comm.Credits.wait` until it has reached the launch before theirs). A fenced
    ``cuStreamWriteValue32`` each: ordered after the kernel's reads."""
    import torch
    from cuda.bindings import driver as cu

    if stream is None:
        stream = torch.cuda.current_stream(buffers.local.data.device).cuda_stream
    launching = cu.CUstream(int(stream))
    for sender in buffers.peers:
        word = cu.CUdeviceptr(buffers.local.credit(sender))
        check_cuda(cu.cuStreamWriteValue32(launching, word, value & 0xFFFFFFFF, 0)[0], "cuStreamWriteValue32 credit")


class ChunkPusher:
    """Pushes this rank's row block ``src`` (``plan.rows_per_rank × K``, on this GPU) to every peer's gathered
    buffer in chunks, by the copy engines, raising each chunk's flag there (see the module docstring).

    Per launch: :meth:`begin` (before the kernel), the kernel (its chunk gate waits for
    :meth:`flag_value`), :meth:`push` (after the kernel's launch call), :meth:`grant` (after the kernel).
    ``streams``: copy streams the copies alternate over. ``graph``: replay the launch's copy work from a
    CUDA graph captured once per parity token (one host call per launch); None: a graph up to
    :data:`MAX_GRAPH_STREAMS` streams, else queued call by call (see the module docstring for why).
    ``grant_beside``: write the credits from a stream of their own (:meth:`grant`), not the launching one.
    """

    def __init__(
        self,
        src: Any,
        plan: ChunkPlan,
        buffers: GatherBuffers,
        *,
        streams: int = PUSH_STREAMS,
        graph: bool | None = None,
        grant_beside: bool = True,
    ) -> None:
        if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= 8:
            raise ValueError(f"streams = {streams!r} is invalid: allowed an int in [1, 8]")
        if graph is None:
            graph = streams <= MAX_GRAPH_STREAMS
        if not isinstance(graph, bool):
            raise ValueError(f"graph = {graph!r} is invalid: allowed True, False or None")
        if graph and streams > MAX_GRAPH_STREAMS:
            raise ValueError(
                f"graph = True with streams = {streams} is invalid: allowed at most {MAX_GRAPH_STREAMS} streams from a "
                "graph (with more, the replayed copies did not progress while the gated kernel held every SM and "
                "the chunk waits trapped); pass graph=False to queue them call by call"
            )
        check_push(src, plan, buffers)
        from cuda.bindings import driver as cu

        self.src, self.plan, self.buffers = src, plan, buffers
        element = src.element_size()
        row_bytes = src.shape[1] * element
        dst_pitch = buffers.local.data.stride(0) * element
        self.copies = push_plan(plan, buffers.rank, row_bytes, src.stride(0) * element, dst_pitch)
        self.streams = copy_streams(src.device.index or 0, streams)
        self._cu = cu
        self._start, self._done = cuda_event(), cuda_event()
        self._forks = [cuda_event() for _ in self.streams]
        self.graph = graph
        self._graphs: dict[tuple[int, bool], Any] = {}  # (token, timed) → the instantiated graph (with ``graph``)
        #: Record CUDA events in each launch's copy work (``timeline_us``): when the kernel's launch call was
        #: passed, when the credits were taken, when each copy could begin and when its flag was raised.
        #: Switch it while no launch is in flight (the timed graphs are built at the next :meth:`begin`).
        self.timed = False
        self._timing = TimingEvents.create(len(self.copies))
        self._last_epoch: int | None = None
        #: Write the credits from a stream of their own (see :meth:`grant`); switch it between launches.
        self.grant_beside = grant_beside
        self._granting: Any = None  # its stream, made at the first such grant
        self._kernel_done = cuda_event()
        first_own = plan.chunks_of(buffers.rank)[0] * plan.chunk_rows
        self._own_rows = buffers.local.data[first_own : first_own + plan.rows_per_rank]

    def flag_value(self, epoch: int) -> int:
        """What a chunk flag holds once launch ``epoch``'s chunk landed, as the kernel's ``Int32`` argument
        (the gate waits for it exactly: ``GateSpec(exact=True)``)."""
        return as_int32(parity_token(epoch))

    def gate_args(self, epoch: int) -> Any:
        """The kernel's :class:`pipes.cute.comm.GateArgs` for launch ``epoch``: this rank's chunk flags, its
        rank and :meth:`flag_value`."""
        from .args import gate_args

        return gate_args(self.buffers.local.flags, self.buffers.rank, self.flag_value(epoch))

    # --- what a launch queues ---------------------------------------------------------------------------
    def begin(self, epoch: int) -> None:
        """Before the kernel's launch, on the launching stream: the own block into its rows of the gathered
        buffer (unless ``src`` is those rows), then the start event the copy work waits for (so it pushes
        what the stream's earlier work wrote)."""
        import torch
        from cuda.bindings import runtime as cudart

        check_consecutive(self._last_epoch, epoch, "the chunk flags")
        self._last_epoch = epoch
        if self.graph:
            self.prepare()
        launching = torch.cuda.current_stream(self.src.device).cuda_stream
        self._own_rows_in_place()
        check_cuda(cudart.cudaEventRecord(self._start, launching)[0], "cudaEventRecord")
        if self.timed:
            record(self._timing.start, launching)

    def prepare(self) -> None:
        """Build the graphs a launch may replay (both parity tokens; the timed ones while ``timed``), now.
        :meth:`begin` calls it before the launch's kernel is queued: building a graph may load modules, which
        may wait for the device to be idle, while this GPU's kernel waits for chunks whose peers wait for this
        rank's credit — built lazily at the second launch, 4 ranks deadlocked until the chunk gates trapped
        (4×H100, 2026-11-28). Call it yourself before the first launch when ranks share one CUDA context."""
        if self.graph:
            for token in (parity_token(0), parity_token(1)):
                self._graph(token)

    def push(self, epoch: int) -> None:
        """After the kernel's launch call: the launch's copy work (:func:`queue_push` on the copy streams, or
        one graph replay) after the start event; the launching stream waits for it before its next work
        (the next launch may then rewrite ``src``)."""
        import torch
        from cuda.bindings import runtime as cudart

        if epoch != self._last_epoch:
            raise ValueError(f"push({epoch}) after begin({self._last_epoch}): push the launch you began")
        launching = torch.cuda.current_stream(self.src.device).cuda_stream
        side = self.streams[0].cuda_stream
        check_cuda(cudart.cudaStreamWaitEvent(side, self._start, 0)[0], "cudaStreamWaitEvent")
        if self.timed:  # right after the kernel's launch call: the kernel has ended once the stream passes it
            record(self._timing.kernel_end, launching)
        token = parity_token(epoch)
        if self.graph:
            check_cuda(cudart.cudaGraphLaunch(self._graph(token), side)[0], "cudaGraphLaunch")
        else:
            queue = self._queue()
            queue_push(queue, self.copies, self.buffers, token, len(queue.raw))
        self._join(side, launching)

    def copy_only(self, beside: Callable[[], None] | None = None, *, rewrite_flags: bool = False) -> None:
        """One launch's copies without credits or flags, queued call by call, beside ``beside`` (work it
        queues on the launching stream, e.g. a plain GEMM): the copy engines' share of a launch alone, or
        what it costs a kernel running next to it. Each copy writes what :meth:`push` writes, so the peers'
        rows keep their values; every rank must run it in step, as a benchmark's batches do (a peer's
        gated kernel would otherwise take the bytes without waiting for their flag). ``rewrite_flags``:
        each copy is followed by its flag, written with the value the last launch left there (no gate sees
        a new launch): what the flag writes add."""
        if rewrite_flags and self._last_epoch is None:
            raise ValueError("copy_only(rewrite_flags=True) needs one launch before it (the flags' value)")
        import torch
        from cuda.bindings import runtime as cudart

        launching = torch.cuda.current_stream(self.src.device).cuda_stream
        side = self.streams[0].cuda_stream
        self._own_rows_in_place()
        check_cuda(cudart.cudaEventRecord(self._start, launching)[0], "cudaEventRecord")
        check_cuda(cudart.cudaStreamWaitEvent(side, self._start, 0)[0], "cudaStreamWaitEvent")
        if beside is not None:
            beside()
        queue = _CudaQueue(self._cu, [s.cuda_stream for s in self.streams], self._forks, self)
        token = parity_token(self._last_epoch) if rewrite_flags else 0
        queue_push(queue, self.copies, self.buffers, token, len(queue.raw), credits=False, flags=rewrite_flags)
        self._join(side, launching)

    def _own_rows_in_place(self) -> None:
        """This rank's block into its rows of the gathered buffer, unless ``src`` is those rows."""
        if self._own_rows.data_ptr() != self.src.data_ptr():
            self._own_rows.copy_(self.src)

    def _join(self, side: Any, launching: Any) -> None:
        """The launching stream waits for the copy work queued on ``side`` (before its next work)."""
        from cuda.bindings import runtime as cudart

        check_cuda(cudart.cudaEventRecord(self._done, side)[0], "cudaEventRecord")
        check_cuda(cudart.cudaStreamWaitEvent(launching, self._done, 0)[0], "cudaStreamWaitEvent")

    def timeline_us(self) -> Timeline:
        """The last launch queued while ``timed`` (synchronizes), µs from its start: ``steps`` and ``started``
        are per copy, in :attr:`copies` order."""
        return self._timing.read(credit=True)

    def grant(self) -> None:
        """After the kernel's launch call: every sender's credit back (1), so its next launch may overwrite
        this rank's rows of it. Only after a kernel that waited for every chunk. With ``grant_beside`` (the
        default) the writes go on a stream of their own after an event recorded on the launching stream,
        which then holds no memory operation between this kernel and the next: a fenced write there costs
        the next kernel 1.5–3 µs (H100, ``benchmarks/studies/stream_gaps.py``), and on 2×H200 (2026-11-28,
        ``tp_ag_gemm --bench``) the all-gather GEMM ran 3–10 µs faster per launch at 8192×4096×2048 and 21 µs
        at 8192×8192×4096. The peers' credits arrive a few µs later; that costs nothing while the copies
        land before the walk needs them (it did cost, 5–10 µs, while the gated GEMM walked along M). Without
        it, on the launching stream."""
        if not self.grant_beside:
            grant_credits(self.buffers, 1)
            return
        import torch
        from cuda.bindings import runtime as cudart

        launching = torch.cuda.current_stream(self.src.device).cuda_stream
        if self._granting is None:
            self._granting = new_streams(self.src.device.index or 0, 1)[0]
        granting = self._granting.cuda_stream
        check_cuda(cudart.cudaEventRecord(self._kernel_done, launching)[0], "cudaEventRecord")
        check_cuda(cudart.cudaStreamWaitEvent(granting, self._kernel_done, 0)[0], "cudaStreamWaitEvent")
        grant_credits(self.buffers, 1, granting)

    def _queue(self) -> _CudaQueue:
        timing = self._timing if self.timed else None
        return _CudaQueue(self._cu, [s.cuda_stream for s in self.streams], self._forks, self, timing)

    def _graph(self, token: int) -> Any:
        key = (token, self.timed)
        if key not in self._graphs:
            queue = self._queue()
            side = self.streams[0].cuda_stream
            self._graphs[key] = capture(
                side, lambda: queue_push(queue, self.copies, self.buffers, token, len(queue.raw))
            )
        return self._graphs[key][1]


@dataclass
class _CudaQueue:
    """:class:`StreamQueue` on CUDA streams (``raw``: stream handles; stream 0 is the capturing one)."""

    cu: Any
    raw: list[Any]
    forks: list[Any]
    pusher: ChunkPusher
    timing: TimingEvents | None = None  # with it: the copies' events, counted in queue order
    _copies: int = 0
    _flags: int = 0

    def _stream(self, stream: int) -> Any:
        return self.cu.CUstream(self.raw[stream])

    def take_credit(self, stream: int, address: int) -> None:
        params = take_credit(self.cu, self.cu.CUdeviceptr(address))
        check_cuda(self.cu.cuStreamBatchMemOp(self._stream(stream), len(params), params, 0)[0], "credit")
        if self.timing is not None:  # the last credit's event stands for them all
            record(self.timing.credit_taken, self.raw[stream])

    def copy(self, stream: int, copy: ChunkCopy) -> None:
        from cuda.bindings import runtime as cudart

        if self.timing is not None:
            record(self.timing.started[self._copies], self.raw[stream])
            self._copies += 1

        src = self.pusher.src
        dst = self.pusher.buffers.peers[copy.peer].data
        element = src.element_size()
        src_pitch, dst_pitch = src.stride(0) * element, dst.stride(0) * element
        to, source = dst.data_ptr() + copy.dst_offset, src.data_ptr() + copy.src_offset
        kind = cudart.cudaMemcpyKind.cudaMemcpyDefault  # a peer GPU's memory: unified addressing decides
        if copy.width_bytes == src_pitch == dst_pitch:  # whole rows on both sides: one linear copy
            err = cudart.cudaMemcpyAsync(to, source, copy.width_bytes * copy.rows, kind, self.raw[stream])
        else:
            err = cudart.cudaMemcpy2DAsync(
                to, dst_pitch, source, src_pitch, copy.width_bytes, copy.rows, kind, self.raw[stream]
            )
        check_cuda(err[0], "cudaMemcpyAsync")

    def raise_flag(self, stream: int, address: int, value: int) -> None:
        # flags 0: the write carries a memory barrier, so the chunk's bytes are visible system-wide first.
        word = self.cu.CUdeviceptr(address)
        check_cuda(self.cu.cuStreamWriteValue32(self._stream(stream), word, value, 0)[0], "cuStreamWriteValue32 flag")
        if self.timing is not None:
            record(self.timing.steps[self._flags], self.raw[stream])
            self._flags += 1

    def fork(self, streams: int) -> None:
        from cuda.bindings import runtime as cudart

        for event, stream in zip(self.forks[1:streams], self.raw[1:streams], strict=True):
            check_cuda(cudart.cudaEventRecord(event, self.raw[0])[0], "cudaEventRecord")
            check_cuda(cudart.cudaStreamWaitEvent(stream, event, 0)[0], "cudaStreamWaitEvent")

    def join(self, streams: int) -> None:
        from cuda.bindings import runtime as cudart

        for event, stream in zip(self.forks[1:streams], self.raw[1:streams], strict=True):
            check_cuda(cudart.cudaEventRecord(event, stream)[0], "cudaEventRecord")
            check_cuda(cudart.cudaStreamWaitEvent(self.raw[0], event, 0)[0], "cudaStreamWaitEvent")


__all__ = [
    "ChunkCopy",
    "ChunkPusher",
    "StreamQueue",
    "check_push",
    "grant_credits",
    "push_plan",
    "queue_push",
]
