"""GPU: the ordered barrier keeps its turn order over thousands of rounds; trace records are sane.

Ping-pong kernel: ``groups`` warpgroups take turns in ``depth`` sections per round. In each turn
thread 0 of the group reads the section's shared turn counter ``c``, writes its group id to
``log[block, section, c]`` and bumps the counter. The host checks ``log[b, s, k] == k % groups``
for every k: a turn out of order, a turn taken twice or a lost turn all break it. Groups spin for
different, changing times so that the fast group keeps trying to run ahead.

With ``PIPES_TRACE_PNG_DIR`` set, the traced run also draws its timeline there.
"""

from __future__ import annotations

import os
from collections import defaultdict

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass import Int32, Int64
from cutlass.memory import SmemAllocator

from pipes import ArrivalUnit, Role
from pipes.cute.ordered import OrderedBarrier, OrderSpec
from pipes.cute.trace import (
    RECORD_WORDS,
    W_BLOCK,
    W_EVENT,
    W_PIPELINE,
    W_SLOT,
    W_SM,
    W_TIME_HI,
    W_TIME_LO,
    W_WARP,
    TraceLayout,
    Tracer,
)

pytestmark = pytest.mark.gpu

WARPGROUP = 128
WAIT, RELEASE = 2, 3
TRACE_ID = 7


@cute.jit
def spin_cycles(cycles: Int32) -> None:
    if cycles > 0:
        start = cute.arch.clock64()
        while cute.arch.clock64() - start < Int64(cycles):
            pass


def build(groups: int, depth: int, layout: TraceLayout | None = None):
    spec = OrderSpec("pingpong", groups=groups, role=Role("math", ArrivalUnit.WARPGROUP), depth=depth)
    trace_layout = layout if layout is not None else TraceLayout(1, 1, 1)

    @cute.kernel
    def kernel(log: cute.Tensor, buf: cute.Tensor, rounds: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, spec.barriers)
        counters = smem.allocate_tensor(Int32, cute.make_layout(depth))
        tracer = None
        if cutlass.const_expr(layout is not None):
            tracer = Tracer.create(trace_layout, buf, smem.allocate_array(Int32, trace_layout.warps))
        tid = cute.arch.thread_idx()[0]
        if tid < depth:
            counters[tid] = 0
        group = cute.arch.make_warp_uniform(cute.arch.warp_idx()) // 4
        order = OrderedBarrier.create(spec, bars, group, tracer=tracer, trace_id=TRACE_ID)  # syncs the CTA
        block = cute.arch.block_idx()[0]
        turns = rounds * groups
        for r in cutlass.range(rounds, unroll=1):
            for s in cutlass.range_constexpr(depth):
                order.wait()
                if tid % WARPGROUP == 0:
                    c = counters[s]
                    if c < turns:
                        log[(block * depth + s) * turns + c] = group
                    counters[s] = c + 1
                spin_cycles((r * 37 + group * 101 + s * 13) % 7 * 40)
                order.arrive()

    @cute.jit
    def launch(log: cute.Tensor, buf: cute.Tensor, rounds: Int32, blocks: Int32, stream):
        kernel(log, buf, rounds).launch(grid=(blocks, 1, 1), block=(groups * WARPGROUP, 1, 1), stream=stream)

    return launch


def run(groups: int, depth: int, rounds: int, blocks: int, layout: TraceLayout | None = None):
    torch = pytest.importorskip("torch")
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    log = torch.full((blocks * depth * rounds * groups,), -1, dtype=torch.int32, device="cuda")
    words = layout.words if layout is not None else 8
    buf = torch.zeros((words,), dtype=torch.int32, device="cuda")
    args = (from_dlpack(log, assumed_align=4), from_dlpack(buf, assumed_align=4), Int32(rounds), Int32(blocks))
    stream = current_stream()
    compiled = cute.compile(build(groups, depth, layout), *args, stream)
    compiled(*args, stream)
    torch.cuda.synchronize()
    return log.cpu().numpy().reshape(blocks, depth, rounds * groups), buf.cpu().numpy()


