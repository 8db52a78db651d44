"""Engine ``copy``: the GPU's copy engines ship each finished step of tiles to pinned host memory.

The communication warp moves no bytes: for every finished tile it adds 1 to its step's counter in device
memory (``red.release.sys``, :func:`tile_comm.ship.count_tile`). A *step* is the rectangle of tiles the
GEMM's walk computes together (:meth:`hopper_gemm.schedule.TileOrder.step`): one row of a raster band,
so its rows of C are one 2-D block (``tile_m`` rows of up to ``group × cluster_n × tile_n`` columns). On
the host side this module queues, per step and in walk order, on ``copy_streams`` streams in turn::

    cuStreamWaitValue32(counter[step] ≥ launches × tiles of the step)   # the step is complete in C
    [cuStreamBatchMemOp: wait credits[tile] ≥ epoch − 1 for its tiles]   # only with credits
    cudaMemcpy2DAsync(C's block → the same block of the pinned receive buffer)
    cuStreamWriteValue32: flags[step] = epoch                             # with a memory barrier

The copies run on DMA engines, so the SMs never stall on PCIe writes and the GEMM's mainloop keeps its
speed (the warp-pushed ``sm`` engine slows it by up to 70 %). The host reads a tile after seeing its flag,
as with the ``sm`` engine (stream order puts the flag write after the copy's completion); one flag
covers a step's tiles (``Receiver.flag_index``): each write a stream queues carries a system-wide memory
barrier of about a microsecond, so a flag per tile would add ~16 µs per step on the H100.

Counters only grow: after the n-th counting launch a step's counter is ``n × tiles`` (uint32, compared
modulo 2³² by the wait), so launches need no reset. The copy streams wait on an event recorded *before*
the kernel, and the launching stream waits for every copy before its next work: the next launch cannot
overwrite C while a copy still reads it, and whatever follows on the stream sees the data at the host.

Deadlock-freedom: the streams wait only on counters the running kernel advances; the kernel waits on
nothing the streams do. Queue the waits after the kernel's launch call: the call loads the kernel's module,
and loading a module while a stream waits on a counter nobody advances would wait forever.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from hopper_gemm.schedule import TileOrder

#: Operations per ``cuStreamBatchMemOp`` call (the driver's limit is 256).
BATCH = 128


@dataclass(frozen=True)
class Step:
    """One step's copy: a 2-D block of C (byte offsets from C's and the receive buffer's starts)."""

    index: int
    tiles: tuple[int, ...]  # tile indices (tm·tiles_n + tn) inside C
    src_offset: int
    dst_offset: int
    width_bytes: int
    rows: int


def step_of_tiles(order: TileOrder, tiles_m: int, tiles_n: int) -> np.ndarray:
    """Per tile (``tm·tiles_n + tn``), the step that computes it: the flag word that covers it."""
    clusters_m, clusters_n = order.cluster_grid(tiles_m, tiles_n)
    tm, tn = np.divmod(np.arange(tiles_m * tiles_n), tiles_n)
    return np.asarray(order.step(tm, tn, clusters_m, clusters_n), dtype=np.int64)


def plan_steps(order: TileOrder, m: int, n: int, tile: tuple[int, int], elem_bytes: int, ldc: int) -> list[Step]:
    """Every step of an ``m × n`` output in walk order. ``ldc``: C's row stride in elements; the receive
    buffer's rows are whole tiles wide (``tiles_n × tile_n`` elements)."""
    tile_m, tile_n = tile
    tiles_m, tiles_n = -(-m // tile_m), -(-n // tile_n)
    clusters_m, clusters_n = order.cluster_grid(tiles_m, tiles_n)
    dst_ld = tiles_n * tile_n
    steps = []
    for index in range(order.steps(clusters_m, clusters_n)):
        rows, cols = order.step_tiles(index, tiles_m, tiles_n)
        row0, col0 = rows[0] * tile_m, cols[0] * tile_n
        steps.append(
            Step(
                index,
                tuple(tm * tiles_n + tn for tm in rows for tn in cols),
                (row0 * ldc + col0) * elem_bytes,
                (row0 * dst_ld + col0) * elem_bytes,
                (min(cols[-1] * tile_n + tile_n, n) - col0) * elem_bytes,
                min(rows[-1] * tile_m + tile_m, m) - row0,
            )
        )
    return steps


@functools.cache
def _streams(device: int, count: int) -> tuple[Any, ...]:
    """``count`` non-blocking streams (never implicitly ordered after the legacy default stream)."""
    import torch
    from cuda.bindings import runtime as cudart

    out = []
    with torch.cuda.device(device):
        for _ in range(count):
            err, handle = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)
            _check(err, "cudaStreamCreateWithFlags")
            out.append(torch.cuda.ExternalStream(int(handle), device=torch.device("cuda", device)))
    return tuple(out)


def _check(err: Any, what: str) -> None:
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")


