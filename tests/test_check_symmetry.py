"""Symmetry reduction: interchangeable agents are explored as one orbit, with the same verdicts."""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.check import Agent, FindingKind, ModelPipeline, Protocol, check, replay, stream_protocol
from pipes.check.catalogue import BAD, consumer_warpgroups, handoff
from pipes.check.symmetry import classes_of


def warps(count: int, items: int = 3) -> Protocol:
    spec = PipelineSpec(
        "mainloop",
        2,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, count=count),
        Completion.TRANSACTION_BYTES,
        tx_bytes=8192,
    )
    return stream_protocol(spec, items=items)


def test_eight_identical_consumer_warps_are_checked_exhaustively_as_one_orbit():
    report = check(warps(8), max_states=20_000)
    assert report.ok and report.exhaustive, str(report)
    assert report.states < 5_000
    assert report.symmetric == (tuple(f"mma{i}" for i in range(8)),)
    assert "symmetry: {mma0, mma1, mma2, mma3, mma4, mma5, mma6, mma7}" in str(report)
    plain = check(warps(8), max_states=20_000, symmetry=False)
    assert not plain.exhaustive  # the same protocol without symmetry does not fit in 4× the states


def test_orbits_count_fewer_states_with_the_same_verdict():
    for protocol in (warps(3), handoff(2, 3, consumers=2)):
        reduced, plain = check(protocol), check(protocol, symmetry=False)
        assert reduced.ok and plain.ok and reduced.exhaustive and plain.exhaustive
        assert reduced.states < plain.states


@pytest.mark.parametrize("entry", [e for e in BAD if classes_of(e.build().agents)], ids=lambda e: e.name)
def test_broken_protocols_give_the_same_kinds_of_finding_with_and_without_symmetry(entry):
    reduced, plain = check(entry.build()), check(entry.build(), symmetry=False)
    assert reduced.kinds() == plain.kinds()
    for finding in reduced.findings:  # every finding still comes with a concrete, replayable interleaving
        again = replay(entry.build(), finding.schedule)
        assert (again.kind, again.message) == (finding.kind, finding.message)


def test_a_race_seen_by_one_of_two_interchangeable_readers_is_found_as_without_symmetry():
    protocol = handoff(2, 3, consumers=2, notify_on="smem_read")
    reduced, plain = check(protocol), check(protocol, symmetry=False)
    assert FindingKind.READ_UNCOMMITTED in reduced.kinds() and reduced.kinds() == plain.kinds()
    assert reduced.symmetric == (("comm0", "comm1"),)


def test_agents_that_branch_on_their_name_are_not_merged():
    """Same function, but the agent's name decides what it does: the safety net drops the class."""
    spec = PipelineSpec("data", 2, Role("load"), Role("math", ArrivalUnit.WARP, count=2))

    def producer(ctx):
        p = ctx.producer("data")
        for item in range(2):
            ctx.write("data", p.acquire(), item)
            p.commit()
        p.tail()

    def consumer(ctx):
        c = ctx.consumer("data")
        for item in range(2):
            slot = c.wait()
            if ctx.name == "math1":  # only this one checks the value
                assert ctx.read("data", slot) == item
            c.release()

    protocol = Protocol(
        "named", [Agent("load", producer), Agent("math0", consumer), Agent("math1", consumer)], [ModelPipeline(spec)]
    )
    reduced, plain = check(protocol), check(protocol, symmetry=False)
    assert reduced.ok and reduced.exhaustive and reduced.symmetric == ()
    assert reduced.states == plain.states


def test_a_deadlock_among_interchangeable_warps_is_still_found():
    report = check(consumer_warpgroups(declared=2, running=1))
    assert FindingKind.DEADLOCK in report.kinds()
