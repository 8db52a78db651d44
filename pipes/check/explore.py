"""Exploring a protocol's interleavings: exhaustive breadth-first search, seeded random runs, replay.

Breadth-first search with a visited set of model states gives every finding with a shortest
interleaving (in moves). When the state bound is hit the search stops being a proof; seeded random
runs then go deeper, each from the initial state to the end or a finding, reproducibly for a seed.
"""

from __future__ import annotations

import dataclasses
import random
import re
import time
from collections import deque
from collections.abc import Hashable
from typing import Any

from ..errors import ProtocolError
from .machine import Machine
from .ops import Crash
from .protocol import Protocol
from .report import Finding, FindingKind, Report, Severity
from .static import count_problems, settle
from .symmetry import SymmetryBroken
from .world import Problem, World


def _finding(problem: Problem, lines: list[str], schedule: list[str]) -> Finding:
    return Finding(FindingKind[problem.kind], problem.message, tuple(lines), tuple(schedule))


_CRASHED = "AGENT_ERROR"
"""An agent raised: its own finding, but the others go on (their hazards may be what made it raise)."""

_CAUSES = frozenset({"READ_UNCOMMITTED", "OVERWRITE_UNRELEASED"})
"""The data-race kinds that can hand an agent a wrong value (a stale or racy read)."""


def _crashed(machine: Any, world: Any) -> bool:
    """Whether an agent of ``world`` raised (its later worlds report no deadlock or exit state: the crash did it)."""
    trees = getattr(machine, "trees", None)
    if trees is None:
        return False
    return any(type(trees[a].op(n)) is Crash for a, n in enumerate(world.positions))


def _link_causes(found: list[Finding]) -> list[Finding]:
    """Name, in each agent error, the data races the checker finds on what that agent read.

    A value ``assert`` in an agent fails because of the value it read; the checker's race finding on that
    data is the cause. Both are kept: the race as its own finding, and the agent error names it."""
    races = [f for f in found if f.kind.name in _CAUSES]
    if not races:
        return found
    for index, finding in enumerate(found):
        if finding.kind.name != _CRASHED or not finding.message.startswith("agent "):
            continue
        agent = finding.message.split(" ", 2)[1]
        cells = {m.group(1) for line in finding.trace if (m := re.match(rf"{re.escape(agent)}: read (\S+\]) ", line))}
        causes = [r for r in races if f" {agent}" in r.message and any(cell in r.message for cell in cells)]
        if causes:
            note = "; ".join(f"{r.kind.name} ({r.message.split(':', 1)[0]})" for r in causes)
            message = (
                f"{finding.message} — the checker also finds a race on the data {agent} read, which can give it "
                f"the wrong value: {note}"
            )
            found[index] = dataclasses.replace(finding, message=message)
    return found


def _problems(outcome: Any) -> list[Problem]:
    """Every problem one move hit: its error first, then the rest (:attr:`pipes.check.world.Outcome.more`)."""
    return [outcome.problem, *outcome.more] if outcome.problem else list(outcome.more)


def _pick(problems: list[Problem], site: tuple[str, str] | None) -> Problem | None:
    """The problem at ``site`` among ``problems``, else the first (None: there are none)."""
    return next((p for p in problems if site is None or _site(p) == site), problems[0] if problems else None)


