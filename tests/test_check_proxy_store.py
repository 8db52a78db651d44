"""Cross-proxy read-after-write: shared memory written with ordinary stores (generic proxy) and then read
by a TMA store (async proxy) needs fence.proxy.async in the writing thread, before it issues the store or
before the release that hands the data to the thread that does."""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.check import END_OF_STREAM, Agent, FindingKind, ModelPipeline, Protocol, check, replay
from pipes.check import memory as mem
from pipes.check.catalogue import ENTRIES, handoff

K = mem.EMPTY_KNOWLEDGE
AGENTS = 2  # P (agent 0), C (agent 1)
P_WRITER, C_WRITER, WRITE_FENCED = 1 << (3 * AGENTS), 1 << (3 * AGENTS + 1), 1 << (4 * AGENTS)
P_FENCE = (0b01, 1 << (2 * AGENTS), P_WRITER, WRITE_FENCED)
C_FENCE = (0b10, 1 << (2 * AGENTS + 1), C_WRITER, WRITE_FENCED)


def names(mask):
    return ",".join(n for bit, n in enumerate(["P", "C"]) if mask >> bit & 1)


# -- the knowledge rule ---------------------------------------------------------------------------
def test_a_generic_write_needs_its_writers_fence_before_an_async_read():
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names, writer_bit=P_WRITER)
    assert mem.lookup(producer, "s") == (1, P_WRITER)
    with pytest.raises(mem.Hazard, match=r"C's TMA store reads s \(write #1 by P\) through the async proxy") as err:
        mem.require_fenced_write("s", producer, "C's TMA store", AGENTS, names)
    assert err.value.kind == "READ_UNCOMMITTED"
    assert "not fenced (fence.proxy.async) before the store was issued" in err.value.message
    fenced = mem.fence(producer, *P_FENCE)
    assert mem.lookup(fenced, "s") == (1, P_WRITER | WRITE_FENCED)
    mem.require_fenced_write("s", fenced, "C's TMA store", AGENTS, names)


def test_only_the_writer_can_fence_its_write():
    _, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names, writer_bit=P_WRITER)
    assert mem.fence(producer, *C_FENCE) is producer
    with pytest.raises(mem.Hazard):
        mem.require_fenced_write("s", mem.fence(producer, *C_FENCE), "C's TMA store", AGENTS, names)


def test_an_async_write_needs_no_fence():
    _, loaded = mem.write("s", mem.UNWRITTEN, K, "v1", "the TMA load", names, AGENTS)
    mem.require_fenced_write("s", loaded, "C's TMA store", AGENTS, names)


def test_a_fenced_fact_dominates_an_unfenced_one_of_the_same_version():
    _, unfenced = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names, writer_bit=P_WRITER)
    fenced = mem.fence(unfenced, *P_FENCE)
    for joined in (mem.join(unfenced, fenced), mem.join(fenced, unfenced)):
        assert joined == fenced
    assert mem.learn(unfenced, "s", 1, P_WRITER | WRITE_FENCED) == fenced
    assert mem.learn(fenced, "s", 1, P_WRITER) is fenced


# -- the same rule through protocols ----------------------------------------------------------------
STORE = PipelineSpec("out", 2, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)


def _epilogue_protocol(fence_at):
    """``fence_at``: "before_store" (correct), "after_store", or None."""

    def epilogue(ctx):
        out = ctx.producer("out")
        for tile in range(3):
            slot = out.acquire()
            ctx.write("out", slot, tile)
            if fence_at == "before_store":
                ctx.fence_proxy_async()
            ctx.store("out", slot, ("C", tile))
            if fence_at == "after_store":
                ctx.fence_proxy_async()
            out.commit(tile)
        out.tail()

    def comm(ctx):
        inbox = ctx.consumer("out")
        while (tile := ctx.read_meta("out", inbox.wait())) is not END_OF_STREAM:
            assert ctx.read_global(("C", tile)) == tile
            inbox.release()
        inbox.release()

    agents = [Agent("epi", epilogue), Agent("comm", comm)]
    return Protocol(f"epilogue_{fence_at}", agents, [ModelPipeline(STORE, lag=1)])


