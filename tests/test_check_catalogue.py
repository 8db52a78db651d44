"""Every catalogue protocol: correct ones check clean; broken ones give their finding, named, replayable."""

import pytest

from pipes.check import FindingKind, check, replay
from pipes.check.catalogue import BAD, ENTRIES, GOOD, handoff
from pipes.check.machine import Machine
from pipes.check.report import Severity


@pytest.mark.parametrize("entry", GOOD, ids=lambda e: e.name)
def test_correct_protocol_checks_clean_and_exhaustively(entry):
    report = check(entry.build())
    assert report.ok and not report.findings, str(report)  # no warnings either
    assert report.exhaustive
    assert report.states > 0 and report.transitions >= report.states - 1
    assert "OK" in str(report)


@pytest.mark.parametrize("entry", [e for e in BAD if e.twin], ids=lambda e: e.name)
def test_a_bad_entry_has_a_corrected_twin_that_is_clean(entry):
    twin = ENTRIES[entry.twin]
    assert not twin.bad, f"{entry.name}'s twin {twin.name} must be a correct entry"


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e.name)
def test_broken_protocol_is_caught_with_a_clear_message(entry):
    report = check(entry.build())
    # A warning names something harmless to this kernel: the report stays ok but carries it.
    assert report.ok is (entry.expect.severity is Severity.WARNING)
    assert report.findings
    accepted = {entry.expect, *entry.alternatives}
    finding = report.findings[0]
    assert finding.kind in accepted, str(report)
    expected = report.first(entry.expect) or finding
    for words in entry.mentions:
        assert words in expected.message, f"{words!r} not in: {expected.message}"
    assert finding.trace, "a finding carries its numbered interleaving"
    assert str(finding).count("\n    1. ") == 1


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e.name)
def test_every_finding_replays_from_its_schedule(entry):
    report = check(entry.build())
    for finding in report.findings:
        again = replay(entry.build(), finding.schedule)
        assert again is not None
        assert (again.kind, again.message, again.trace) == (finding.kind, finding.message, finding.trace)


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e.name)
def test_a_prefix_of_the_schedule_does_not_hit_the_finding(entry):
    """The interleaving is needed: stopping one move early does not yet show the same problem."""
    finding = check(entry.build()).findings[0]
    if not finding.schedule:
        assert finding.kind is FindingKind.ARRIVAL_COUNT  # found at the declaration, before exploring
        return
    earlier = replay(entry.build(), finding.schedule[:-1])
    assert earlier is None or (earlier.kind, earlier.message) != (finding.kind, finding.message)


def _hits_within(machine, world, moves_left, kind):
    labels, problem = machine.moves(world)
    if problem is None and not labels:
        problem = machine.end_problem(world)
    if problem is not None:
        return problem.kind == kind.name
    if moves_left == 0:
        return False
    for label in labels:
        outcome = machine.step(world, label)
        if outcome.problem is not None:
            if outcome.problem.kind == kind.name:
                return True
            continue
        if _hits_within(machine, outcome.world, moves_left - 1, kind):
            return True
    return False


@pytest.mark.parametrize(
    "name",
    [
        "notify_on_smem_read",
        "release_before_read",
        "tma_no_proxy_fence",
        "store_no_proxy_fence",
    ],
)
def test_finding_interleavings_are_shortest_in_moves(name):
    """Breadth-first search: no schedule with fewer moves reaches the same kind of finding."""
    entry = next(e for e in BAD if e.name == name)
    finding = check(entry.build()).findings[0]
    machine = Machine(entry.build())
    assert _hits_within(machine, machine.initial(), len(finding.schedule), finding.kind)
    assert not _hits_within(machine, machine.initial(), len(finding.schedule) - 1, finding.kind)


def test_store_complete_notify_makes_the_global_write_visible():
    """The good hand-off's traces show the write of each tile completing before its notification."""
    report = check(handoff(stages=2, tiles=2, lag=0), max_states=10_000)
    assert report.ok and report.exhaustive


def test_smem_read_variant_fails_at_every_lag():
    for lag in (0, 1):
        report = check(handoff(stages=2, tiles=2, lag=lag, notify_on="smem_read"))
        assert FindingKind.READ_UNCOMMITTED in report.kinds(), str(report)
