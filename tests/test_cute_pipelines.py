"""CPU tests of pipes.cute's async, TMA-load and store-notify pipelines: compile for sm_90a, check PTX.

Orderings are proved on the PTX control-flow graph (tests/ptx_check.py): for every path from the
kernel entry, not just the textual order. Each checker also runs on a deliberately wrong kernel, so
a vacuous check would fail.
"""

from __future__ import annotations

import os
import re

import cute_kernels as ck
import cutlass
import cutlass.cute as cute
import pytest
from cutlass import Int32, Int64
from ptx_check import kernel_body, loops, path_states

from pipes import ArrivalUnit, Completion, PipelineSpec, ProtocolError, Role, SpecError
from pipes.cute import (
    AsyncPipeline,
    RoleLayout,
    StoreNotifyPipeline,
    TmaLoadPipeline,
    Warps,
    init_pipelines,
    storage_words,
)


def compile_store_notify(stages: int, lag: int, **kw) -> str:
    built = ck.build_store_notify(stages, lag, **kw)
    readers = 2 if kw.get("fan_out") else 1
    grid = 2
    compiled = ck.compile_fake(
        built.launcher,
        ck.fake_out(grid * stages * ck.TILE, ck.TILE),
        ck.fake_out(grid, readers, 32, 2),
        Int32(10),
        Int32(0),
    )
    return ck.ptx_of(compiled)


# --- abstract states for the path checks -----------------------------------------------------------
def bulk_transfer(ins: str, state: str) -> str:
    """none → committed (commit_group) → waited (wait_group WITHOUT .read); .read waits change nothing."""
    if ins.startswith("cp.async.bulk.commit_group"):
        return "committed"
    if ins.startswith("cp.async.bulk.wait_group.read"):
        return state
    if ins.startswith("cp.async.bulk.wait_group"):
        return "waited" if state == "committed" else state
    return state


def is_plain_arrive(ins: str) -> bool:
    return ins.startswith("mbarrier.arrive.") and "expect_tx" not in ins


def published_before_complete(ptx: str) -> list[str]:
    """Arrivals some path reaches with a committed bulk group not yet awaited without .read."""
    return [
        ins
        for ins, states in path_states(kernel_body(ptx), bulk_transfer, "none")
        if is_plain_arrive(ins) and "committed" in states
    ]


def barrier_transfer(ins: str, state: str) -> str:
    if "mbarrier.try_wait" in ins:
        return "waited"
    if is_plain_arrive(ins):
        return "released"
    return state


def loads_before_wait(ptx: str) -> list[str]:
    """Global loads some path reaches without an mbarrier wait since the last arrival."""
    return [
        ins
        for ins, states in path_states(kernel_body(ptx), barrier_transfer, "none")
        if ins.startswith("ld.global") and states != {"waited"}
    ]


def printf_formats(ptx: str) -> list[str]:
    found = []
    for m in re.finditer(r"printfFormat_\d+\[\d+\] = \{([^}]*)\}", ptx):
        found.append(bytes(int(x) for x in m.group(1).split(",")).decode().rstrip("\x00"))
    return found


# --- store-notify ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("stages", "lag"), [(1, 0), (2, 1), (4, 3)])
def test_store_notify_publishes_only_after_non_read_wait(stages: int, lag: int) -> None:
    ptx = compile_store_notify(stages, lag, fan_out=True)
    assert re.search(rf"cp\.async\.bulk\.wait_group\s+{lag};", ptx), "commit must wait_group <lag> without .read"
    assert published_before_complete(ptx) == []
    # the staging ring's .read wait exists, and the check above saw it and was not fooled by it
    assert "cp.async.bulk.wait_group.read" in ptx
    assert loads_before_wait(ptx) == []
    assert any(ins.startswith("ld.global") for ins in kernel_body(ptx)), "the readers load the tile from global"


def test_checkers_flag_a_read_wait_publish_and_an_early_load() -> None:
    """Negative control: the stock-style epilogue (wait_group.read, then arrive) and a load before the wait."""

    @cute.kernel
    def wrong(out: cute.Tensor, src: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        bar = smem.allocate_array(Int64, 1, byte_alignment=8)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)
        cute.arch.mbarrier_arrive(bar)
        value = src[0]
        cute.arch.mbarrier_wait(bar, 0)
        out[0] = value

    @cute.jit
    def launch(out: cute.Tensor, src: cute.Tensor, stream):
        wrong(out, src).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

    ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4), ck.fake_out(4)))
    assert published_before_complete(ptx) != []
    assert loads_before_wait(ptx) != []