class CopyEngineShipper:
    """Queues the copy engine's work for one fused launcher: C (device) → ``receiver`` (``rows`` layout)."""

    def __init__(
        self,
        receiver: Any,
        c: Any,
        order: TileOrder,
        streams: int,
        *,
        rows: int | None = None,
        peer_credit: bool = False,
    ) -> None:
        """``rows``: ship C's first ``rows`` rows only (default: all; the two-GPU reduce-scatter ships the
        row block the other GPU owns). ``peer_credit``: before its first copy, a launch waits until the
        receiver's ``credits[0]`` reached the previous epoch (the other GPU has consumed the last launch)."""
        from cuda.bindings import driver as cu

        if receiver.layout != "rows" or c.device.type != "cuda":
            raise ValueError("the copy engine ships a CUDA C into a receiver of layout 'rows'")
        self.receiver = receiver
        self.c = c
        self.streams = _streams(c.device.index or 0, streams)
        m, n = c.shape
        m = m if rows is None else rows
        self.steps = plan_steps(order, m, n, (receiver.tile_m, receiver.tile_n), c.element_size(), c.stride(0))
        if len(self.steps) > receiver.counters.numel():
            raise ValueError(f"{len(self.steps)} steps but the receiver holds {receiver.counters.numel()} counters")
        addresses = receiver.addresses()
        self._cu = cu
        self._src = c.data_ptr()
        self._dst = receiver.data.data_ptr()
        self._pitches = (c.stride(0) * c.element_size(), receiver.data.stride(0) * receiver.data.element_size())
        self._counter = [cu.CUdeviceptr(addresses.counters + 4 * s.index) for s in self.steps]
        # One ready flag per step: every queued write carries a system-wide memory barrier (~1 µs each).
        self._flag = [cu.CUdeviceptr(addresses.flags + 4 * s.index) for s in self.steps]
        self._credit_waits = [self._credit_batches(addresses.credits, s.tiles) for s in self.steps]
        self._launch_credit = cu.CUdeviceptr(addresses.credits) if peer_credit else None

    def _credit_batches(self, credits: int, tiles: tuple[int, ...]) -> list[list[Any]]:
        """``credits[tile] ≥ value`` waits for ``tiles``, as ``cuStreamBatchMemOp`` lists of at most :data:`BATCH`."""
        cu = self._cu
        params = []
        for tile in tiles:
            p = cu.CUstreamBatchMemOpParams()
            p.waitValue.operation = cu.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WAIT_VALUE_32
            p.waitValue.address = cu.CUdeviceptr(credits + 4 * tile)
            p.waitValue.flags = int(cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
            params.append(p)
        return [params[i : i + BATCH] for i in range(0, len(params), BATCH)]

    # --- what a launch queues ---------------------------------------------------------------------
    def begin(self) -> None:
        """Before the kernel's launch: the copy streams start after the launching stream's earlier work."""
        import torch

        start = torch.cuda.Event()
        start.record(torch.cuda.current_stream(self.c.device))
        for stream in self.streams:
            stream.wait_event(start)

    def ship(self, epoch: int, *, counted: int | None, credits: bool = False) -> None:
        """After the kernel's launch call: queue every step (waiting for ``counted`` launches' counts;
        None: ship C as it is, the T_comm baseline), then make the launching stream wait for them."""
        import torch
        from cuda.bindings import runtime as cudart

        cu = self._cu
        geq = cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ
        epoch &= 0xFFFFFFFF
        handles = [cu.CUstream(s.cuda_stream) for s in self.streams]
        if self._launch_credit is not None:  # every stream: the other GPU consumed the previous launch
            for handle in handles:
                want = (epoch - 1) & 0xFFFFFFFF
                _check(cu.cuStreamWaitValue32(handle, self._launch_credit, want, geq)[0], "cuStreamWaitValue32")
        kind = cudart.cudaMemcpyKind.cudaMemcpyDefault  # pinned host or a peer GPU: unified addressing decides
        src_pitch, dst_pitch = self._pitches
        for i, step in enumerate(self.steps):
            handle = handles[i % len(handles)]
            raw = self.streams[i % len(handles)].cuda_stream
            if counted is not None:
                want = (counted * len(step.tiles)) & 0xFFFFFFFF
                _check(cu.cuStreamWaitValue32(handle, self._counter[i], want, geq)[0], "cuStreamWaitValue32")
            if credits:
                for params in self._credit_waits[i]:
                    for p in params:
                        p.waitValue.value = (epoch - 1) & 0xFFFFFFFF
                    _check(cu.cuStreamBatchMemOp(handle, len(params), params, 0)[0], "cuStreamBatchMemOp")
            err = cudart.cudaMemcpy2DAsync(
                self._dst + step.dst_offset,
                dst_pitch,
                self._src + step.src_offset,
                src_pitch,
                step.width_bytes,
                step.rows,
                kind,
                raw,
            )
            _check(err[0], "cudaMemcpy2DAsync")
            _check(cu.cuStreamWriteValue32(handle, self._flag[i], epoch, 0)[0], "cuStreamWriteValue32")
        launching = torch.cuda.current_stream(self.c.device)
        for stream in self.streams:
            done = torch.cuda.Event()
            done.record(stream)
            launching.wait_event(done)
