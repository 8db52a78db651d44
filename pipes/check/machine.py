"""The transitions between worlds: which moves a world allows, and what one move makes of it.

:class:`Machine` lists the moves possible in a :class:`~pipes.check.world.World` (an agent's next
synchronising operation, or a TMA load landing) and applies one through :class:`~pipes.check.move.Move`.

An agent's move runs its next synchronising operation and then every local operation after it (data
accesses, bulk-copy bookkeeping), up to its next synchronising one (``reduction=True``). Local
operations commute with every other agent's operations up to hazard detection, and hazards are judged
by happens-before, so this loses no finding and shrinks the state space a lot.
"""

from __future__ import annotations

from typing import Any

from . import barrier as mb
from . import bulk
from . import counter as mc
from . import memory as mem
from .agent_tree import ROOT
from .facts import MachineFacts
from .move import Move
from .ops import (
    CounterTake,
    CounterWait,
    Crash,
    Done,
    FlagWait,
    GridDependencyWait,
    Start,
    TryWait,
    Wait,
)
from .protocol import Protocol
from .symmetry import Symmetry, classes_of
from .world import Outcome, Problem, World


class Machine(MachineFacts):
    """Moves and their effects for one protocol (the facts it reads are a :class:`~pipes.check.facts.MachineFacts`)."""

    def __init__(
        self,
        protocol: Protocol,
        reduction: bool = True,
        max_ops: int = 20_000,
        symmetry: bool = True,
        excluded: frozenset[tuple[int, ...]] = frozenset(),
    ) -> None:
        super().__init__(protocol, reduction, max_ops)
        classes = classes_of(protocol.agents, excluded) if symmetry else []
        #: Interchangeable agents explored as one orbit (None: every agent counts on its own).
        self.symmetry = Symmetry(self, classes) if classes else None

    # -- worlds ----------------------------------------------------------------------------------
    def initial(self) -> World:
        count = len(self.names)
        intern = self.intern  # every world's barriers, cells, knowledge and counters are interned: see key()
        return World(
            positions=(ROOT,) * count,
            barriers=tuple(intern(mb.BarrierState.fresh(e)) for e in self.layout.barrier_expected),
            flags=tuple(mb.FlagState.fresh(s) for s in self.layout.flag_initially_set),
            cells=intern(
                tuple(sorted((cell, mem.CellState(0, 0, value, True)) for cell, value in self._initial_cells()))
            ),
            knowledge=(intern(mem.EMPTY_KNOWLEDGE),) * count,
            engines=(bulk.IDLE,) * count,
            loads=(),
            counters=tuple(intern(mc.CounterState.fresh(c.initial)) for c in self.layout.counters),
        )

    def _initial_cells(self) -> list[tuple[str, Any]]:
        from .ctx_data import global_cell

        return [(global_cell(key), value) for key, value in self.protocol.initial]

    # -- what can happen ----------------------------------------------------------------------------
    def moves(self, world: World) -> tuple[list[str], Problem | None]:
        """The labels of the moves possible in ``world`` (agents first, then landing loads), or a problem
        the world already shows (a waiter that can no longer see its phase)."""
        labels = []
        for agent, node in enumerate(world.positions):
            op = self.trees[agent].op(node)
            kind = type(op)
            if kind is Wait or kind is TryWait:
                bar = world.barriers[op.barrier]
                late = mb.late_wait_problem(bar, op.parity, op.completion)
                if late:
                    return [], Problem("PHASE_ALIASING", f"{op.barrier_name}: {op.who}, in {op.call}: {late}")
                if kind is TryWait or mb.passes(bar, op.parity):
                    labels.append(self.names[agent])
            elif kind is FlagWait:
                if mb.flag_ready(world.flags[op.flag]):
                    labels.append(self.names[agent])
            elif kind is CounterTake:
                if mc.can_take(world.counters[op.counter]):
                    labels.append(self.names[agent])
            elif kind is CounterWait:
                if op.passes(world.counters[op.counter].value):
                    labels.append(self.names[agent])
            elif kind is Start:
                # A dependent grid starts once every earlier grid's agent triggered or finished.
                earlier = self.earlier[agent]
                if not earlier or earlier & ~(world.launched | self.finished(world)) == 0:
                    labels.append(self.names[agent])
            elif kind is GridDependencyWait:
                if self.earlier[agent] & ~self.finished(world) == 0:
                    labels.append(self.names[agent])
            elif kind is not Done and kind is not Crash:
                labels.append(self.names[agent])
        labels.extend(load.label for load in world.loads)
        return labels, None

    def end_problem(self, world: World) -> Problem | None:
        """For a world with no move: the deadlock, or what is unbalanced at exit (None if all is clean)."""
        problems = self.end_problems(world)
        return problems[0] if problems else None

    def end_problems(self, world: World) -> list[Problem]:
        """For a world with no move: the deadlock, or the errors then the warnings at exit (empty if clean)."""
        ops = [self.trees[a].op(n) for a, n in enumerate(world.positions)]
        if not all(type(op) is Done for op in ops):
            return [Problem("DEADLOCK", self._deadlock_message(world, ops))]
        found = []
        problems = self._exit_problems(world)
        if problems:
            found.append(Problem("UNBALANCED_EXIT", "unbalanced state at exit: " + "; ".join(problems)))
        return found + self._exit_warnings(world)

    # -- one move ----------------------------------------------------------------------------------
    def step(self, world: World, label: str) -> Outcome:
        scratch = Move(self, world)
        try:
            if label in self.agent_index:
                scratch.run_agent(self.agent_index[label])
            else:
                scratch.land(label)
        except mem.Hazard as hazard:
            return Outcome(None, scratch.lines, Problem(hazard.kind, hazard.message))
        return Outcome(scratch.freeze(), scratch.lines, scratch.problem)

    def static_findings(self) -> list[Any]:
        """What is wrong before exploring: the static arrival-count check (:mod:`pipes.check.static`)."""
        from .report import Finding, FindingKind
        from .static import count_problems

        return [Finding(FindingKind.ARRIVAL_COUNT, p.message, p.lines, ()) for p in count_problems(self)]

    def key(self, world: World) -> Any:
        """What the search keeps visited: the world, or its canonical key under symmetry.

        Without symmetry the interned parts (barriers, cells, knowledge, counters: one object per value, see
        :meth:`Move.freeze <pipes.check.move.Move.freeze>`) enter by identity. Two worlds get equal keys
        exactly when they are equal, and a key hashes without walking every agent's knowledge again — that
        walk was most of the search's time on protocols of dozens of agents.
        """
        if self.symmetry is not None:
            return self.symmetry.key(world)
        return (
            world.positions,
            tuple(map(id, world.barriers)),
            world.flags,
            id(world.cells),
            tuple(map(id, world.knowledge)),
            world.engines,
            world.loads,
            tuple(map(id, world.counters)),
            world.launched,
            world.peeks,
        )

    # -- messages ----------------------------------------------------------------------------------
    def _deadlock_message(self, world: World, ops: list[Any]) -> str:
        lines = ["deadlock: no agent can move"]
        for agent, op in enumerate(ops):
            name = self.names[agent]
            if type(op) is Done:
                lines.append(f"  {name}: finished")
            elif type(op) is Wait:
                bar = world.barriers[op.barrier]
                what = "" if op.completion is None else f" for completion #{op.completion}"
                lines.append(
                    f"  {op.who}: blocked in {op.call} on {op.barrier_name}, waiting for parity {op.parity}{what} — "
                    f"{op.barrier_name}: {mb.status(bar)}{mb.parity_hint(op.parity, op.completion, bar)}"
                )
            elif type(op) is FlagWait:
                lines.append(f"  {op.who}: blocked in {op.call} on flag {op.flag_name}, which is not set")
            elif type(op) is CounterTake:
                lines.append(f"  {op.who}: blocked in {op.call} on counter {op.counter_name}, which is 0")
            elif type(op) is GridDependencyWait:
                waiting = [self.names[b] for b in range(len(self.names)) if self.earlier[agent] >> b & 1]
                lines.append(
                    f"  {name}: blocked in griddepcontrol.wait until the earlier grid ({', '.join(waiting)}) completes"
                )
            elif type(op) is Start and self.earlier[agent]:
                lines.append(
                    f"  {name}: not launched: the earlier grid neither triggered launch_dependents nor finished"
                )
            elif type(op) is CounterWait:
                value = world.counters[op.counter].value
                until = f"{op.counter_name} {op.relation} {op.at_least}"
                lines.append(f"  {op.who}: blocked in {op.call} until {until}; it is {value}")
            else:
                lines.append(f"  {name}: at {op.describe()}")
        if world.loads:
            lines.append(f"  ({len(world.loads)} TMA load(s) in flight)")
        return "\n".join(lines)

    def _exit_problems(self, world: World) -> list[str]:
        layout = self.layout
        problems = []
        for (pipe, cta), fulls in layout.full.items():
            if layout.is_flag_pipeline(pipe):
                continue
            for slot, (full, empty) in enumerate(zip(fulls, layout.empty[pipe, cta], strict=True)):
                filled, released = world.barriers[full].completed, world.barriers[empty].completed
                if filled != released:
                    problems.append(
                        f"{pipe} slot {slot} was filled {filled} time(s) but released {released} time(s) "
                        f"({layout.barrier_names[full]} vs {layout.barrier_names[empty]}): "
                        + ("outstanding commits nobody drained" if filled > released else "releases without a fill")
                    )
        for index, bar in enumerate(world.barriers):
            if bar.pending != bar.expected or bar.tx:
                problems.append(f"{layout.barrier_names[index]} ends mid-phase: {mb.status(bar)}")
        for index, flag in enumerate(world.flags):
            if flag.is_set:
                problems.append(f"flag {layout.flag_names[index]} is left set: a set_flag without its wait_flag")
        for agent, engine in enumerate(world.engines):
            text = bulk.unsafe_at_exit(engine)
            if text:
                problems.append(f"{self.names[agent]} exits with {text}")
        return problems

    def _exit_warnings(self, world: World) -> list[Problem]:
        warnings = []
        for bar, phase in world.peeks:
            name = self.layout.barrier_names[bar]
            warnings.append(
                Problem(
                    "PEEK_NEVER_COMPLETES",
                    f"a try_wait/try_acquire on {name} found phase {phase} incomplete, and it never completes before "
                    "exit: on the GPU that peek blocks until mbarrier.try_wait's time limit (~4 µs on an H100) and "
                    "then returns false, at every launch — peek only at a phase that is coming (e.g. not past a "
                    "loop's last item: `if k + 1 < k_tiles: token = consumer.try_wait()`)",
                )
            )
        for declared, state in zip(self.layout.counters, world.counters, strict=True):
            if declared.drain and state.value > 0:
                warnings.append(
                    Problem(
                        "CREDITS_LEFT",
                        f"counter {declared.name} holds {state.value} untaken signal(s) at exit: a counted signal left "
                        "at exit does not hang this kernel (typically a free-slot credit primed and never taken) — "
                        "drain it if the next kernel uses the same counter",
                    )
                )
        return warnings