def test_store_notify_spec_checks() -> None:
    spec = PipelineSpec("out", 2, Role("epi"), Role("comm", ArrivalUnit.WARP), Completion.STORE_COMPLETE)
    with pytest.raises(SpecError, match=r"lag = 2 is invalid: allowed an int in \[0, stages-1\] = \[0, 1\]"):
        StoreNotifyPipeline(spec, lag=2)
    warp_spec = PipelineSpec("out", 2, Role("epi", ArrivalUnit.WARP), Role("comm"), Completion.STORE_COMPLETE)
    with pytest.raises(SpecError, match="bulk async-groups are per thread"):
        StoreNotifyPipeline(warp_spec, lag=0)
    with pytest.raises(SpecError, match="needs Completion.STORE_COMPLETE"):
        StoreNotifyPipeline(PipelineSpec("out", 2, Role("epi"), Role("comm")), lag=0)
    pipe = StoreNotifyPipeline(spec, lag=1, meta_fields=3)
    # 2×2 barriers + 2 slots × (3 fields + valid) Int32 = 4 words of 8 bytes
    assert pipe.smem_words == 4 + 4 and pipe.smem_bytes == 64


# --- async and TMA-load --------------------------------------------------------------------------------
def test_async_pipeline_ptx_and_phase_flip_in_dynamic_loop() -> None:
    built = ck.build_async(4)
    ptx = ck.ptx_of(ck.compile_fake(built.launcher, ck.fake_out(2, 1, 32, 2), Int32(10), Int32(0)))
    body = kernel_body(ptx)
    # barrier counts from the spec: full = 1 (elected per warp), empty = 32 (every reader lane)
    assert re.search(r"mov\.b32\s+(%r\d+), 1;\s*$", "\n".join(body), re.M)
    assert any(re.match(r"mbarrier\.init\.shared\.b64\s+\[%r\d+\+32\], %r\d+;", i) for i in body)
    flipping = 0
    for loop in loops(body):
        waits = [re.search(r"mbarrier\.try_wait\.parity\S*\s+\S+, \[[^\]]+\], (\S+);", i) for i in loop]
        for m in filter(None, waits):
            parity = m.group(1)
            assert parity.startswith("%r"), f"constant parity {parity} inside a dynamic loop"
            if any(re.match(rf"\S+\s+{re.escape(parity)},", i) for i in loop):
                flipping += 1
    assert flipping >= 2, "producer and consumer parities must be updated inside their loops"


def test_tma_load_arms_bytes_and_waits_before_reading() -> None:
    built = ck.build_tma_load(2)
    ptx = ck.ptx_of(
        ck.compile_fake(built.launcher, ck.fake_out(2 * 10 * 32, 32), ck.fake_out(2, 1, 32, 2), Int32(10), Int32(0))
    )
    body = kernel_body(ptx)
    arms = [i for i in body if i.startswith("mbarrier.arrive.expect_tx")]
    assert len(arms) == 1
    assert any("mov.b32" in i and ", 4096;" in i for i in body), "tx bytes = one 32×32 Int32 tile"

    def transfer(ins: str, state: str) -> str:
        return "waited" if "mbarrier.try_wait" in ins else ("released" if is_plain_arrive(ins) else state)

    smem_reads = [s for i, s in path_states(body, transfer, "none") if i.startswith("ld.shared")]
    assert smem_reads and all(s == {"waited"} for s in smem_reads)


def generic_reads_released_unfenced(readers) -> list[str]:
    """Plain arrivals (releases) some path reaches with an ld.shared since the last proxy fence."""
    built = ck.build_tma_load(2, readers=readers)
    ptx = ck.ptx_of(
        ck.compile_fake(built.launcher, ck.fake_out(2 * 10 * 32, 32), ck.fake_out(2, 1, 32, 2), Int32(10), Int32(0))
    )

    def transfer(ins: str, state: str) -> str:
        if ins.startswith("ld.shared"):
            return "read"
        return "fenced" if ins.startswith("fence.proxy.async.shared::cta") else state

    reached = path_states(kernel_body(ptx), transfer, "none")
    return [i for i, states in reached if is_plain_arrive(i) and "read" in states]


def test_tma_load_release_fences_generic_reads_before_the_tma_refill() -> None:
    """ld.shared reads then a release: the refilling TMA (async proxy) must not overtake the reads.

    On the H100 the unfenced GEMM smoke kernel produced 17-68 wrong outputs per launch (pipes.cute.proxy).
    """
    from pipes.cute import SlotReaders

    assert generic_reads_released_unfenced(SlotReaders.GENERIC) == []
    assert generic_reads_released_unfenced(SlotReaders.ASYNC), "ASYNC readers must not pay for a fence"


