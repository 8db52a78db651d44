"""pipes.check memory-model findings: agent errors next to the race that caused them, an arrive from the
wrong side of a pipeline, write-write races on flag words, and the scope of an mbarrier wait."""

from __future__ import annotations

from pipes import ArrivalUnit, PipelineSpec, Role
from pipes.check import Agent, FindingKind, ModelCounter, ModelPipeline, Protocol, Scope, check

SYS = Scope.SYSTEM


# -- 1. an agent's own assertion next to the checker's diagnosis ---------------------------------------
def unsynchronised_reader(synchronised: bool) -> Protocol:
    def writer(ctx):
        ctx.write_global("data", 1)
        ctx.store_counter("flag", 1, scope=SYS)

    def reader(ctx):
        if synchronised:
            ctx.wait_counter("flag", 1, scope=SYS)
        got = ctx.read_global("data")
        assert got == 1, f"read {got}, expected 1"

    agents = [Agent("w", writer, device=0), Agent("r", reader, device=0)]
    return Protocol("unsynchronised", agents, [], counters=[ModelCounter("flag")], initial={"data": 0})


def test_an_assertion_on_racy_data_comes_with_the_race_that_caused_it():
    report = check(unsynchronised_reader(synchronised=False))
    kinds = [f.kind for f in report.findings]
    assert FindingKind.READ_UNCOMMITTED in kinds and FindingKind.AGENT_ERROR in kinds, report
    error = report.first(FindingKind.AGENT_ERROR).message
    assert "AssertionError: read 0, expected 1" in error
    assert "the checker also finds a race on the data r read" in error and "READ_UNCOMMITTED (r reads" in error
    # The stale read's own cause: the writer overwrites the value r read with nothing ordering that read first.
    assert FindingKind.OVERWRITE_UNRELEASED in kinds and "OVERWRITE_UNRELEASED (w overwrites" in error


def test_a_synchronised_reader_is_clean():
    report = check(unsynchronised_reader(synchronised=True))
    assert report.ok and report.exhaustive, report


# -- 2. an arrive from the wrong side of a pipeline ---------------------------------------------------
SPEC = PipelineSpec("data", 2, Role("load"), Role("mma", ArrivalUnit.THREAD))


def test_a_consumer_arriving_on_a_full_barrier_is_named():
    def producer(ctx):
        p = ctx.producer("data")
        for item in range(2):
            slot = p.acquire()
            ctx.write("data", slot, item)
            p.commit()
        p.tail()

    def consumer(ctx):
        c = ctx.consumer("data")
        slot = c.wait()
        ctx.read("data", slot)
        ctx.arrive("data.full[0]")  # the wrong side: only the producer commits a fill
        c.release()

    protocol = Protocol("wrong_side", [Agent("p0", producer), Agent("c0", consumer)], [ModelPipeline(SPEC)])
    report = check(protocol)
    finding = report.first(FindingKind.WRONG_ROLE)
    assert finding is not None, report
    assert finding.message.startswith(
        "c0 (consumer 'mma' of data) arrives on data.full[0], which only the producer 'load' arrives on"
    ), finding.message


# -- 3. a write-write race on a flag word -------------------------------------------------------------
def two_storers(ordered: bool) -> Protocol:
    def first(ctx):
        ctx.store_counter("flag", 1, scope=SYS)

    def second(ctx):
        if ordered:
            ctx.wait_counter("flag", 1, scope=SYS)  # acquires the first store's release
        ctx.store_counter("flag", 2, scope=SYS)

    agents = [Agent("a", first, device=0), Agent("b", second, device=0)]
    return Protocol("two_storers", agents, [], counters=[ModelCounter("flag")])


def test_two_unordered_stores_to_a_flag_word_race():
    report = check(two_storers(ordered=False))
    finding = report.first(FindingKind.FLAG_RACE)
    assert finding is not None, report
    assert "counter flag:" in finding.message and "stores" in finding.message
    assert "a (= 1)" in finding.message or "b (= 2)" in finding.message, finding.message


def test_a_store_ordered_after_the_other_is_clean():
    report = check(two_storers(ordered=True))
    assert report.ok and report.exhaustive, report
