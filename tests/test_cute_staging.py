"""CPU tests of pipes.cute.TmaStoreStaging: compile the staging kernel for sm_90a and prove its PTX.

Orderings are proved on every path of the PTX control-flow graph (tests/ptx_check.py); each check also
runs on a kernel that lacks what it looks for, so a vacuous check fails.
"""

from __future__ import annotations

import re

import cute_kernels as ck
import cute_kernels_staging as cks
import pytest
from cutlass import Int32
from ptx_check import kernel_body, loops, path_states

from pipes import ArrivalUnit, Completion, PipelineSpec, Role, SpecError
from pipes.cute import TmaStoreStaging

GRID, TILES = 2, 10


def staging_ptx(stages: int, **kw) -> str:
    built = cks.build_staging(stages, **kw)
    compiled = ck.compile_fake(
        built.launcher, ck.fake_out(GRID * TILES * ck.TILE, ck.TILE), ck.fake_out(GRID, 2), Int32(TILES)
    )
    return ck.ptx_of(compiled)


# --- abstract states -------------------------------------------------------------------------------
def overwrite_transfer(in_flight: int):
    """none → pending (commit_group) → waited (wait_group.read ≤ in_flight) → synced (bar.sync)."""

    def transfer(ins: str, state: str) -> str:
        if ins.startswith("cp.async.bulk.commit_group"):
            return "pending"
        m = re.match(r"cp\.async\.bulk\.wait_group\.read\s+(\d+);", ins)
        if m and int(m.group(1)) <= in_flight and state == "pending":
            return "waited"
        if ins.startswith("bar.sync") and state == "waited":
            return "synced"
        return state

    return transfer


def unsafe_overwrites(ptx: str, in_flight: int) -> list[str]:
    """st.shared some path reaches after a commit without (.read wait, then barrier) in between."""
    reached = path_states(kernel_body(ptx), overwrite_transfer(in_flight), "none")
    return [i for i, states in reached if i.startswith("st.shared") and states - {"none", "synced"}]


def publish_transfer(ins: str, state: str) -> str:
    """clean → dirty (st.shared) → fenced (fence.proxy.async.shared::cta) → clean (bar.sync)."""
    if ins.startswith("st.shared"):
        return "dirty"
    if ins.startswith("fence.proxy.async.shared::cta") and state == "dirty":
        return "fenced"
    if ins.startswith("bar.sync") and state == "fenced":
        return "clean"
    return state


def unpublished_stores(ptx: str) -> list[str]:
    """TMA stores some path reaches with an st.shared not followed by (fence, then barrier)."""
    reached = path_states(kernel_body(ptx), publish_transfer, "clean")
    return [i for i, states in reached if i.startswith("cp.async.bulk.tensor") and states != {"clean"}]


def drain_transfer(ins: str, state: str) -> str:
    if ins.startswith("cp.async.bulk.commit_group"):
        return "pending"
    if re.match(r"cp\.async\.bulk\.wait_group\.read\s+0;", ins):
        return "drained"
    return state


def undrained_exits(ptx: str) -> list[str]:
    reached = path_states(kernel_body(ptx), drain_transfer, "none")
    return [i for i, states in reached if i.startswith(("ret", "exit")) and "pending" in states]


def carried_registers(body: list[str]) -> set[str]:
    """Registers a loop body reads before it (re)defines them: values carried from the last iteration."""
    defined: set[str] = set()
    carried: set[str] = set()
    for ins in body:
        regs = re.findall(r"%r\d+", ins)
        dest = regs[0] if regs and not ins.startswith(("st.", "cp.", "@", "setp")) else None
        for reg in regs[1:] if dest else regs:
            if reg not in defined:
                carried.add(reg)
        if dest:
            defined.add(dest)
    return carried & defined


def varying_smem_addresses(ptx: str) -> bool:
    """Whether some st.shared address inside a loop depends on a value carried around that loop."""
    for body in loops(kernel_body(ptx)):
        varying = set(carried_registers(body))
        for ins in body:
            regs = re.findall(r"%r\d+", ins)
            if ins.startswith("st.shared"):
                address = re.search(r"\[(%r\d+)", ins)
                if address and address.group(1) in varying:
                    return True
            elif regs and not ins.startswith(("st.", "cp.", "@", "setp")) and set(regs[1:]) & varying:
                varying.add(regs[0])
    return False


# --- the contract ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_acquire_waits_read_for_all_but_stages_minus_one_and_tail_drains(stages: int) -> None:
    ptx = staging_ptx(stages)
    waits = [int(n) for n in re.findall(r"cp\.async\.bulk\.wait_group\.read\s+(\d+);", ptx)]
    assert stages - 1 in waits and 0 in waits, waits
    assert set(waits) <= {stages - 1, 0}
    assert "cp.async.bulk.commit_group;" in ptx
    assert not re.search(r"cp\.async\.bulk\.wait_group\s+\d", ptx), "staging never waits for global writes"
    assert "mbarrier" not in ptx, "the staging object has no barriers of its own"
    assert unsafe_overwrites(ptx, stages - 1) == []
    assert unpublished_stores(ptx) == []
    assert undrained_exits(ptx) == []


