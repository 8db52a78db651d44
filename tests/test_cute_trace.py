"""Trace mode (pipes.cute.trace, pipes.cute.timeline) on the CPU: emitted PTX, decoding, drawing."""

from __future__ import annotations

import re
import tempfile

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
from cutlass.memory import SmemAllocator

from pipes import ArrivalUnit, Role
from pipes.cute.debug import TraceEvent
from pipes.cute.debug import Tracer as TracerProtocol
from pipes.cute.ordered import OrderedBarrier, OrderSpec
from pipes.cute.timeline import draw_timeline, draw_timelines, spans
from pipes.cute.trace import RECORD_WORDS, TraceLayout, Tracer

OPTIONS = f"--gpu-arch sm_90a --keep-ptx --dump-dir={tempfile.mkdtemp(prefix='pipes-ptx-')}"
SPEC = OrderSpec("pingpong", groups=2, role=Role("math", ArrivalUnit.WARPGROUP))
LAYOUT = TraceLayout(blocks=1, warps=8, capacity=64)


def ordered_kernel_ptx(mode: str, clock: str = "clock64") -> str:
    """The ping-pong kernel with tracing ``"on"``, ``"off"`` (tracer=None) or ``"absent"`` (no tracer code)."""
    layout = TraceLayout(LAYOUT.blocks, LAYOUT.warps, LAYOUT.capacity, clock)

    @cute.kernel
    def kernel(out: cute.Tensor, buf: cute.Tensor, n: cutlass.Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, SPEC.barriers)
        group = cute.arch.make_warp_uniform(cute.arch.warp_idx() // 4)
        if cutlass.const_expr(mode == "absent"):
            order = OrderedBarrier.create(SPEC, bars, group)
        else:
            tracer = None
            if cutlass.const_expr(mode == "on"):
                tracer = Tracer.create(layout, buf, smem.allocate_array(cutlass.Int32, layout.warps))
            order = OrderedBarrier.create(SPEC, bars, group, tracer=tracer, trace_id=5)
        for i in cutlass.range(n, unroll=1):
            order.wait()
            out[i] = group
            order.arrive()

    @cute.jit
    def launch(out: cute.Tensor, buf: cute.Tensor, n: cutlass.Int32, stream):
        kernel(out, buf, n).launch(grid=(1, 1, 1), block=(256, 1, 1), smem=1024, stream=stream)

    out = make_fake_compact_tensor(cutlass.Int32, (4096,))
    buf = make_fake_compact_tensor(cutlass.Int32, (layout.words,))
    return cute.compile(launch, out, buf, cutlass.Int32(9), make_fake_stream(), options=OPTIONS).artifacts.PTX


def body(ptx: str) -> str:
    return ptx[ptx.index(".entry") :]


def test_trace_off_emits_exactly_what_a_build_without_tracing_emits():
    off, absent = body(ordered_kernel_ptx("off")), body(ordered_kernel_ptx("absent"))
    assert off == absent
    assert "%clock64" not in off and "%smid" not in off and "%globaltimer" not in off


def test_trace_on_writes_a_record_at_each_turn_taken_and_handed_on():
    ptx = body(ordered_kernel_ptx("on"))
    assert ptx.count("%clock64") == 2 and ptx.count("%smid") >= 1
    # Event codes are stored as event + 1 (0 marks an empty row): WAIT -> 3, RELEASE -> 4; trace id 5.
    stored = re.findall(r"st\.global\.b32\s+\[%rd\d+\+(\d+)\],\s*(\d+);", ptx)
    assert ("12", str(TraceEvent.WAIT + 1)) in stored and ("12", str(TraceEvent.RELEASE + 1)) in stored
    assert ("16", "5") in stored
    # The per-warp counter lives in shared memory: no atomics.
    assert "st.shared::cta.b32" in ptx and "atom." not in ptx
    assert "%globaltimer" in body(ordered_kernel_ptx("on", clock="globaltimer"))


def test_the_tracer_satisfies_the_pipelines_trace_hook_protocol():
    assert hasattr(Tracer, "record")
    fake = Tracer(LAYOUT, buffer=None, counters=None, block=0, warp=0)
    assert isinstance(fake, TracerProtocol)


def write(buf: np.ndarray, layout: TraceLayout, block: int, warp: int, rows: list[tuple[int, int, int, int, int]]):
    """Fill one (block, warp) region as the kernel would: rows of (time, sm, event, pipeline, slot)."""
    regions = buf.reshape(layout.blocks, layout.warps, layout.capacity + 1, RECORD_WORDS)
    for n, (time, sm, event, pipeline, slot) in enumerate(rows):
        if n < layout.capacity:
            lo = np.array([time & 0xFFFFFFFF], dtype=np.uint32).view(np.int32)[0]
            regions[block, warp, n] = [lo, time >> 32, sm, event + 1, pipeline, slot, block, warp]
    regions[block, warp, layout.capacity, 0] = len(rows)


def synthetic_log(layout: TraceLayout):
    buf = layout.zeros()
    a, c, w, r = (int(e) for e in (TraceEvent.ACQUIRE, TraceEvent.COMMIT, TraceEvent.WAIT, TraceEvent.RELEASE))
    base = (1 << 32) + 0xFFFFFF00  # crosses the 32-bit boundary: both words matter
    producer = [(base + 10 * k + 4 * (e == c), 7, e, 1, k % 2) for k in range(3) for e in (a, c)]
    consumer = [(base + 10 * k + 5 + 3 * (e == r), 7, e, 1, k % 2) for k in range(3) for e in (w, r)]
    write(buf, layout, 0, 0, sorted(producer))
    write(buf, layout, 0, 4, sorted(consumer))
    write(buf, layout, 1, 0, [(base + 3, 9, w, 2, 0), (base + 40, 9, r, 2, 0)])
    return layout.decode(buf, names={1: "mainloop", 2: "order"})


def test_decode_recovers_records_sorted_per_sm_and_spans_pair_them():
    log = synthetic_log(TraceLayout(blocks=2, warps=8, capacity=16))
    assert log.sms == [7, 9] and len(log.records) == 14 and not log.dropped
    assert int(log.records["time"].min()) == (1 << 32) + 0xFFFFFF00
    sm7 = log.for_sm(7)
    assert np.all(np.diff(sm7["time"]) >= 0)
    got = spans(log.records)
    producer = [s for s in got if s.side == "producer"]
    consumer = [s for s in got if s.side == "consumer" and s.sm == 7]
    assert [(s.end - s.start, s.slot) for s in producer] == [(4, 0), (4, 1), (4, 0)]
    assert [(s.end - s.start, s.slot, s.warp) for s in consumer] == [(3, 0, 4), (3, 1, 4), (3, 0, 4)]
    (turn,) = [s for s in got if s.sm == 9]
    assert (turn.pipeline, turn.end - turn.start) == (2, 37)


def test_overflowing_records_are_counted_as_dropped():
    layout = TraceLayout(blocks=1, warps=1, capacity=2)
    buf = layout.zeros()
    write(buf, layout, 0, 0, [(t, 0, int(TraceEvent.WAIT), 0, 0) for t in range(5)])
    log = layout.decode(buf)
    assert len(log.records) == 2 and log.dropped == {(0, 0): 3}
    with pytest.raises(ValueError, match=r"trace buffer has 3 Int32 words; this layout needs 24"):
        layout.decode(np.zeros(3, np.int32))


def test_layout_is_validated():
    with pytest.raises(ValueError, match=r"TraceLayout.warps = 33 is invalid: allowed an int in \[1, 32\]"):
        TraceLayout(blocks=1, warps=33)
    with pytest.raises(ValueError, match=r"TraceLayout.clock = 'tsc' is invalid"):
        TraceLayout(blocks=1, warps=1, clock="tsc")


def test_timeline_renders_one_png_per_sm(tmp_path):
    pytest.importorskip("matplotlib")
    log = synthetic_log(TraceLayout(blocks=2, warps=8, capacity=16))
    path = draw_timeline(log, tmp_path / "all.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    paths = draw_timelines(log, tmp_path / "per_sm")
    assert [p.name for p in paths] == ["timeline_sm7.png", "timeline_sm9.png"]
    assert all(p.stat().st_size > 5000 for p in paths)
    with pytest.raises(ValueError, match="no records"):
        draw_timeline(TraceLayout(1, 1, 1).decode(np.zeros(16, np.int32)), tmp_path / "empty.png")


def test_long_runs_are_zoomed_to_the_first_spans_of_each_warp(tmp_path):
    pytest.importorskip("matplotlib")
    from pipes.cute.timeline import _window_end

    layout = TraceLayout(blocks=1, warps=2, capacity=400)
    buf = layout.zeros()
    w, r = int(TraceEvent.WAIT), int(TraceEvent.RELEASE)
    write(buf, layout, 0, 0, [(10 * k + 3 * (e == r), 1, e, 0, k % 2) for k in range(150) for e in (w, r)])
    write(buf, layout, 0, 1, [(20 * k + 5 * (e == r), 1, e, 0, 0) for k in range(10) for e in (w, r)])
    log = layout.decode(buf)
    found = spans(log.records)
    assert len(found) == 160
    # Warp 0 has 150 spans: the window ends where its 40th ends; warp 1 (10 spans) does not constrain it.
    assert _window_end(found, 40) == 10 * 39 + 3
    assert _window_end(found, 200) is None
    assert draw_timeline(log, tmp_path / "zoomed.png", spans_per_row=40).stat().st_size > 5000
