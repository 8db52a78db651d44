"""The streaming kernels (examples/streaming) compiled for sm_90a on the CPU: what the PTX and SASS hold,
registers and spills, and the declared pipelines run through the CPU protocol checker."""

import functools
import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

from ptx_check import kernel_body, path_states  # noqa: E402
from streaming.build import compile_kernel, nvdisasm  # noqa: E402
from streaming.plan import Op, Store, StreamConfig, make_plan  # noqa: E402
from streaming.roles import declare  # noqa: E402

from pipes.check import Agent, Protocol, check, model_of, stream_protocol  # noqa: E402
from pipes.cute import TmaLoadPipeline  # noqa: E402

#: One plan of each code path: row tiles (warps per row 1 / 4 / 8), rows held over chunks, a padded N,
#: the weight re-read per chunk, both ops, both output paths.
SHAPES = {
    "rmsnorm-8192": (Op.RMSNORM, "bf16", 8192, None),
    "rmsnorm-4096": (Op.RMSNORM, "bf16", 4096, None),
    "rmsnorm-1024": (Op.RMSNORM, "bf16", 1024, None),
    "rmsnorm-32768": (Op.RMSNORM, "bf16", 32768, None),
    "rmsnorm-fp16-1000": (Op.RMSNORM, "fp16", 1000, None),
    "rmsnorm-fp32-32768": (Op.RMSNORM, "fp32", 32768, None),
    "rmsnorm-bf16-65536": (Op.RMSNORM, "bf16", 65536, None),
    "rmsnorm-st-global": (Op.RMSNORM, "bf16", 8192, StreamConfig(store=Store.ST_GLOBAL)),
    "axpby-8192": (Op.AXPBY, "bf16", 8192, None),
    "axpby-st-global": (Op.AXPBY, "fp32", 1000, StreamConfig(store=Store.ST_GLOBAL)),
}


@functools.cache
def compiled(name):
    op, dtype, n, config = SHAPES[name]
    return compile_kernel(make_plan(op, dtype, n, config), report=True)


@pytest.mark.parametrize("name", SHAPES)
def test_one_tma_instruction_per_tile(name):
    """Each tile is one 3-D TMA box (a 2-D box of a 16 KiB row would take 32 instructions)."""
    kernel = compiled(name)
    plan, report = kernel.plan, kernel.report
    unrolled = plan.chunks if plan.op is Op.RMSNORM else 1  # rmsnorm unrolls a row block's chunks
    assert report.tma_loads == unrolled * plan.op.operands
    # 3-D (rows, N/B, B); 2-D where whole rows are contiguous and cute folds them into one box dimension.
    assert re.search(r"cp\.async\.bulk\.tensor\.[23]d\.shared::cta\.global\.tile\.mbarrier", kernel.ptx)
    if plan.config.store is Store.TMA:
        assert report.tma_stores == unrolled
    else:
        assert report.tma_stores == 0 and "st.global.v4" in kernel.ptx
    assert report.ld_shared_v4 >= plan.op.operands * plan.vectors  # 16-byte shared-memory reads


@pytest.mark.parametrize("name", SHAPES)
def test_zero_spills_within_the_occupancy_register_budget(name):
    kernel = compiled(name)
    assert kernel.report.spills == 0, kernel.report
    assert kernel.report.registers <= kernel.plan.register_limit, (kernel.report, kernel.plan.register_limit)


@pytest.mark.parametrize("name", SHAPES)
def test_mbarrier_waits_retry_without_nanosleep(name):
    kernel = compiled(name)
    assert kernel.report.mbarrier_waits > 0
    assert "mbarrier.try_wait.parity" in kernel.ptx
    if nvdisasm() is None:
        pytest.skip("nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")
    assert kernel.report.nanosleeps == 0


@pytest.mark.parametrize("name", SHAPES)
def test_sass_issues_one_tma_instruction_per_ptx_copy(name):
    """The storing warp's 32 lanes reach the PTX TMA store; SASS issues it once (UTMASTG is a uniform
    instruction), so no tile is stored 32 times."""
    report = compiled(name).report
    if nvdisasm() is None:
        pytest.skip("nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")
    assert report.sass_tma_loads == report.tma_loads
    assert report.sass_tma_stores == report.tma_stores


