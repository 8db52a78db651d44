"""Ascend programs through ``pipes.check``'s exploration engine: every schedule, not a sample.

The simulator's :class:`~pipes.ascend.sim.machine.Machine` is the hardware model — per-pipe in-order
queues, binary flags keyed as the rules say, cross-core counters, ``PIPE_ALL`` and cross-core fences,
vector-clock hazards — and :func:`pipes.check.explore.search` is the engine that also proves CuTe
protocols: breadth-first over model states with a visited set, shortest interleavings, replay. A move
is one pipe executing its next instruction. Values are not computed (a data race is a hazard on every
schedule it is possible in, so the hazard check stands for the wrong results), which keeps states small
and hashable; so an instruction finishes as it starts — a finish only frees its pipe for what follows,
and the vector clocks judge hazards by what is ordered, not by when anything ended, so finishing early
loses no schedule's finding.

Partial-order reduction: a data op, or a ``pipe_barrier`` of one pipe, changes nothing another pipe can
observe except the access records that the happens-before check reads — and that check finds a race
whichever of the two accesses runs first. So whenever such an instruction can run, it is the only move
explored from that state (an *ample set* of one; it never disables anything and every program is
finite, so nothing is postponed forever). So is an enabled ``pipe_barrier(PIPE_ALL)`` (nothing else of its
core can move), a ``wait_flag`` whose flag no other pipe touches again, and a ``set_flag`` of an unset
flag no other pipe sets. Likewise the intra-core flags and ``PIPE_ALL`` of one core are
touched by no other core: when some core's enabled moves are all of that kind, only they are explored
from that state (the other cores' moves are independent of them and stay enabled). Only cross-core
operations make cores interleave. Deadlocks and the findings of every schedule are kept (persistent
sets), with fewer states. So a clean verdict here is a proof for the
recorded program (its trip counts); :meth:`Simulator.explore` keeps the sampled schedules, with values,
for programs too long to explore exhaustively.

Every finding, not only the first per path (``search(every_finding=True)``): each move's problems are all
recorded (two hazards of one move, a hazard and a double set — :meth:`AscendModel.step` returns the first
error and the rest in ``Outcome.more``), and a problem a move hits (a data hazard, a double set, a dropped
cross-core set) leaves a state the machine can go on from — the hazard is recorded, the two sets merge,
the dropped set is gone. The breadth-first search proper stops a path at an error (past a race the access
records can no longer be collected and the states multiply), but each time a move hits a finding not seen
before, the path goes on from there along one schedule to the end, recording what else it hits: a second
defect further down the same pipes, the deadlock a merged set or lost signal causes, a flag left set, a
``CREDITS_LEFT`` warning at exit. Findings are kept once per kind and site (the message with its numbers
stripped, as ``pipes.check`` keeps them), each with the shortest interleaving found. ``exhaustive`` keeps
its meaning: every schedule was explored up to its first error, so a clean exhaustive report is a proof; a
finding past another comes from the schedule that went on, not from every schedule past it.

Diagnoses become findings under the one naming of :data:`.diagnosis.FINDING_NAMES`, shared with
:meth:`Simulator.explore` (:attr:`.diagnosis.Diagnosis.name`): a deadlock (its unmatched waits folded in),
a double set, a full cross-core counter (``COUNTER_OVERFLOW``, the binary reading's lost signal included),
a data hazard (``READ_UNCOMMITTED`` for a read not ordered after a write, ``OVERWRITE_UNRELEASED``
otherwise), a flag left set or a framework flag disturbed (``UNBALANCED_EXIT``), credits left
(``CREDITS_LEFT``, a warning); what recording found (illegal pairs, bad ids: ``ILLEGAL_FLAG``; reserved
ids, shared source ids: ``FLAG_CAUTION``, a warning) is reported before exploring. There is no timing
here: the messages say what the schedule shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ...check.explore import replay_machine, search
from ...check.report import Finding, FindingKind, Report, Severity
from ...check.world import Outcome, Problem
from .counters import CrossCoreCounters, Dropped
from .diagnosis import Diagnoses, Kind
from .machine import Machine
from .machine_state import Access, Flag
from .program import Op, Recording
from .verdict import check_exit, explain_deadlock

_LOCAL = (Op.DATA, Op.BARRIER, Op.BARRIER_ALL)
"""Instructions that touch only their own pipe's order and the data: independent of every other pipe's."""
_CROSS = (Op.XSET, Op.XWAIT)
"""Instructions that touch another core's state (cross-core counters)."""