def test_a_fence_between_the_write_and_the_store_passes():
    report = check(_epilogue_protocol("before_store"))
    assert report.ok and report.exhaustive, str(report)


@pytest.mark.parametrize("fence_at", [None, "after_store"])
def test_no_fence_or_a_fence_after_the_store_is_issued_fails(fence_at):
    protocol = _epilogue_protocol(fence_at)
    report = check(protocol)
    finding = report.findings[0]
    assert finding.kind is FindingKind.READ_UNCOMMITTED, str(report)
    assert finding.message == (
        "epi's TMA store reads out.slot[0] (write #1 by epi) through the async proxy, but that generic write "
        "was not fenced (fence.proxy.async) before the store was issued: the store may read stale shared memory"
    )
    assert replay(protocol, finding.schedule).message == finding.message


def test_a_tile_written_by_a_tma_load_is_stored_without_a_fence():
    spec = PipelineSpec(
        "smem", 2, Role("tma", ArrivalUnit.ELECTED_PER_WARP), Role("epi"), Completion.TRANSACTION_BYTES, 1024
    )

    def loads(ctx):
        p = ctx.producer("smem")
        for item in range(4):
            ctx.load("smem", p.acquire(), item)
            p.commit()
        p.tail()

    def forward(ctx):
        c = ctx.consumer("smem")
        for item in range(4):
            ctx.store("smem", c.wait(), ("C", item))  # TMA store straight from the TMA-loaded slot
            ctx.bulk_commit_group()
            ctx.bulk_wait_group(0)
            assert ctx.read_global(("C", item)) == item
            c.release()

    protocol = Protocol("forward", [Agent("tma", loads), Agent("epi", forward)], [ModelPipeline(spec)])
    report = check(protocol)
    assert report.ok and report.exhaustive, str(report)


def _staged_by_another_thread(fence_at):
    """A math thread stages the tile and hands it over (ARRIVAL pipeline); the epilogue thread TMA-stores it.
    ``fence_at``: "before_release" (correct: before the arrival that publishes the write) or "after_release"."""
    spec = PipelineSpec("tile", 1, Role("math"), Role("epi"))

    def math(ctx):
        p = ctx.producer("tile")
        for item in range(2):
            slot = p.acquire()
            ctx.write("tile", slot, item)
            if fence_at == "before_release":
                ctx.fence_proxy_async()
            p.commit()
            if fence_at == "after_release":
                ctx.fence_proxy_async()
        p.tail()

    def epilogue(ctx):
        c = ctx.consumer("tile")
        for item in range(2):
            ctx.store("tile", c.wait(), ("C", item))
            ctx.bulk_commit_group()
            ctx.bulk_wait_group(0)
            c.release()

    agents = [Agent("math", math), Agent("epi", epilogue)]
    return Protocol(f"staged_{fence_at}", agents, [ModelPipeline(spec)])


def test_another_writing_thread_must_fence_before_its_release():
    good = check(_staged_by_another_thread("before_release"))
    assert good.ok and good.exhaustive, str(good)
    protocol = _staged_by_another_thread("after_release")
    finding = check(protocol).findings[0]
    assert finding.kind is FindingKind.READ_UNCOMMITTED
    assert "epi's TMA store reads tile.slot[0] (write #1 by math) through the async proxy" in finding.message
    assert replay(protocol, finding.schedule).message == finding.message


def test_the_catalogue_hand_off_fences_and_its_unfenced_variant_is_caught():
    assert check(handoff()).ok
    entry = ENTRIES["store_no_proxy_fence"]
    assert entry.bad and entry.expect is FindingKind.READ_UNCOMMITTED
    assert check(handoff(fence_writes=False)).findings[0].kind is FindingKind.READ_UNCOMMITTED