@pytest.mark.parametrize(("groups", "depth"), [(2, 1), (2, 2), (3, 1), (4, 2)])
def test_turns_keep_their_order_over_many_rounds(groups, depth):
    rounds, blocks = 5000, 16
    log, _ = run(groups, depth, rounds, blocks)
    expected = np.arange(rounds * groups) % groups
    bad = np.argwhere(log != expected)
    assert len(bad) == 0, f"{len(bad)} turns out of order, first at (block, section, turn) {bad[0].tolist()}"


@pytest.mark.parametrize("clock", ["clock64", "globaltimer"])
def test_trace_records_are_complete_monotone_and_show_the_order(clock):
    import torch

    groups, depth, rounds, blocks = 2, 2, 200, 4
    warps = groups * WARPGROUP // 32
    per_warp = 2 * rounds * depth  # a WAIT and a RELEASE per turn, by lane 0 of every warp
    layout = TraceLayout(blocks=blocks, warps=warps, capacity=per_warp + 8, clock=clock)
    order_log, raw = run(groups, depth, rounds, blocks, layout)
    assert np.all(order_log == np.arange(rounds * groups) % groups)
    trace = layout.decode(raw, names={TRACE_ID: "pingpong"})
    assert not trace.dropped
    records = trace.records
    assert len(records) == blocks * warps * per_warp
    assert set(records["pipeline"].tolist()) == {TRACE_ID}
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    by_warp: dict[tuple[int, int], np.ndarray] = defaultdict(list)
    regions = raw.reshape(blocks, warps, layout.capacity + 1, RECORD_WORDS)
    for b in range(blocks):
        assert len({int(s) for s in regions[b, :, :per_warp, W_SM].ravel()}) == 1, "one CTA runs on one SM"
        for w in range(warps):
            rows = regions[b, w, :per_warp]
            assert regions[b, w, layout.capacity, 0] == per_warp
            times = (rows[:, W_TIME_HI].astype(np.int64) << 32) | (rows[:, W_TIME_LO].astype(np.int64) & 0xFFFFFFFF)
            assert np.all(np.diff(times) >= 0), f"block {b} warp {w}: time went backwards"
            assert rows[:, W_EVENT].tolist() == [WAIT + 1, RELEASE + 1] * (rounds * depth)
            assert set(rows[:, W_PIPELINE].tolist()) == {TRACE_ID}
            assert rows[:, W_SLOT].tolist() == [s for _ in range(rounds) for s in range(depth) for _ in (0, 1)]
            assert set(rows[:, W_BLOCK].tolist()) == {b} and set(rows[:, W_WARP].tolist()) == {w}
            assert 0 <= rows[0, W_SM] < sm_count
            by_warp[(b, w)] = times
    # The trace shows the order: in each section, turn t+1 starts after turn t was handed on.
    for b in range(blocks):
        for s in range(depth):
            events = []
            for g in range(groups):
                times = by_warp[(b, 4 * g)].reshape(rounds, depth, 2)[:, s, :]
                events += [(k * groups + g, int(t_wait), int(t_release)) for k, (t_wait, t_release) in enumerate(times)]
            events.sort()
            for (_, _, handed_on), (turn, started, _) in zip(events, events[1:], strict=False):
                assert started >= handed_on, f"block {b} section {s}: turn {turn} started before the previous ended"
    out_dir = os.environ.get("PIPES_TRACE_PNG_DIR")
    if out_dir:
        from pipes.cute.timeline import draw_timeline

        draw_timeline(trace, os.path.join(out_dir, f"pingpong_{clock}.png"), max_sms=2)


ACQUIRE, COMMIT = 0, 1