def _problems(found: Diagnoses) -> list[Problem]:
    """The machine's diagnoses of one move or end, as problems named as :data:`.diagnosis.FINDING_NAMES` says
    (the deadlock's unmatched waits folded into it); errors first."""
    diagnoses = list(found)
    unmatched = [d.message for d in diagnoses if d.kind is Kind.UNMATCHED_WAIT]
    deadlock = any(d.kind is Kind.DEADLOCK for d in diagnoses)
    problems = []
    for d in diagnoses:
        if d.kind is Kind.UNMATCHED_WAIT and deadlock:
            continue
        if d.name not in FindingKind.__members__:
            continue  # WRONG_RESULT: values are not computed here
        if d.kind is Kind.DEADLOCK and unmatched:
            problems.append(Problem(d.name, d.message + "\n  " + "\n  ".join(unmatched)))
        else:
            problems.append(Problem(d.name, d.message))
    return sorted(problems, key=lambda p: FindingKind[p.kind].severity is Severity.WARNING)


@dataclass(frozen=True)
class _Run:
    head: int
    inflight: tuple[tuple[int, int], ...]
    known: tuple[int, ...]
    issued: int
    finished: int


class AscendModel:
    """The explorer's hardware model of one recorded :class:`Simulator` program (a machine in the sense of
    :func:`pipes.check.explore.search`). A world is a hashable snapshot of the simulator machine's state."""

    def __init__(self, sim: Recording) -> None:
        sim.static_checks()
        self.sim = sim
        self.machine = Machine(sim, None, values=False)
        self._instr = {(p.index, i.seq): i for p in sim.programs for i in p.instrs}
        self.names = [run.name for run in self.machine.pipes]
        self._future = [self._suffix_keys(run.queue, sets_only=False) for run in self.machine.pipes]
        self._future_sets = [self._suffix_keys(run.queue, sets_only=True) for run in self.machine.pipes]
        self._future_cross = [self._suffix_cross(run.queue) for run in self.machine.pipes]
        self._is_cube = [sim.programs[run.core].core.name == "AIC" for run in self.machine.pipes]

    @staticmethod
    def _suffix_cross(queue: list) -> list[dict]:
        """Per queue position: how many cross-core sets and waits of each id the pipe has from there on."""
        counts: list[dict] = [{}] * (len(queue) + 1)
        for index in range(len(queue) - 1, -1, -1):
            instr = queue[index]
            counts[index] = counts[index + 1]
            if instr.op in _CROSS:
                counts[index] = dict(counts[index + 1])
                key = (instr.op, instr.event_id)
                counts[index][key] = counts[index].get(key, 0) + 1
        return counts

    def _cross_alone(self, index: int, instr: Any) -> bool:
        """Whether a cross-core op may be explored alone: no other pipe competes for its counter (another
        cube set into it, or a wait of the same core taking from it), and it cannot overflow whatever the
        order (so no schedule's lost signal is skipped). Vector-core sets, combined across cores, always
        interleave."""
        m = self.machine
        pipes = m.pipes
        cube_set = instr.op is Op.XSET and self._is_cube[index]
        if instr.op is Op.XSET and not cube_set:
            return False
        fid = instr.event_id
        for other, run in enumerate(pipes):
            if other == index:
                continue
            future = self._future_cross[other][run.head]
            if cube_set and self._is_cube[other] and future.get((Op.XSET, fid)):
                return False
            if instr.op is Op.XWAIT and run.core == instr.core and future.get((Op.XWAIT, fid)):
                return False
        # Overflow: the most the counter(s) involved can hold, whatever the order.
        if cube_set:
            targets = [(v.index, fid) for v in self.sim.vector_programs]
            producers = sum(
                self._future_cross[o][r.head].get((Op.XSET, fid), 0) for o, r in enumerate(pipes) if self._is_cube[o]
            )
        else:
            targets = [(instr.core, fid)]
            producing_cube = not self._is_cube[index]
            producers = sum(
                self._future_cross[o][r.head].get((Op.XSET, fid), 0)
                for o, r in enumerate(pipes)
                if self._is_cube[o] == producing_cube
            )
        held = max((len(m.cross.counters.get(t, ())) for t in targets), default=0)
        return held + producers <= m.cross.capacity

    def _suffix_keys(self, queue: list, sets_only: bool) -> list[frozenset]:
        """Per queue position: the flag keys the pipe's instructions from there on touch (or set)."""
        keys: list[frozenset] = [frozenset()] * (len(queue) + 1)
        for index in range(len(queue) - 1, -1, -1):
            instr = queue[index]
            touches = instr.op is Op.SET or (instr.op is Op.WAIT and not sets_only)
            key = self.machine.flag_key(instr.core, instr.src, instr.dst, instr.event_id) if touches else None
            keys[index] = keys[index + 1] | {key} if key is not None else keys[index + 1]
        return keys

    def _alone(self, index: int, instr: Any) -> bool:
        """Whether ``instr`` (next on pipe ``index``) may be explored alone: no other pipe can touch its flag
        before it runs (a wait whose flag no other pipe touches again; a set of an unset flag no other pipe
        sets)."""
        m = self.machine
        if instr.op in _LOCAL:
            return True
        if instr.op in _CROSS:
            return self._cross_alone(index, instr)
        if instr.op not in (Op.SET, Op.WAIT):
            return False
        key = m.flag_key(instr.core, instr.src, instr.dst, instr.event_id)
        future = self._future if instr.op is Op.WAIT else self._future_sets
        if instr.op is Op.SET and key in m.flags:
            return False
        return not any(key in future[other][run.head] for other, run in enumerate(m.pipes) if other != index)

    # -- snapshots -----------------------------------------------------------------------------------
    @staticmethod
    def _ref(instr: Any) -> tuple[int, int] | None:
        return None if instr is None else (instr.core, instr.seq)

    def _at(self, ref: tuple[int, int] | None) -> Any:
        return None if ref is None else self._instr[ref]

    def snapshot(self) -> tuple:
        m, ref = self.machine, self._ref
        runs = tuple(
            _Run(p.head, tuple(ref(i) for i, _ in p.inflight), tuple(p.known), p.issued, p.finished) for p in m.pipes
        )
        records = tuple(
            tuple((a.region, a.write, a.agent, a.counter, ref(a.instr)) for a in tensor) for tensor in m.records
        )
        flags = tuple(sorted(((k, tuple(f.clock), ref(f.setter), f.preset) for k, f in m.flags.items()), key=repr))
        merged = tuple(sorted(((k, tuple((ref(a), ref(b)) for a, b in v)) for k, v in m.merged.items()), key=repr))

        def signals(table: dict) -> tuple:
            return tuple(sorted((k, tuple((tuple(c), ref(i)) for c, i in q)) for k, q in table.items() if q))

        cross = (
            signals(m.cross.counters),
            signals(m.cross.partials),
            tuple((ref(d.instr), d.target, d.held) for d in m.cross.dropped),
        )
        fences = tuple(tuple(tuple(c) for c in core) for core in m.fence_clocks)
        return (runs, records, flags, merged, cross, fences, tuple(m.fence_seen))

    def restore(self, world: tuple) -> None:
        m, at = self.machine, self._at
        runs, records, flags, merged, cross, fences, fence_seen = world
        for p, r in zip(m.pipes, runs, strict=True):
            p.head, p.issued, p.finished = r.head, r.issued, r.finished
            p.inflight = deque((at(i), None) for i in r.inflight)
            p.known = list(r.known)
        m.records = [
            [Access(region, write, agent, counter, at(i)) for region, write, agent, counter, i in tensor]
            for tensor in records
        ]
        m.flags = {k: Flag(list(clock), at(setter), preset) for k, clock, setter, preset in flags}
        m.merged = {k: [(at(a), at(b)) for a, b in v] for k, v in merged}
        counters, partials, dropped = cross
        m.cross = CrossCoreCounters(
            m.cross.capacity,
            {k: deque((list(c), at(i)) for c, i in q) for k, q in counters},
            {k: deque((list(c), at(i)) for c, i in q) for k, q in partials},
            [Dropped(at(i), target, held) for i, target, held in dropped],
        )
        m.fence_clocks = [[list(c) for c in core] for core in fences]
        m.fence_seen = list(fence_seen)
        m.found = Diagnoses()
        m.steps = sum(p.head + p.finished for p in m.pipes)  # every move starts or finishes one instruction

    # -- the machine interface of pipes.check.explore.search ------------------------------------------
    def initial(self) -> tuple:
        self.machine = Machine(self.sim, None, values=False)
        return self.snapshot()

    def key(self, world: tuple) -> Hashable:
        return world

    def _enabled(self) -> list[str]:
        return [
            f"{run.name} starts"
            for run in self.machine.pipes
            if run.head < len(run.queue) and self.machine.can_start(run)
        ]

    def moves(self, world: tuple) -> tuple[list[str], Problem | None]:
        self.restore(world)
        labels = self._enabled()
        # Partial-order reduction (see the module notes): a data op or a one-pipe barrier alone; else the
        # moves of one core whose enabled moves are all within the core.
        by_core: dict[int, list[str]] = {}
        crossing: set[int] = set()
        for label in labels:
            index = self.names.index(label.rsplit(" ", 1)[0])
            run = self.machine.pipes[index]
            op = run.queue[run.head].op
            if self._alone(index, run.queue[run.head]):
                return [label], None
            by_core.setdefault(run.core, []).append(label)
            if op in _CROSS:
                crossing.add(run.core)
        for core, moves in by_core.items():
            if core not in crossing:
                return moves, None
        return labels, None

    def step_all(self, world: tuple, label: str) -> tuple[tuple, str, list[Problem]]:
        """One move: the next world, its trace line, and every problem it hits (errors first, warnings too)."""
        self.restore(world)
        name = label.rsplit(" ", 1)[0]
        run = self.machine.pipes[self.names.index(name)]
        line = run.queue[run.head]
        self.machine.start(run)
        # A finish only enables later steps (it writes values, which are not modelled, and frees the pipe):
        # finishing at once loses no schedule's hazard or deadlock, and halves the moves.
        while run.inflight:
            self.machine.finish(run)
        self.machine.collect()
        return self.snapshot(), f"{run.name}: {self.machine.where(line)}", _problems(self.machine.found)

    def step(self, world: tuple, label: str) -> Outcome:
        """The engine's move (:func:`pipes.check.explore.search`): the first error it hits, if any, and every
        other problem (further errors, warnings) in ``more``. The next world is kept either way: the machine
        goes on past what it found."""
        following, text, problems = self.step_all(world, label)
        first = next((p for p in problems if FindingKind[p.kind].severity is Severity.ERROR), None)
        more = tuple(p for p in problems if p is not first)
        return Outcome(following, [text], first, more)

    def end_problems(self, world: tuple) -> list[Problem]:
        self.restore(world)
        m = self.machine
        if all(p.head == len(p.queue) and not p.inflight for p in m.pipes):
            check_exit(m)
        else:
            explain_deadlock(m)
        return _problems(m.found)

    def end_problem(self, world: tuple) -> Problem | None:
        problems = self.end_problems(world)
        return problems[0] if problems else None

    def static_findings(self) -> list[Finding]:
        """What recording the program found (illegal pairs, ids), as findings before exploring."""
        found = []
        for d in self.sim.static:
            kind = FindingKind[d.name]
            found.append(Finding(kind, f"{d.kind.value}: {d.message}", (f"declared: {d.message}",), ()))
        return found


def prove(sim: Recording, *, max_states: int = 200_000, max_findings: int = 8, name: str = "ascend program") -> Report:
    """Explore every schedule of ``sim``'s recorded program (up to ``max_states`` model states) and report every
    distinct finding reachable (see the module notes); a clean, exhaustive report is a proof for this program."""
    return search(AscendModel(sim), name, max_states, max_findings=max_findings, every_finding=True)


def replay(sim: Recording, schedule: list[str] | tuple[str, ...], finding: Finding | None = None) -> Finding | None:
    """Re-run one of :func:`prove`'s interleavings (a finding's ``schedule``); the finding its last move (or
    the end) hits — the one of ``finding``'s kind and site when given and several show there, else the first."""
    return replay_machine(AscendModel(sim), schedule, finding, every_finding=True)


__all__ = ["AscendModel", "prove", "replay"]