def test_store_notify_release_fences_global_reads_before_a_later_tma_store() -> None:
    """The stress kernel reuses a global ring: a release must not let the next TMA store overtake ld.global."""
    from pipes.cute import SlotReaders

    def unfenced(readers) -> list[str]:
        ptx = compile_store_notify(2, 1, slot_readers=readers)

        def transfer(ins: str, state: str) -> str:
            if ins.startswith("ld.global"):
                return "read"
            return "fenced" if ins.startswith("fence.proxy.async.global") else state

        return [
            i
            for i, states in path_states(kernel_body(ptx), transfer, "none")
            if is_plain_arrive(i) and "read" in states
        ]

    assert unfenced(SlotReaders.GENERIC) == []
    assert unfenced(SlotReaders.ASYNC)


def test_tma_load_spec_checks() -> None:
    tx = PipelineSpec(
        "ml", 2, Role("load", ArrivalUnit.WARP), Role("mma", ArrivalUnit.WARPGROUP), Completion.TRANSACTION_BYTES, 1024
    )
    with pytest.raises(SpecError, match="makes 32 arrival"):
        TmaLoadPipeline(tx)
    ok = PipelineSpec(
        "ml",
        2,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES,
        1024,
    )
    from pipes.cute import Multicast

    stated = PipelineSpec(
        "ml",
        2,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, 4, peers=2),
        Completion.TRANSACTION_BYTES,
        1024,
    )
    with pytest.raises(
        SpecError,
        match=r"consumer role 'mma' has peers=2, but Multicast\(cluster_m=2, cluster_n=2, "
        r"a=True, b=True\) gives 3 peer CTA\(s\): leave Role.peers at 1",
    ):
        TmaLoadPipeline(stated, multicast=Multicast(2, 2))
    assert TmaLoadPipeline(ok, extra_tx_bytes=64).stage_tx_bytes == 1088


@pytest.mark.parametrize(
    ("cm", "cn", "a", "b"), [(2, 2, True, True), (2, 1, False, True), (1, 4, True, False), (4, 2, True, True)]
)
def test_multicast_peers_are_the_row_and_column(cm: int, cn: int, a: bool, b: bool) -> None:
    from pipes.cute import Multicast

    mc = Multicast(cm, cn, a=a, b=b)
    for my_m in range(cm):
        for my_n in range(cn):
            ranks = [mc.peer_rank(j, my_m, my_n) for j in range(mc.peers)]
            expected = set()
            if a:
                expected |= {my_m + n * cm for n in range(cn)}  # same m: share my A tile
            if b:
                expected |= {m + my_n * cm for m in range(cm)}  # same n: share my B tile
            assert sorted(ranks) == sorted(expected), (my_m, my_n)


def test_multicast_release_compiles_to_remote_arrivals() -> None:
    from pipes.cute import Multicast

    spec = PipelineSpec(
        "mc",
        2,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, 1),
        Completion.TRANSACTION_BYTES,
        1024,
    )
    pipe = TmaLoadPipeline(spec, multicast=Multicast(2, 2))  # peers = 3, derived from the multicast
    assert pipe.spec.consumer("mma").peers == 3 and pipe.empty_arrivals() == 3

    @cute.kernel
    def kern(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem)
        if cute.arch.warp_idx() == 1:
            c = pipe.consumer()
            c.wait()
            c.release()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(4, 1, 1), block=(64, 1, 1), cluster=(4, 1, 1), stream=stream)

    ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4)))
    assert "mapa.shared::cluster" in ptx and "mbarrier.arrive.shared::cluster" in ptx
    assert "barrier.cluster.arrive.relaxed" in ptx and "barrier.cluster.wait" in ptx
    # empty barriers expect consumers × peers = 1 × 3 arrivals per phase
    counts = re.findall(r"mov\.b32\s+(%r\d+), 3;", ptx)
    assert counts and len(re.findall(rf"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], {counts[0]};", ptx)) == 2


# --- debug mode -----------------------------------------------------------------------------------------
def test_debug_off_is_byte_identical_and_on_traps_with_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPES_DEBUG", raising=False)
    default = compile_store_notify(2, 1)
    off = compile_store_notify(2, 1, debug=False)
    assert default == off
    assert "trap;" not in default and "vprintf" not in default
    on = compile_store_notify(2, 1, debug=True)
    # the test kernel's slow-consumer spin reads %globaltimer too; debug waits add their own reads
    assert "trap;" in on and on.count("%globaltimer") > default.count("%globaltimer")
    formats = printf_formats(on)
    assert any("pipeline=tiles_out role=epi op=acquire slot=%d phase=%d" in f for f in formats)
    assert any("pipeline=tiles_out role=reader op=wait" in f for f in formats)
    monkeypatch.setenv("PIPES_DEBUG", "1")
    assert compile_store_notify(2, 1) == on