def _replay(
    machine: Machine,
    schedule: list[str] | tuple[str, ...],
    site: tuple[str, str] | None = None,
    every_finding: bool = False,
) -> Finding | None:
    """Re-run ``schedule``; the finding it hits (at the end, the one at ``site`` if several show there).

    An empty schedule first gives the static count check's finding at ``site`` (or its first), if any.
    ``every_finding``: the schedule goes on past the problems its moves hit (as a search for every finding
    went on), and the finding is the last move's problem at ``site`` (with the end's, when no move follows).
    """
    if not schedule:
        static = machine.static_findings()
        match = next((f for f in static if site is None or _site(Problem(f.kind.name, f.message)) == site), None)
        if match is not None:
            return match
    world = machine.initial()
    lines: list[str] = []
    hits: list[Problem] = []
    for done, label in enumerate(schedule):
        labels, problem = machine.moves(world)
        if problem:
            return _finding(problem, lines, list(schedule[:done]))
        if label not in labels:
            raise ProtocolError(f"move {done + 1} of the schedule ({label!r}) is not possible here; possible: {labels}")
        outcome = machine.step(world, label)
        lines.extend(outcome.lines)
        if every_finding:
            hits = _problems(outcome)
            if outcome.world is None:
                return _finding(_pick(hits, site), lines, list(schedule[: done + 1]))
        elif outcome.problem and not _goes_on(outcome, done + 1 < len(schedule)):
            return _finding(outcome.problem, lines, list(schedule[: done + 1]))
        world = outcome.world
    labels, problem = machine.moves(world)
    if problem is None and not labels:
        ends = [] if _crashed(machine, world) else machine.end_problems(world)
        if every_finding:
            hits = hits + ends
        else:
            problem = next((p for p in ends if _site(p) == site), ends[0] if ends else None)
    if every_finding:
        problem = _pick(hits + ([problem] if problem else []), site)
    return _finding(problem, lines, list(schedule)) if problem else None


def _goes_on(outcome: Any, more: bool) -> bool:
    """Whether exploring goes on past ``outcome``'s problem: an agent raised and ``more`` moves follow."""
    return more and outcome.problem.kind == _CRASHED and outcome.world is not None


def replay(protocol: Protocol, schedule: list[str] | tuple[str, ...], *, reduction: bool = True) -> Finding | None:
    """Re-run ``schedule`` (a finding's ``schedule``) from the initial state; return the finding it hits."""
    return _replay(Machine(protocol, reduction=reduction), schedule)


def replay_machine(
    machine: Any, schedule: list[str] | tuple[str, ...], finding: Finding | None = None, *, every_finding: bool = False
) -> Finding | None:
    """Re-run one of :func:`search`'s interleavings on ``machine`` (any hardware model); the finding it hits —
    the one at ``finding``'s kind and site when given and several show there. ``every_finding``: as the
    search that found it (the schedule goes on past the problems before its last move)."""
    site = None if finding is None else _site(Problem(finding.kind.name, finding.message))
    return _replay(machine, schedule, site, every_finding)


def _site(problem: Problem) -> tuple[str, str]:
    """A finding's kind and place: its message with the numbers (slots, phases, counts) stripped."""
    return problem.kind, re.sub(r"\d+", "#", problem.message)


def _replay_skipping(machine: Machine, schedule: list[str]) -> tuple[Problem | None, list[str]]:
    """Replay ``schedule``, skipping moves that are not possible; the problem hit and the moves made."""
    world = machine.initial()
    made: list[str] = []
    for label in schedule:
        labels, problem = machine.moves(world)
        if problem:
            return problem, made
        if label not in labels:
            continue
        made.append(label)
        outcome = machine.step(world, label)
        if outcome.problem and not _goes_on(outcome, True):
            return outcome.problem, made
        world = outcome.world
    labels, problem = machine.moves(world)
    if problem is None and not labels and not _crashed(machine, world):
        problem = machine.end_problem(world)
    return problem, made