def _published_before_store(ins, state):
    """``dirty`` after a generic st.shared, ``fenced`` after fence.proxy.async, ``published`` after the
    barrier that follows the fence."""
    if ins.startswith("st.shared"):
        return "dirty"
    if ins.startswith("fence.proxy.async"):
        return "fenced" if state == "dirty" or state == "fenced" else state
    if ins.startswith("bar.sync") or ins.startswith("barrier.sync"):
        return "published" if state in ("fenced", "published") else state
    return state


@pytest.mark.parametrize("name", ["rmsnorm-8192", "rmsnorm-32768", "rmsnorm-1024", "axpby-8192"])
def test_every_tma_store_reads_a_fenced_and_published_buffer(name):
    body = kernel_body(compiled(name).ptx)
    stores = [
        (ins, states)
        for ins, states in path_states(body, _published_before_store, "published")
        if "cp.async.bulk.tensor" in ins and ".global.shared::cta" in ins
    ]
    assert stores
    for ins, states in stores:
        assert states == {"published"}, (ins, states)


def _reads_fenced_before_release(ins, state):
    if ins.startswith("ld.shared"):
        return "read"
    if ins.startswith("fence.proxy.async"):
        return "fenced"
    return state


@pytest.mark.parametrize("name", ["rmsnorm-8192", "rmsnorm-32768", "axpby-8192", "rmsnorm-st-global"])
def test_every_release_follows_a_proxy_fence(name):
    """A slot read with ld.shared is released only after fence.proxy.async (the TMA refill cannot overtake)."""
    body = kernel_body(compiled(name).ptx)
    releases = [
        (ins, s)
        for ins, s in path_states(body, _reads_fenced_before_release, "fenced")
        if "mbarrier.arrive" in ins and "expect_tx" not in ins
    ]
    assert releases
    for ins, states in releases:
        assert "read" not in states, ins


