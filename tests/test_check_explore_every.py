"""``pipes.check.explore.search(every_finding=True)``: every problem a move hits, and a path past a new finding.

A model of one agent taking three steps: the first hits a race, the second another race and a warning, the
end a warning. A plain search stops the path at the first race; a search for every finding goes on.
"""

from __future__ import annotations

from pipes.check.explore import replay_machine, search
from pipes.check.report import FindingKind
from pipes.check.world import Outcome, Problem

FIRST = Problem("READ_UNCOMMITTED", "a reads x before its write")
SECOND = Problem("OVERWRITE_UNRELEASED", "a overwrites y under a read")
DURING = Problem("CREDITS_LEFT", "a left a credit on the way")
AT_END = Problem("CREDITS_LEFT", "a left credits at exit")


class Steps:
    """Worlds 0..3; the agent ``a`` moves from each to the next."""

    def initial(self) -> int:
        return 0

    def key(self, world: int) -> int:
        return world

    def static_findings(self) -> list:
        return []

    def moves(self, world: int) -> tuple[list[str], Problem | None]:
        return (["a"] if world < 3 else []), None

    def step(self, world: int, label: str) -> Outcome:
        line = [f"a: step {world + 1}"]
        if world == 0:
            return Outcome(1, line, FIRST)
        if world == 1:
            return Outcome(2, line, SECOND, (DURING,))
        return Outcome(world + 1, line)

    def end_problems(self, world: int) -> list[Problem]:
        return [AT_END]


def test_a_plain_search_stops_the_path_at_its_first_error():
    report = search(Steps(), "steps")
    assert [f.message for f in report.findings] == [FIRST.message]


def test_a_search_for_every_finding_goes_on_past_a_new_one():
    report = search(Steps(), "steps", every_finding=True)
    assert [(f.kind, f.message) for f in report.findings] == [
        (FindingKind.READ_UNCOMMITTED, FIRST.message),
        (FindingKind.OVERWRITE_UNRELEASED, SECOND.message),
        (FindingKind.CREDITS_LEFT, DURING.message),
        (FindingKind.CREDITS_LEFT, AT_END.message),
    ]
    assert [f.schedule for f in report.findings] == [("a",), ("a", "a"), ("a", "a"), ("a", "a", "a")]
    assert report.exhaustive


def test_every_finding_replays_from_its_schedule():
    report = search(Steps(), "steps", every_finding=True)
    for finding in report.findings:
        again = replay_machine(Steps(), finding.schedule, finding, every_finding=True)
        assert again is not None and (again.kind, again.message) == (finding.kind, finding.message)
        assert again.trace == finding.trace