@pytest.mark.parametrize(("stages", "batch"), [(2, 2), (4, 2), (4, 4)])
def test_a_batched_acquire_waits_deeper_and_pays_one_barrier_pair_per_batch(stages: int, batch: int) -> None:
    """``acquire(slots=batch)``: ``wait_group.read (stages - batch)`` and one barrier, ``batch`` buffers
    written, one fence and barrier, then ``batch`` stores each in its own bulk group."""
    ptx = staging_ptx(stages, batch=batch)
    waits = {int(n) for n in re.findall(r"cp\.async\.bulk\.wait_group\.read\s+(\d+);", ptx)}
    assert waits == {stages - batch, 0}, waits
    body = next(iter(loops(kernel_body(ptx))))
    assert sum(ins.startswith("bar.sync") for ins in body) == 2  # per batch, not per buffer
    assert sum(ins.startswith("fence.proxy.async.shared::cta") for ins in body) == 1
    assert sum(ins.startswith("cp.async.bulk.commit_group") for ins in body) == batch
    assert unsafe_overwrites(ptx, stages - batch) == []
    assert unpublished_stores(ptx) == []
    assert undrained_exits(ptx) == []


def test_a_batch_larger_than_the_ring_is_refused() -> None:
    with pytest.raises(
        SpecError, match=r"TmaStoreStaging 'epi_staging'\.acquire slots = 3 is invalid: allowed an int in \[1, 2\]"
    ):
        staging_ptx(2, batch=3)


def test_without_a_barrier_the_checks_see_the_race() -> None:
    """Negative control: the same kernel with sync=None (128 threads that never meet) fails both checks."""
    ptx = staging_ptx(2, sync=False)
    assert "bar.sync" not in ptx
    assert unsafe_overwrites(ptx, 1) != []
    assert unpublished_stores(ptx) != []


@pytest.mark.parametrize("loop", ["range", "while"])
def test_the_cursor_crosses_dynamic_loops(loop: str) -> None:
    """The slot is a loop-carried value: the staging addresses change from one iteration to the next."""
    ptx = staging_ptx(3, loop=loop)
    assert varying_smem_addresses(ptx)
    assert unsafe_overwrites(ptx, 2) == [] and unpublished_stores(ptx) == [] and undrained_exits(ptx) == []
    # control: with one buffer the slot is always 0 and no address varies
    assert not varying_smem_addresses(staging_ptx(1, loop=loop))


# --- construction errors ----------------------------------------------------------------------------
def test_stages_from_an_int_or_a_spec() -> None:
    spec = PipelineSpec("out", 3, Role("epi", ArrivalUnit.ELECTED_PER_WARP), Role("comm"), Completion.STORE_COMPLETE)
    assert TmaStoreStaging(spec).stages == 3
    assert TmaStoreStaging(2).stages == 2
    assert repr(TmaStoreStaging(2, name="c_tiles")) == "TmaStoreStaging(stages=2, name='c_tiles')"


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        (0, r"allowed an int in \[1, 64\]"),
        (65, r"allowed an int in \[1, 64\]"),
        (True, r"allowed an int in \[1, 64\], or an object with an int \.stages \(a PipelineSpec"),
        (2.0, r"allowed an int in \[1, 64\], or an object with an int \.stages"),
        ("2", r"allowed an int in \[1, 64\], or an object with an int \.stages"),
    ],
)
def test_bad_stages_name_the_field_value_and_range(value, allowed) -> None:
    with pytest.raises(SpecError, match=rf"TmaStoreStaging\.stages = {re.escape(repr(value))} is invalid: {allowed}"):
        TmaStoreStaging(value)


def test_bad_sync_and_name() -> None:
    with pytest.raises(SpecError, match=r"producer\(sync=1\) is invalid: allowed None or a barrier with a sync\(\)"):
        TmaStoreStaging(2).producer(sync=1)
    with pytest.raises(SpecError, match=r"TmaStoreStaging\.name = 'a b' is invalid"):
        TmaStoreStaging(2, name="a b")


def test_the_gemm_smoke_epilogue_stages_through_the_ring() -> None:
    """The GEMM smoke kernel (128 writers, one storing warp, a StoreNotifyPipeline that closes the bulk
    groups): one .read wait for 2 buffers, fence before the barrier before every TMA store, drained."""
    built = ck.build_gemm_smoke(staging_buffers=2)
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
    assert re.findall(r"cp\.async\.bulk\.wait_group\.read\s+(\d+);", ptx) == ["1", "0"]
    assert ptx.count("cp.async.bulk.commit_group;") == 1, "committed_by: only the store-notify commit groups"
    assert unpublished_stores(ptx) == []
    assert undrained_exits(ptx) == []


def test_committed_by_must_be_a_store_notify_pipeline() -> None:
    from pipes.cute import AsyncPipeline

    pipe = AsyncPipeline(PipelineSpec("p", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP)))
    with pytest.raises(
        SpecError,
        match=r"TmaStoreStaging\.committed_by = AsyncPipeline\(.*\) is invalid: allowed None "
        r"or a StoreNotifyPipeline",
    ):
        TmaStoreStaging(2, committed_by=pipe)


def test_staging_wait_is_deprecated_but_still_emits_its_wait() -> None:
    import cutlass.cute as cute

    from pipes.cute import staging_wait

    @cute.kernel
    def kern(out):
        staging_wait(3)
        out[0] = 1

    @cute.jit
    def launch(out, stream):
        kern(out).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

    with pytest.warns(DeprecationWarning, match="use pipes.cute.TmaStoreStaging"):
        ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4)))
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+2;", ptx)