# --- misuse -------------------------------------------------------------------------------------------
def _layout_kernel(pipe, layout):
    @cute.kernel
    def kern(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem, layout=layout)
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(1, 1, 1), block=(layout.block_threads, 1, 1), stream=stream)

    return launch


def test_arrival_count_mismatch_fails_at_trace_time_with_the_sums() -> None:
    spec = PipelineSpec(
        "mainloop",
        2,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.WARPGROUP, 1),
        Completion.TRANSACTION_BYTES,
        4096,
    )
    layout = RoleLayout(384, {"load": Warps(0), "mma": Warps(4, 8)})
    with pytest.raises(ProtocolError) as err:
        ck.compile_fake(_layout_kernel(TmaLoadPipeline(spec), layout), ck.fake_out(4))
    text = str(err.value)
    assert "count=1 × WARPGROUP" in text and "= 128 threads → 128 arrivals" in text
    assert "warps 4..11 (8 warp(s) × 32 = 256 threads)" in text and "256 arrivals" in text and "count=2" in text


def test_role_missing_from_layout_is_named() -> None:
    spec = PipelineSpec("p", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP))
    with pytest.raises(ProtocolError, match="consumer role 'r' has no warps in the role layout"):
        RoleLayout(64, {"w": Warps(0)}).check(spec)
    with pytest.raises(SpecError, match="does not fit the block"):
        RoleLayout(64, {"w": Warps(1, 2)})


def test_handles_without_init_raise() -> None:
    pipe = AsyncPipeline(PipelineSpec("lonely", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP)))

    @cute.kernel
    def kern(out: cute.Tensor):
        producer = pipe.producer()
        producer.acquire()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    with pytest.raises(ProtocolError, match="'lonely' is used before its barriers exist in this kernel"):
        ck.compile_fake(launch, ck.fake_out(4))


def test_init_inside_a_role_branch_raises() -> None:
    pipe = AsyncPipeline(PipelineSpec("branchy", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP)))

    @cute.kernel
    def kern(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        if cute.arch.warp_idx() == 0:
            init_pipelines((pipe,), allocator=smem)
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    with pytest.raises(ProtocolError, match=r"traced inside scf\.if"):
        ck.compile_fake(launch, ck.fake_out(4))


def test_binding_from_another_kernel_is_not_reused() -> None:
    pipe = AsyncPipeline(PipelineSpec("shared", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP)))
    ck.compile_fake(_layout_kernel(pipe, RoleLayout(64, {"w": Warps(0), "r": Warps(1)})), ck.fake_out(4))

    @cute.kernel
    def second(out: cute.Tensor):
        pipe.consumer().wait()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        second(out).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    with pytest.raises(ProtocolError, match="used before its barriers exist"):
        ck.compile_fake(launch, ck.fake_out(4))


def test_fan_out_consumer_needs_a_role_name_and_counts_every_role() -> None:
    spec = PipelineSpec(
        "fan",
        2,
        Role("epi"),
        (Role("a", ArrivalUnit.WARP), Role("b", ArrivalUnit.ELECTED_PER_WARP)),
        Completion.STORE_COMPLETE,
    )
    pipe = StoreNotifyPipeline(spec, lag=1)
    assert pipe.empty_arrivals() == 33 and pipe.full_arrivals() == 1
    assert storage_words(pipe) == pipe.smem_words

    @cute.kernel
    def kern(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem)
        pipe.consumer().wait()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(1, 1, 1), block=(96, 1, 1), stream=stream)

    with pytest.raises(ProtocolError, match=r"has consumer roles \['a', 'b'\]: name one"):
        ck.compile_fake(launch, ck.fake_out(4))