# --- the benchmark's configurations ----------------------------------------------------------------
def _benchmark_module():
    spec = importlib.util.spec_from_file_location("streaming_benchmark", ROOT / "benchmarks" / "streaming_kernels.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_benchmark_configuration_compiles_without_spills():
    bench = _benchmark_module()
    seen = {}
    for case in bench.cases():
        plan = case.plan()
        if plan.key() not in seen:
            seen[plan.key()] = compile_kernel(plan, report=True)
    assert len(seen) >= 20
    for kernel in seen.values():
        assert kernel.report.spills == 0, kernel.plan.describe()
        assert kernel.report.registers <= kernel.plan.register_limit, kernel.plan.describe()
        assert kernel.report.tma_loads > 0


# --- the protocol checker ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rmsnorm-8192", "rmsnorm-32768", "axpby-8192"])
def test_declared_pipeline_is_proven_by_the_checker(name):
    op, dtype, n, config = SHAPES[name]
    decl = declare(make_plan(op, dtype, n, config))
    decl.layout.check(decl.load.spec)
    report = check(stream_protocol(decl.load, items=decl.load.stages + 2))
    assert report.ok and report.exhaustive, str(report)
    from pipes.check.staging import staging_protocol

    units = decl.load.spec.consumers[0].count  # the consumer warpgroups write the staging buffers
    report = check(staging_protocol(decl.staging, tiles=decl.staging.stages + 2, writers=units))
    assert report.ok and report.exhaustive, str(report)


def held_rows(load: TmaLoadPipeline, chunks: int, rows: int) -> Protocol:
    """The rmsnorm consumer as the checker sees it: wait for every chunk of a row (pass 1), then read each
    chunk again and release it (pass 2); one agent per consumer warpgroup."""
    model = model_of(load)
    name, role = load.spec.name, load.spec.consumers[0]

    def produce(ctx):
        p = ctx.producer(name)
        for item in range(chunks * rows):
            slot = p.acquire()
            ctx.load(name, slot, item)
            p.commit()
        p.tail()

    def consume(ctx):
        c = ctx.consumer(name)
        for row in range(rows):
            held = [c.wait() for _ in range(chunks)]
            for k, slot in enumerate(held):  # pass 1: the sum of squares
                assert ctx.read(name, slot) == row * chunks + k
            for k, slot in enumerate(held):  # pass 2: normalize, then release
                assert ctx.read(name, slot) == row * chunks + k
                c.release()

    agents = [Agent(load.spec.producer.name, produce)]
    agents += [Agent(f"{role.name}{unit}", consume) for unit in range(role.count)]
    return Protocol(f"{name}_held_rows", agents, [model])


def test_holding_a_row_of_chunks_is_deadlock_free_with_enough_stages():
    plan = make_plan(Op.RMSNORM, "bf16", 16384, StreamConfig(stages=3))  # 2 chunks per row, 1 ahead
    load = declare(plan).load
    assert plan.chunks == 2
    report = check(held_rows(load, plan.chunks, rows=3))
    assert report.ok and report.exhaustive, str(report)


def test_a_ring_shorter_than_a_row_deadlocks():
    """Why make_plan refuses stages < chunks: the consumer holds every slot and still waits for more."""
    load = declare(make_plan(Op.RMSNORM, "bf16", 16384, StreamConfig(stages=2))).load
    short = TmaLoadPipeline(replace(load.spec, stages=1))
    report = check(held_rows(short, chunks=2, rows=1))
    assert not report.ok
    assert report.findings[0].kind.name == "DEADLOCK", str(report)


def whole_kernel(decl, chunks: int, blocks: int, bug: str | None = None) -> Protocol:
    """Every synchronization the kernel makes, as the checker models it: the producer TMA-loads tiles; each
    consumer warpgroup waits for a row block's chunks (pass 1), then per chunk acquires a staging buffer,
    reads the stage again and writes its half of the output tile, publishes, releases the stage, and (the
    first warpgroup) TMA-stores the tile; finally the stored tiles are checked in global memory.
    ``bug``: "release_early" releases a stage before its second read; staging bugs ("no_fence", "no_wait")
    leave out a step of the staging handle."""
    from pipes.check import ModelBarrier
    from pipes.check.staging import StagingHandle

    load, staging = decl.load, decl.staging
    name, units = load.spec.name, load.spec.consumers[0].count
    sync = f"{staging.name}_sync"
    parts = tuple(range(units))

    def produce(ctx):
        p = ctx.producer(name)
        for item in range(chunks * blocks):
            slot = p.acquire()
            ctx.load(name, slot, item)
            p.commit()
        p.tail()

    def consumer(unit):
        def run(ctx):
            c = ctx.consumer(name)
            st = StagingHandle(ctx, staging.name, staging.stages, sync, None if bug == "release_early" else bug)
            for block in range(blocks):
                held = [c.wait() for _ in range(chunks)]
                for k, slot in enumerate(held):  # pass 1
                    assert ctx.read(name, slot) == block * chunks + k
                for k, slot in enumerate(held):  # pass 2
                    out = st.acquire()
                    if bug == "release_early":
                        c.release()
                    st.write(out, ctx.read(name, slot), part=unit)
                    st.publish()
                    if bug != "release_early":
                        c.release()
                    if unit == 0:
                        st.store(out, ("out", block * chunks + k), parts)
                    st.commit()
            st.tail()
            if unit == 0:
                ctx.bulk_wait_group(0)  # the kernel has ended
                for item in range(chunks * blocks):
                    for part in parts:
                        assert ctx.read_global((("out", item), part)) == item

        return run

    agents = [Agent("load", produce)] + [Agent(f"math{u}", consumer(u)) for u in range(units)]
    return Protocol("streaming_kernel", agents, [model_of(load)], barriers=[ModelBarrier(sync, units)])


@pytest.mark.parametrize(("n", "stages", "blocks"), [(8192, 2, 3), (16384, 3, 2)])
def test_the_whole_kernel_protocol_is_proven(n, stages, blocks):
    """Load ring, held chunks, staging ring and the epilogue barrier together: no deadlock, no hazard."""
    plan = make_plan(Op.RMSNORM, "bf16", n, StreamConfig(stages=stages, store_stages=2))
    decl = declare(plan)
    report = check(whole_kernel(decl, plan.chunks, blocks))
    assert report.ok and report.exhaustive, str(report)


@pytest.mark.parametrize("bug", ["release_early", "no_fence", "no_wait"])
def test_the_checker_catches_a_broken_kernel_protocol(bug):
    plan = make_plan(Op.RMSNORM, "bf16", 16384, StreamConfig(stages=3, store_stages=2))
    report = check(whole_kernel(declare(plan), plan.chunks, 2, bug))
    assert not report.ok, bug