def build_traced_async(stages: int, layout: TraceLayout):
    """Warp 0 produces ``n`` slots of an AsyncPipeline, warp 1 consumes them slowly; both traced."""
    from pipes import Completion, PipelineSpec
    from pipes.cute import AsyncPipeline, init_pipelines

    spec = PipelineSpec(
        "tiles", stages, Role("writer", ArrivalUnit.WARP), Role("reader", ArrivalUnit.WARP), Completion.ARRIVAL
    )

    @cute.kernel
    def kernel(log: cute.Tensor, buf: cute.Tensor, n: Int32):
        smem = SmemAllocator()
        tracer = Tracer.create(layout, buf, smem.allocate_array(Int32, layout.warps))
        pipe = AsyncPipeline(spec, tracer=tracer, trace_id=1)  # declared in the kernel: it holds the tracer
        (ops,) = init_pipelines((pipe,), allocator=smem)
        data = smem.allocate_tensor(Int32, cute.make_layout(stages))
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            producer = ops.producer()
            for t in cutlass.range(n, unroll=1):
                slot = producer.acquire()
                data[slot] = t
                producer.commit()
            producer.tail()
        if warp == 1:
            consumer = ops.consumer()
            bad = Int32(0)
            for t in cutlass.range(n, unroll=1):
                slot = consumer.wait()
                bad += Int32(data[slot] != t)
                spin_cycles(600)
                consumer.release()
            if cute.arch.lane_idx() == 0:
                log[cute.arch.block_idx()[0]] = bad

    @cute.jit
    def launch(log: cute.Tensor, buf: cute.Tensor, n: Int32, stream):
        kernel(log, buf, n).launch(grid=(layout.blocks, 1, 1), block=(64, 1, 1), stream=stream)

    return launch


def test_a_traced_async_pipeline_shows_the_producer_running_ahead():
    torch = pytest.importorskip("torch")
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    stages, n, blocks = 4, 300, 2
    layout = TraceLayout(blocks=blocks, warps=2, capacity=2 * n + 2 * stages + 8)
    bad = torch.full((blocks,), -1, dtype=torch.int32, device="cuda")
    buf = torch.zeros((layout.words,), dtype=torch.int32, device="cuda")
    args = (from_dlpack(bad, assumed_align=4), from_dlpack(buf, assumed_align=4), Int32(n))
    stream = current_stream()
    cute.compile(build_traced_async(stages, layout), *args, stream)(*args, stream)
    torch.cuda.synchronize()
    assert bad.cpu().tolist() == [0] * blocks
    raw = buf.cpu().numpy()
    trace = layout.decode(raw, names={1: "tiles"})
    assert not trace.dropped
    regions = raw.reshape(blocks, layout.warps, layout.capacity + 1, RECORD_WORDS)
    for b in range(blocks):
        prod, cons = regions[b, 0], regions[b, 1]
        prod = prod[prod[:, W_EVENT] != 0]
        cons = cons[cons[:, W_EVENT] != 0]
        # The producer's tail acquires every slot once more: n acquire/commit pairs, then `stages` acquires.
        assert prod[: 2 * n, W_EVENT].tolist() == [ACQUIRE + 1, COMMIT + 1] * n
        assert cons[:, W_EVENT].tolist() == [WAIT + 1, RELEASE + 1] * n
        assert cons[0::2, W_SLOT].tolist() == [t % stages for t in range(n)]

        def times(rows):
            return (rows[:, W_TIME_HI].astype(np.int64) << 32) | (rows[:, W_TIME_LO].astype(np.int64) & 0xFFFFFFFF)

        commit, waited = times(prod[1 : 2 * n : 2]), times(cons[0::2])
        acquired, released = times(prod[0 : 2 * n : 2]), times(cons[1::2])
        assert np.all(waited >= commit), "a tile was consumed before it was committed"
        assert np.all(acquired[stages:] >= released[:-stages]), "a slot was refilled before its release"
        # The slow consumer lets the producer run ahead: it commits tile t+stages-1 before tile t is released.
        ahead = commit[stages - 1 :] < released[: n - stages + 1]
        assert ahead.mean() > 0.9
    out_dir = os.environ.get("PIPES_TRACE_PNG_DIR")
    if out_dir:
        from pipes.cute.timeline import draw_timeline

        draw_timeline(trace, os.path.join(out_dir, "async_4_stages.png"), max_sms=2)
