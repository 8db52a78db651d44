"""Trace mode: roles write a timestamped record at each acquire / commit / wait / release.

A :class:`Tracer` is the ``tracer=`` object every ``pipes.cute`` pipeline accepts (the
:class:`pipes.cute.debug.Tracer` protocol: ``record(event, pipeline_id, slot)``). Without one
(``tracer=None``, the default) the pipelines emit no trace code at all.

Where records go
    A flat ``Int32`` buffer in global memory laid out by :class:`TraceLayout`: one region per
    (block, warp), each ``capacity`` records of :data:`RECORD_WORDS` words plus a header row whose
    word 0 counts the records the warp tried to write (more than ``capacity`` means some were
    dropped). Lane 0 of each calling warp writes; its running count lives in one shared-memory
    ``Int32`` per warp, so recording needs no atomics and no loop-carried state.

Record words
    ``time_lo, time_hi, smid, event + 1, pipeline_id, slot, block, warp`` — ``event + 1`` so that
    an all-zero (never written) row reads as "no record". ``time`` is ``%clock64`` (cycles of that
    SM; exact, comparable within one SM, which is what the per-SM timeline needs) or, with
    ``clock="globaltimer"``, ``%globaltimer`` (nanoseconds, comparable across SMs, coarser).

Use::

    layout = TraceLayout(blocks=grid, warps=threads // 32, capacity=4096)
    buf = torch.zeros(layout.words, dtype=torch.int32, device="cuda")        # host
    ...
    tracer = Tracer.create(layout, from_dlpack(buf), counters=smem_ptr)      # kernel prologue, all warps
    pipe = ...create(..., tracer=tracer, trace_id=1)
    ...
    log = layout.decode(buf.cpu().numpy(), names={1: "mainloop"})            # host
    pipes.cute.timeline.draw_timeline(log, "trace.png")
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.cute as cute
import numpy as np

__all__ = ["CLOCKS", "RECORD_WORDS", "TraceLayout", "TraceLog", "Tracer"]

RECORD_WORDS = 8
CLOCKS = ("clock64", "globaltimer")
(W_TIME_LO, W_TIME_HI, W_SM, W_EVENT, W_PIPELINE, W_SLOT, W_BLOCK, W_WARP) = range(RECORD_WORDS)

#: Record fields after decoding (one numpy structured row per record).
RECORD_DTYPE = np.dtype(
    [
        ("time", np.int64),
        ("sm", np.int32),
        ("event", np.int32),
        ("pipeline", np.int32),
        ("slot", np.int32),
        ("block", np.int32),
        ("warp", np.int32),
    ]
)


@dataclass(frozen=True)
class TraceLog:
    """Decoded records, sorted by (sm, time); ``dropped`` maps (block, warp) to records lost to
    ``capacity``; ``names`` maps pipeline ids to names for the timeline."""

    records: np.ndarray
    dropped: Mapping[tuple[int, int], int] = field(default_factory=dict)
    names: Mapping[int, str] = field(default_factory=dict)
    clock: str = "clock64"

    def for_sm(self, sm: int) -> np.ndarray:
        return self.records[self.records["sm"] == sm]

    @property
    def sms(self) -> list[int]:
        return sorted({int(s) for s in self.records["sm"]})


@dataclass(frozen=True)
class TraceLayout:
    """Shape of a trace buffer: ``blocks`` × ``warps`` regions of ``capacity`` records + 1 header."""

    blocks: int
    warps: int
    capacity: int = 1024
    clock: str = "clock64"

    def __post_init__(self) -> None:
        for name, value, high in (
            ("blocks", self.blocks, 1 << 20),
            ("warps", self.warps, 32),
            ("capacity", self.capacity, 1 << 20),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ValueError(f"TraceLayout.{name} = {value!r} is invalid: allowed an int in [1, {high}]")
        if self.clock not in CLOCKS:
            raise ValueError(f"TraceLayout.clock = {self.clock!r} is invalid: allowed one of {CLOCKS}")
        if self.words >= 1 << 31:
            raise ValueError(
                f"TraceLayout too large: {self.blocks} blocks × {self.warps} warps × ({self.capacity} + 1) rows × "
                f"{RECORD_WORDS} words = {self.words} Int32 words; allowed < 2**31 (Int32 offsets)"
            )

    @property
    def rows_per_region(self) -> int:
        return self.capacity + 1

    @property
    def words(self) -> int:
        """Int32 words of the whole buffer (allocate it zero-filled)."""
        return self.blocks * self.warps * self.rows_per_region * RECORD_WORDS

    def zeros(self) -> np.ndarray:
        """A zero-filled host buffer of the right size."""
        return np.zeros(self.words, dtype=np.int32)

    def decode(self, buffer: Any, names: Mapping[int, str] | None = None) -> TraceLog:
        """Records of a buffer the kernel filled (any array-like of ``words`` Int32 values)."""
        flat = np.asarray(buffer, dtype=np.int32).reshape(-1)
        if flat.size != self.words:
            raise ValueError(f"trace buffer has {flat.size} Int32 words; this layout needs {self.words}")
        regions = flat.reshape(self.blocks, self.warps, self.rows_per_region, RECORD_WORDS)
        rows = regions[:, :, : self.capacity, :].reshape(-1, RECORD_WORDS)
        rows = rows[rows[:, W_EVENT] != 0]
        records = np.empty(len(rows), dtype=RECORD_DTYPE)
        lo = rows[:, W_TIME_LO].astype(np.int64) & 0xFFFFFFFF
        records["time"] = (rows[:, W_TIME_HI].astype(np.int64) << 32) | lo
        records["sm"] = rows[:, W_SM]
        records["event"] = rows[:, W_EVENT] - 1
        records["pipeline"] = rows[:, W_PIPELINE]
        records["slot"] = rows[:, W_SLOT]
        records["block"] = rows[:, W_BLOCK]
        records["warp"] = rows[:, W_WARP]
        records = records[np.lexsort((records["time"], records["sm"]))]
        attempted = regions[:, :, self.capacity, 0]
        dropped = {
            (int(b), int(w)): int(attempted[b, w] - self.capacity)
            for b, w in zip(*np.nonzero(attempted > self.capacity), strict=True)
        }
        return TraceLog(records, dropped, dict(names or {}), self.clock)


@dataclass(frozen=True)
class Tracer:
    """Device-side recorder (frozen: dynamic loops treat it as a constant). Build with :meth:`create`."""

    layout: TraceLayout
    buffer: Any  # cute.Tensor of layout.words Int32 in global memory
    counters: Any  # cute.Pointer to layout.warps Int32 in shared memory
    block: Any  # linear block index (Int32)
    warp: Any  # warp index in the block (Int32, warp-uniform)

    @staticmethod
    def smem_bytes(layout: TraceLayout) -> int:
        """Shared memory the per-warp record counters need."""
        return 4 * layout.warps

    @staticmethod
    @cute.jit
    def create(layout: TraceLayout, buffer: cute.Tensor, counters: cute.Pointer) -> Tracer:
        """Zero this warp's counter and return the recorder; every warp that records must run it.

        Call it in the kernel prologue, before the role branches: each warp's lane 0 zeroes its own
        counter, so no CTA barrier is needed.
        """
        bx, by, bz = cute.arch.block_idx()
        gx, gy, _ = cute.arch.grid_dim()
        block = cutlass.Int32(bx) + cutlass.Int32(gx) * (cutlass.Int32(by) + cutlass.Int32(gy) * cutlass.Int32(bz))
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if cute.arch.lane_idx() == 0:
            cute.arch.store(counters + warp, cutlass.Int32(0))
        return Tracer(layout, buffer, counters, block, warp)

    @cute.jit
    def record(self, event: int, pipeline_id: int, slot: Any) -> None:
        """Lane 0 of the calling warp appends ``(time, sm, event, pipeline_id, slot, block, warp)``."""
        buffer = self.buffer
        if cute.arch.lane_idx() == 0:
            if cutlass.const_expr(self.layout.clock == "globaltimer"):
                now = cute.arch.globaltimer()
            else:
                now = cute.arch.clock64()
            counter = self.counters + self.warp
            n = cute.arch.load(counter, cutlass.Int32)
            cute.arch.store(counter, n + 1)
            region = (self.block * self.layout.warps + self.warp) * self.layout.rows_per_region
            if n < self.layout.capacity:
                row = (region + n) * RECORD_WORDS
                buffer[row + W_TIME_LO] = cutlass.Int32(now)
                buffer[row + W_TIME_HI] = cutlass.Int32(now >> 32)
                buffer[row + W_SM] = cute.arch.smid()
                buffer[row + W_EVENT] = cutlass.Int32(event + 1)
                buffer[row + W_PIPELINE] = cutlass.Int32(pipeline_id)
                buffer[row + W_SLOT] = cutlass.Int32(slot)
                buffer[row + W_BLOCK] = self.block
                buffer[row + W_WARP] = self.warp
            buffer[(region + self.layout.capacity) * RECORD_WORDS] = n + 1
