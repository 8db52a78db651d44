"""Cross-proxy write-after-read: a generic read must be fenced (fence.proxy.async) before the release
that lets a TMA load or bulk store rewrite the data (pipes.cute.proxy has the H100 finding)."""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role, SpecError
from pipes.check import END_OF_STREAM, Agent, Ctx, FindingKind, ModelPipeline, Protocol, check, model_of, replay
from pipes.check import memory as mem
from pipes.check.catalogue import tma_pipeline
from pipes.check.ops import Arrive, Fence
from pipes.check.protocol import compile_layout

K = mem.EMPTY_KNOWLEDGE
AGENTS = 2  # P (bit 0), C (bit 1); C's fenced bit is 2 * AGENTS + 1
C_READ, C_FENCED = 0b10, 1 << (2 * AGENTS + 1)


def names(mask):
    return ",".join(n for bit, n in enumerate(["P", "C"]) if mask >> bit & 1)


# -- the knowledge rule ---------------------------------------------------------------------------
def _read_by_consumer(fenced_bit=0):
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names, AGENTS)
    cell, consumer = mem.read("s", cell, producer, C_READ, "C", fenced_bit)
    return cell, consumer


def test_an_async_write_needs_the_generic_readers_fence():
    cell, consumer = _read_by_consumer()
    with pytest.raises(mem.Hazard, match="C's read of write #1 was not fenced") as err:
        mem.write("s", cell, consumer, "v2", "TMA", names, AGENTS)
    assert err.value.kind == "OVERWRITE_UNRELEASED"
    fenced = mem.fence(consumer, C_READ, C_FENCED)
    assert mem.lookup(fenced, "s") == (1, C_READ | C_FENCED)
    assert mem.write("s", cell, fenced, "v2", "TMA", names, AGENTS)[0].version == 2


def test_a_generic_write_needs_no_fence_and_an_async_read_is_fenced_at_once():
    cell, consumer = _read_by_consumer()
    assert mem.write("s", cell, consumer, "v2", "P", names)[0].version == 2
    cell, consumer = _read_by_consumer(fenced_bit=C_FENCED)
    assert cell.readers == C_READ  # the cell keeps the reader; the fence lives in knowledge
    assert mem.write("s", cell, consumer, "v2", "TMA", names, AGENTS)[0].version == 2


def test_a_fence_only_covers_the_agents_own_reads():
    other = (("t", 1, 0b01),)  # P's read of t, which C learned of
    assert mem.fence(other, C_READ, C_FENCED) is other


def test_an_unreleased_read_is_reported_as_unreleased_not_as_unfenced():
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names, AGENTS)
    cell, _ = mem.read("s", cell, producer, C_READ, "C")
    with pytest.raises(mem.Hazard, match="read of write #1 by C is not known to have finished"):
        mem.write("s", cell, producer, "v2", "TMA", names, AGENTS)


# -- the same rule through protocols ----------------------------------------------------------------
SPEC = PipelineSpec(
    "smem",
    1,
    Role("tma", ArrivalUnit.ELECTED_PER_WARP),
    Role("math", ArrivalUnit.WARPGROUP),
    Completion.TRANSACTION_BYTES,
    1024,
)


def _tma_protocol(consume):
    def produce(ctx):
        p = ctx.producer("smem")
        for item in range(3):
            ctx.load("smem", p.acquire(), item)
            p.commit()
        p.tail()

    def math(ctx):
        c = ctx.consumer("smem")
        for item in range(3):
            consume(ctx, c, item)

    return Protocol("proxy", [Agent("tma", produce), Agent("math", math)], [ModelPipeline(SPEC, fence_reads=False)])


def _fence_before_release(ctx, c, item):
    assert ctx.read("smem", c.wait()) == item
    ctx.fence_proxy_async()
    c.release()


def _fence_after_release(ctx, c, item):
    assert ctx.read("smem", c.wait()) == item
    c.release()
    ctx.fence_proxy_async()


def _async_read(ctx, c, item):
    assert ctx.read("smem", c.wait(), proxy="async") == item
    c.release()


def test_a_fence_before_the_release_orders_the_read_before_the_next_tma_load():
    report = check(_tma_protocol(_fence_before_release))
    assert report.ok and report.exhaustive, str(report)


def test_a_fence_after_the_release_does_not_help():
    protocol = _tma_protocol(_fence_after_release)
    report = check(protocol)
    finding = report.first(FindingKind.OVERWRITE_UNRELEASED)
    assert finding is not None, str(report)
    assert "math's read of write #1 was not fenced (fence.proxy.async)" in finding.message
    assert "fence_proxy_async: fence.proxy.async" in "\n".join(finding.trace)
    assert replay(protocol, finding.schedule).message == finding.message