# --- trace hook -------------------------------------------------------------------------------------------
class RecordingTracer:
    """Counts trace-time record() calls; emits no device code."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def record(self, event: int, pipeline_id: int, slot) -> None:
        self.calls.append((event, pipeline_id))


def test_tracer_hook_sees_every_call_site() -> None:
    from pipes.cute import TraceEvent

    tracer = RecordingTracer()
    spec = PipelineSpec("traced", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP))
    pipe = AsyncPipeline(spec, tracer=tracer, trace_id=7)

    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem)
        if cute.arch.warp_idx() == 0:
            p = pipe.producer()
            for _ in cutlass.range(n, unroll=1):
                p.acquire()
                p.commit()
        if cute.arch.warp_idx() == 1:
            c = pipe.consumer()
            for _ in cutlass.range(n, unroll=1):
                c.wait()
                c.release()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    ck.compile_fake(launch, ck.fake_out(4), Int32(3))
    events = {e for e, pid in tracer.calls if pid == 7}
    assert events == {TraceEvent.ACQUIRE, TraceEvent.COMMIT, TraceEvent.WAIT, TraceEvent.RELEASE}


def test_gemm_smoke_compiles_with_both_kinds() -> None:
    built = ck.build_gemm_smoke()
    ptx = ck.ptx_of(
        ck.compile_fake(
            built.launcher,
            ck.fake_f32(128, 128),
            ck.fake_f32(128, 128),
            ck.fake_f32(128, 128),
            ck.fake_f32(4, 4),
            Int32(4),
        )
    )
    assert "mbarrier.arrive.expect_tx" in ptx and "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert published_before_complete(ptx) == []
    assert loads_before_wait(ptx) == []


def test_env_debug_flag_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipes.cute import resolve_debug

    monkeypatch.setenv("PIPES_DEBUG", "0")
    assert resolve_debug(None) is None
    monkeypatch.setenv("PIPES_DEBUG", "1")
    monkeypatch.setenv("PIPES_DEBUG_TIMEOUT_MS", "250")
    assert resolve_debug(None).timeout_ns == 250_000_000
    assert resolve_debug(False) is None
    monkeypatch.setenv("PIPES_DEBUG_TIMEOUT_MS", "soon")
    with pytest.raises(ValueError, match="PIPES_DEBUG_TIMEOUT_MS = 'soon' is invalid"):
        resolve_debug(True)
    os.environ.pop("PIPES_DEBUG", None)


@pytest.mark.parametrize("unit", list(ArrivalUnit))
def test_every_arrival_unit_compiles_with_its_barrier_count(unit: ArrivalUnit) -> None:
    """Consumer role of 2 units: the empty barrier is initialized to 2 × unit.arrivals; try-tokens compile.

    Compile-only: with THREAD units a real kernel would restrict the calls to the 2 declared threads.
    """
    ptx = units_kernel_ptx(unit, tokens=True)
    expected = Role("reader", unit, 2).arrivals
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (%r\d+|\d+);", ptx)
    values = {
        int(v) if v.isdigit() else int(re.search(rf"mov\.b32\s+{re.escape(v)}, (\d+);", ptx).group(1)) for v in inits
    }
    assert values == {1, expected}, (unit, values)


def test_try_tokens_add_one_poll_each() -> None:
    """try_acquire / try_wait each emit one non-blocking poll besides the blocking waits' own tries."""

    def polls(ptx: str) -> int:
        return sum(1 for i in kernel_body(ptx) if i.startswith("mbarrier.try_wait"))

    with_tokens = polls(units_kernel_ptx(ArrivalUnit.WARP, tokens=True))
    without = polls(units_kernel_ptx(ArrivalUnit.WARP, tokens=False))
    assert with_tokens == without + 2, (with_tokens, without)


def units_kernel_ptx(unit: ArrivalUnit, tokens: bool) -> str:
    """PTX of a writer warp and a 2-unit reader role looping over an AsyncPipeline (optionally with try-tokens)."""
    consumer = Role("reader", unit, 2)
    spec = PipelineSpec("units", 2, Role("writer", ArrivalUnit.ELECTED_PER_WARP), consumer)
    pipe = AsyncPipeline(spec)
    warps = max(1, consumer.threads // 32)
    first = 4 if warps >= 4 else 1  # warpgroups start at a warp index divisible by 4
    executing = consumer.threads if consumer.threads < 32 else None
    layout = RoleLayout(32 * (first + warps), {"writer": Warps(0), "reader": Warps(first, warps, threads=executing)})

    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem, layout=layout)
        if layout.is_role("writer"):
            p = pipe.producer()
            for _ in cutlass.range(n, unroll=1):
                if cutlass.const_expr(tokens):
                    p.acquire(p.try_acquire())
                else:
                    p.acquire()
                p.commit()
            p.tail()
        if layout.is_role("reader"):
            c = pipe.consumer()
            for _ in cutlass.range(n, unroll=1):
                if cutlass.const_expr(tokens):
                    c.wait(c.try_wait())
                else:
                    c.wait()
                c.release()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(layout.block_threads, 1, 1), stream=stream)

    return ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4), Int32(5)))
