"""The CUDA stream operations the copy-engine objects queue: copy streams, events, memory barriers,
the binary launch credit, and a graph captured once per launch variant.

Shared by :class:`pipes.comm.CopyEngineShipper` (a kernel's finished steps) and
:class:`pipes.comm.ChunkPusher` (an all-gather's chunks). CUDA (``cuda.bindings``) and torch are
imported when a function runs, never at import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..epoch import next_epoch


@functools.cache
def copy_streams(device: int, count: int) -> tuple[Any, ...]:
    """``count`` non-blocking streams (never implicitly ordered after the legacy default stream), the same
    ones for every caller asking for as many on that device."""
    return new_streams(device, count)


def new_streams(device: int, count: int) -> tuple[Any, ...]:
    """``count`` non-blocking streams of the caller's own."""
    import torch
    from cuda.bindings import runtime as cudart

    out = []
    with torch.cuda.device(device):
        for _ in range(count):
            err, handle = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)
            check_cuda(err, "cudaStreamCreateWithFlags")
            out.append(torch.cuda.ExternalStream(int(handle), device=torch.device("cuda", device)))
    return tuple(out)


def check_cuda(err: Any, what: str) -> None:
    """``RuntimeError`` naming the call unless ``err`` is success."""
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")


def record(event: Any, stream: Any) -> None:
    """Record a timing ``event`` on a raw ``stream``; inside a capture, as a node of the graph
    (``cudaEventRecordExternal``), so each replay records it."""
    from cuda.bindings import runtime as cudart

    status = cudart.cudaStreamIsCapturing(stream)
    check_cuda(status[0], "cudaStreamIsCapturing")
    capturing = status[1] != cudart.cudaStreamCaptureStatus.cudaStreamCaptureStatusNone
    flags = cudart.cudaEventRecordExternal if capturing else cudart.cudaEventRecordDefault
    check_cuda(cudart.cudaEventRecordWithFlags(event, stream, flags)[0], "cudaEventRecordWithFlags")


def cuda_event(timing: bool = False) -> Any:
    """A CUDA event: without timing (ordering only) for fork/join and the launch's start and end."""
    from cuda.bindings import runtime as cudart

    flags = cudart.cudaEventDefault if timing else cudart.cudaEventDisableTiming
    err, event = cudart.cudaEventCreateWithFlags(flags)
    check_cuda(err, "cudaEventCreateWithFlags")
    return event


def sys_barrier(cu: Any) -> list[Any]:
    """A ``cuStreamBatchMemOp`` list of one system-scope memory barrier."""
    p = cu.CUstreamBatchMemOpParams()
    p.memoryBarrier.operation = cu.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_BARRIER
    p.memoryBarrier.flags = int(cu.CUstreamMemoryBarrier_flags.CU_STREAM_MEMORY_BARRIER_TYPE_SYS)
    return [p]


def take_credit(cu: Any, credit: Any) -> list[Any]:
    """Wait for ``*credit ≥ 1``, then write 0: a binary semaphore the receiving GPU gives back per launch."""
    wait, write = cu.CUstreamBatchMemOpParams(), cu.CUstreamBatchMemOpParams()
    wait.waitValue.operation = cu.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WAIT_VALUE_32
    wait.waitValue.address = credit
    wait.waitValue.value = 1
    wait.waitValue.flags = int(cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
    write.writeValue.operation = cu.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
    write.writeValue.address = credit
    write.writeValue.value = 0
    return [wait, write]


def capture(stream: Any, queue: Callable[[], None]) -> Any:
    """``queue()`` captured from raw ``stream`` into a CUDA graph (it may fork to other streams and must
    join them back); returns the instantiated graph for ``cudaGraphLaunch``. The graph is kept alive
    with it."""
    from cuda.bindings import runtime as cudart

    mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
    check_cuda(cudart.cudaStreamBeginCapture(stream, mode)[0], "cudaStreamBeginCapture")
    try:
        queue()
    finally:
        err, graph = cudart.cudaStreamEndCapture(stream)
    check_cuda(err, "cudaStreamEndCapture")
    err, graph_exec = cudart.cudaGraphInstantiate(graph, 0)
    check_cuda(err, "cudaGraphInstantiate")
    return graph, graph_exec


def check_consecutive(last: int | None, epoch: int, what: str) -> None:
    """``ValueError`` unless ``epoch`` follows ``last`` (None: the first launch): flags that alternate two
    parity tokens are unambiguous only for launches of consecutive epochs."""
    if last is not None and epoch != next_epoch(last):
        raise ValueError(
            f"epoch {epoch} after {last}: {what} alternate two tokens by parity, so launches must take "
            f"consecutive epochs (pipes.epoch.next_epoch: {next_epoch(last)})"
        )


__all__ = [
    "capture",
    "check_consecutive",
    "check_cuda",
    "copy_streams",
    "cuda_event",
    "new_streams",
    "record",
    "sys_barrier",
    "take_credit",
]


@dataclass(frozen=True)
class Timeline:
    """One timed launch, µs from its start: the kernel's launch call's place in the stream (``kernel``:
    the kernel has ended once the stream passes it), the launch credit taken (None without one), each
    step's (or chunk copy's) flag raised, in queue order, and when its copy could begin (its tiles counted,
    the credits taken, its stream free)."""

    kernel: float
    credit: float | None
    steps: list[float]
    started: list[float]


@dataclass(frozen=True)
class TimingEvents:
    """The timing events of a copy-engine object, fixed objects: a timed graph records the same ones every replay."""

    start: Any
    kernel_end: Any
    credit_taken: Any
    steps: list[Any]
    started: list[Any]

    @classmethod
    def create(cls, steps: int) -> TimingEvents:
        def events() -> list[Any]:
            return [cuda_event(True) for _ in range(steps)]

        return cls(cuda_event(True), cuda_event(True), cuda_event(True), events(), events())

    def read(self, credit: bool) -> Timeline:
        from cuda.bindings import runtime as cudart

        def since(event: Any) -> float:
            check_cuda(cudart.cudaEventSynchronize(event)[0], "cudaEventSynchronize")
            err, ms = cudart.cudaEventElapsedTime(self.start, event)
            check_cuda(err, "cudaEventElapsedTime")
            return ms * 1000

        taken = since(self.credit_taken) if credit else None
        steps = [since(e) for e in self.steps]
        return Timeline(since(self.kernel_end), taken, steps, [since(e) for e in self.started])