def test_an_async_proxy_read_needs_no_fence():
    report = check(_tma_protocol(_async_read))
    assert report.ok and report.exhaustive, str(report)


def _release_ops(model):
    emitted = []
    ctx = Ctx("math", compile_layout(Protocol("p", [Agent("math", print)], [model])), emitted.append)
    consumer = ctx.consumer(model.name)
    consumer.wait()
    emitted.clear()
    consumer.release()
    return [type(op) for op in emitted]


def test_the_pipeline_fences_its_releases_by_default():
    assert _release_ops(ModelPipeline(SPEC)) == [Fence, Arrive]
    assert _release_ops(ModelPipeline(SPEC, fence_reads=False)) == [Arrive]
    arrival = ModelPipeline(PipelineSpec("data", 2, Role("load"), Role("math")))
    assert _release_ops(arrival) == [Arrive]  # no async-proxy writer reuses its slots
    good, bad = check(tma_pipeline(2, items=4)), check(tma_pipeline(2, items=4, fence_reads=False))
    assert good.ok and good.exhaustive, str(good)
    assert bad.findings[0].kind is FindingKind.OVERWRITE_UNRELEASED


def _rewritten_global(fence_reads, proxy="generic"):
    """Store→notify with one stage: every tile is TMA-stored to the same global buffer."""
    spec = PipelineSpec("out", 1, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)

    def epilogue(ctx):
        out = ctx.producer("out")
        for tile in range(3):
            slot = out.acquire()
            ctx.write("out", slot, tile)
            ctx.fence_proxy_async()
            ctx.store("out", slot, "C")
            out.commit(tile)
        out.tail()

    def comm(ctx):
        inbox = ctx.consumer("out")
        while (tile := ctx.read_meta("out", inbox.wait())) is not END_OF_STREAM:
            assert ctx.read_global("C", proxy) == tile
            inbox.release()
        inbox.release()

    model = ModelPipeline(spec, lag=0, fence_reads=fence_reads)
    return Protocol("rewritten_global", [Agent("epilogue", epilogue), Agent("comm", comm)], [model])


def test_a_bulk_store_over_a_generically_read_global_tile_needs_the_fence():
    assert check(_rewritten_global(True)).ok
    assert check(_rewritten_global(False, proxy="async")).ok
    report = check(_rewritten_global(False))
    finding = report.first(FindingKind.OVERWRITE_UNRELEASED)
    assert finding is not None, str(report)
    assert "epilogue's TMA store overwrites global['C'] while comm's read of write #1 was not fenced" in finding.message


# -- options and the bridge -----------------------------------------------------------------------
def test_fence_reads_is_validated():
    with pytest.raises(SpecError, match="fence_reads = 'no' is invalid: allowed True or False"):
        ModelPipeline(SPEC, fence_reads="no")
    arrival = PipelineSpec("data", 2, Role("load"), Role("math"))
    with pytest.raises(SpecError, match="fence_reads = False is invalid: allowed True unless completion"):
        ModelPipeline(arrival, fence_reads=False)
    assert ModelPipeline(arrival).fence_reads and not ModelPipeline(arrival).fences_releases


def test_a_bad_proxy_name_is_an_agent_error():
    def math(ctx):
        ctx.read_global("C", proxy="tma")

    report = check(Protocol("bad_proxy", [Agent("math", math)]))
    finding = report.first(FindingKind.AGENT_ERROR)
    assert finding is not None and "ProtocolError" in finding.message, str(report)
    assert "math: proxy = 'tma' is invalid: allowed one of ('generic', 'async')" in finding.message


class _Readers:
    def __init__(self, name):
        self.name = name


class _Declaration:
    def __init__(self, spec, readers=None, lag=None):
        self.spec, self.lag = spec, lag
        if readers is not None:
            self.readers = _Readers(readers)


def test_model_of_maps_the_declarations_slot_readers():
    assert model_of(_Declaration(SPEC)).fence_reads
    assert model_of(_Declaration(SPEC, "GENERIC")).fence_reads
    assert not model_of(_Declaration(SPEC, "ASYNC")).fence_reads
    store = PipelineSpec("out", 2, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)
    assert not model_of(_Declaration(store, "ASYNC", lag=1)).fence_reads
    arrival = PipelineSpec("data", 2, Role("load"), Role("math"))
    assert model_of(_Declaration(arrival, "ASYNC")).fence_reads  # nothing async rewrites its slots


@pytest.mark.parametrize("readers", ["GENERIC", "ASYNC"])
def test_stream_protocols_read_through_the_proxy_the_declaration_names(readers):
    from pipes.check import stream_protocol

    protocol = stream_protocol(_Declaration(SPEC, readers), items=4)
    report = check(protocol)
    assert report.ok and report.exhaustive, str(report)