def _shorten(machine: Machine, schedule: list[str], site: tuple[str, str], budget: int = 400) -> list[str]:
    """Drop chunks of moves (halves, then quarters, … single moves) while the same finding still shows.

    Random runs find deep bugs with long, meandering schedules; this cuts them down (not necessarily to
    the shortest) within ``budget`` replays.
    """
    best = list(schedule)
    chunk = max(1, len(best) // 2)
    while budget > 0:
        start = 0
        while start < len(best) and budget > 0:
            budget -= 1
            problem, made = _replay_skipping(machine, best[:start] + best[start + chunk :])
            if problem is not None and _site(problem) == site:
                best = made
            else:
                start += chunk
        if chunk == 1:
            break
        chunk = max(1, chunk // 2)
    return best


class _Findings:
    """Findings kept once per kind and site (numbers stripped), first found first."""

    def __init__(self, machine: Machine, limit: int, every_finding: bool = False) -> None:
        self.machine = machine
        self.limit = limit
        self.every_finding = every_finding
        self.items: dict[tuple[str, str], Finding] = {}

    @property
    def full(self) -> bool:
        return len(self.items) >= self.limit

    def add(self, problem: Problem, schedule: list[str], shorten: bool = False) -> bool:
        """Keep ``problem`` (found at the end of ``schedule``) unless its site is known; whether it was new."""
        key = _site(problem)
        if key in self.items or self.full:
            return False
        if shorten:
            schedule = _shorten(self.machine, schedule, key)
        finding = _replay(self.machine, schedule, key, self.every_finding)
        if finding is None or finding.kind.name != problem.kind:
            raise ProtocolError(f"internal: replaying {schedule} did not reproduce {problem.kind}")
        self.items[key] = finding
        return True

    def add_all(self, problems: list[Problem], schedule: list[str]) -> bool:
        """Keep each of ``problems`` (all hit by the last move of ``schedule``); whether any was new."""
        new = False
        for problem in problems:
            new = self.add(problem, schedule) or new
        return new


def _onward(machine: Any, world: Any, schedule: list[str], findings: _Findings) -> int:
    """Past a new finding: go on from ``world`` along one schedule (each world's first move) to the end,
    recording every problem met — a second defect, the deadlock the first one causes, a warning at exit.
    Returns the moves made."""
    made = 0
    while world is not None and not findings.full:
        labels, problem = machine.moves(world)
        if problem:
            findings.add(problem, schedule)
            break
        if not labels:
            findings.add_all([] if _crashed(machine, world) else machine.end_problems(world), schedule)
            break
        outcome = machine.step(world, labels[0])
        schedule = [*schedule, labels[0]]
        made += 1
        findings.add_all(_problems(outcome), schedule)
        world = outcome.world
    return made


def path_to(parents: dict[Hashable, tuple[Hashable, str] | None], key: Hashable) -> list[str]:
    """The moves that led to the state with ``key`` (each applied to its parent's representative)."""
    labels = []
    link = parents[key]
    while link is not None:
        key, label = link
        labels.append(label)
        link = parents[key]
    labels.reverse()
    return labels


def check(
    protocol: Protocol,
    *,
    max_states: int = 200_000,
    random_runs: int = 0,
    seed: int = 0,
    max_depth: int = 100_000,
    max_findings: int = 8,
    reduction: bool = True,
    symmetry: bool = True,
) -> Report:
    """Explore ``protocol``: every interleaving up to ``max_states`` distinct states, then
    ``random_runs`` seeded random runs of at most ``max_depth`` moves. Returns a :class:`Report`.

    ``reduction=False`` makes every operation its own move (for comparison; same findings, more states).
    ``symmetry=False`` counts states without merging those that differ only by which of several
    interchangeable agents is where (:mod:`pipes.check.symmetry`).
    """
    excluded: frozenset[tuple[int, ...]] = frozenset()
    while True:
        try:
            return _check(
                protocol, max_states, random_runs, seed, max_depth, max_findings, reduction, symmetry, excluded
            )
        except SymmetryBroken as broken:  # agents that looked interchangeable were not: again without them
            excluded = excluded | {broken.members}


def _check(
    protocol: Protocol,
    max_states: int,
    random_runs: int,
    seed: int,
    max_depth: int,
    max_findings: int,
    reduction: bool,
    symmetry: bool,
    excluded: frozenset[tuple[int, ...]],
) -> Report:
    started = time.perf_counter()
    machine = Machine(protocol, reduction=reduction, symmetry=symmetry, excluded=excluded)
    report = search(machine, protocol.name, max_states, random_runs, seed, max_depth, max_findings)
    report.seconds = time.perf_counter() - started
    return report


def search(
    machine: Any,
    name: str,
    max_states: int = 200_000,
    random_runs: int = 0,
    seed: int = 0,
    max_depth: int = 100_000,
    max_findings: int = 8,
    *,
    every_finding: bool = False,
) -> Report:
    """The exploration engine, for any hardware model: breadth-first over ``machine``'s worlds (by
    ``machine.key``), then seeded random runs. ``machine`` offers ``initial()``, ``moves(world)``,
    ``step(world, label)``, ``end_problems(world)``, ``key(world)`` and ``static_findings()`` —
    :class:`pipes.check.machine.Machine` for pipeline protocols, the Ascend model for simulator programs.

    A path stops at its first error (past a race, what the model tracks is no longer sound and the states
    multiply). ``every_finding``: the breadth-first search also records every other problem a move hits
    (:attr:`pipes.check.world.Outcome.more`: further errors, warnings), and a path whose move hits a new
    finding goes on from there along one schedule to its end (as long as the model has a next world),
    recording what else it meets; findings come errors first. ``exhaustive`` keeps its meaning — every
    schedule explored up to its first error — and a finding past another comes from the schedule that
    went on, not from every schedule past it."""
    started = time.perf_counter()
    key = machine.key
    findings = _Findings(machine, max_findings, every_finding)
    # The arrival-count check's findings wait for the search (pipes.check.static.settle): it confirms them,
    # contradicts them (a note) or was bounded (a risk). Other models' static findings stand as they are.
    counts = isinstance(machine, Machine)
    before = count_problems(machine) if counts else []
    for finding in machine.static_findings():
        if counts and finding.kind is FindingKind.ARRIVAL_COUNT:
            continue
        findings.items.setdefault(_site(Problem(finding.kind.name, finding.message)), finding)
    initial = machine.initial()
    parents: dict[Hashable, tuple[Hashable, str] | None] = {key(initial): None}
    queue = deque([(initial, key(initial))]) if max_states > 0 else deque()
    exhaustive = max_states > 0
    transitions = 0
    while queue and not findings.full:
        world, here = queue.popleft()
        labels, problem = machine.moves(world)
        if problem is None and not labels:
            for end in [] if _crashed(machine, world) else machine.end_problems(world):
                findings.add(end, path_to(parents, here))
            continue
        if problem:
            findings.add(problem, path_to(parents, here))
            continue
        for label in labels:
            outcome = machine.step(world, label)
            transitions += 1
            if outcome.problem or (every_finding and outcome.more):
                schedule = [*path_to(parents, here), label]
                if every_finding:
                    new = findings.add_all(_problems(outcome), schedule)
                else:
                    findings.add(outcome.problem, schedule)
                if outcome.problem and not _goes_on(outcome, True):
                    if every_finding and new:
                        transitions += _onward(machine, outcome.world, schedule, findings)
                    continue
            following = outcome.world
            there = key(following)
            if there in parents:
                continue
            if len(parents) >= max_states:
                exhaustive = False
                continue
            parents[there] = (here, label)
            queue.append((following, there))
    if queue:
        exhaustive = False
    seen = set(parents)
    rng = random.Random(seed)
    for _ in range(random_runs):
        transitions += _random_run(machine, initial, rng, max_depth, seen, findings)
    found = _link_causes(list(findings.items.values()))
    if every_finding:
        found.sort(key=lambda f: f.severity is Severity.WARNING)
    if counts:
        errors, notes = settle(machine, before, found, exhaustive, len(parents), max_states)
        found = errors + found + notes
    symmetry = getattr(machine, "symmetry", None)
    classes = symmetry.classes if symmetry is not None else []
    symmetric = tuple(tuple(machine.names[a] for a in members) for members in classes)
    return Report(
        protocol=name,
        findings=found,
        states=len(seen),
        transitions=transitions,
        exhaustive=exhaustive,
        max_states=max_states,
        random_runs=random_runs,
        seed=seed if random_runs else None,
        seconds=time.perf_counter() - started,
        agent_runs=sum(tree.runs for tree in getattr(machine, "trees", ())),
        symmetric=symmetric,
    )


def _random_run(
    machine: Machine, world: World, rng: random.Random, max_depth: int, seen: set, findings: _Findings
) -> int:
    schedule: list[str] = []
    for _ in range(max_depth):
        seen.add(machine.key(world))
        labels, problem = machine.moves(world)
        if problem is None and not labels:
            for end in [] if _crashed(machine, world) else machine.end_problems(world):
                findings.add(end, schedule, shorten=True)
            break
        if problem:
            findings.add(problem, schedule, shorten=True)
            break
        label = rng.choice(labels)
        schedule.append(label)
        outcome = machine.step(world, label)
        if outcome.problem:
            findings.add(outcome.problem, schedule, shorten=True)
            if not _goes_on(outcome, True):
                break
        world = outcome.world
    return len(schedule)
