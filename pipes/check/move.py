"""One move of one agent (or one TMA load landing), run on a mutable copy of a world.

:class:`Move` copies the parts of a :class:`~pipes.check.world.World` a move may change, runs the
agent's operations (barriers, flags, counters, data accesses with their hazard checks, bulk stores,
TMA loads) and freezes the result into the next world, sharing every unchanged part.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from . import barrier as mb
from . import bulk
from . import counter as mc
from . import memory as mem
from . import scope as sc
from .ops import (
    Arrive,
    BulkCommit,
    BulkStore,
    BulkWait,
    CounterSignal,
    CounterStore,
    CounterTake,
    CounterWait,
    Crash,
    Done,
    Fence,
    FlagSet,
    FlagWait,
    GridDependencyWait,
    LaunchDependents,
    Read,
    Start,
    TmaLoad,
    TryWait,
    Wait,
    Write,
)
from .parts import Assigned, interned_parts
from .world import Load, Problem, World

if TYPE_CHECKING:
    from .facts import MachineFacts

_RELEASES = (Arrive, CounterSignal, CounterStore, FlagSet)
"""Operations that publish what their agent did before them."""


_SIDES: weakref.WeakKeyDictionary[Any, dict[int, tuple[str, str, str]]] = weakref.WeakKeyDictionary()


def _barrier_sides(machine: MachineFacts) -> dict[int, tuple[str, str, str]]:
    """Per pipeline barrier: its pipeline, the side that arrives on it ("producer" or "consumer") and that
    side's role names, as the message names them."""
    sides = _SIDES.get(machine)
    if sides is None:
        sides = {}
        layout = machine.layout
        for (pipe, cta), fulls in layout.full.items():
            if layout.is_flag_pipeline(pipe):
                continue
            spec = layout.pipelines[pipe].spec
            consumers = ", ".join(f"'{r.name}'" for r in spec.consumers)
            for full in fulls:
                sides[full] = (pipe, "producer", f"the producer '{spec.producer.name}' arrives")
            for empty in layout.empty[pipe, cta]:
                sides[empty] = (
                    pipe,
                    "consumer",
                    f"the consumer {consumers} arrives"
                    if len(spec.consumers) == 1
                    else f"the consumers {consumers} arrive",
                )
        _SIDES[machine] = sides
    return sides


class Move:
    """A mutable copy of a world while one move runs."""

    def __init__(self, machine: MachineFacts, world: World) -> None:
        self.machine = machine
        self.world = world
        self.positions = list(world.positions)
        self.barriers = Assigned(world.barriers)
        self.flags = list(world.flags)
        self.cells = dict(world.cells)
        self.cells_touched = False
        self.knowledge = Assigned(world.knowledge)
        self.engines = list(world.engines)
        self.counters = Assigned(world.counters)
        self.launched = world.launched
        self.peeks = set(world.peeks)
        self.loads = {load.label: load for load in world.loads} if world.loads else {}
        self.lines: list[str] = []
        self.problem: Problem | None = None

    def freeze(self) -> World:
        # Most moves change one barrier and one agent's knowledge: share every unchanged part with the
        # previous world and intern the changed ones, so equal parts of many states are one object (the
        # search's key compares those parts by identity: Machine.key).
        old = self.world
        intern = self.machine.intern
        cells = old.cells
        if self.cells_touched:
            # The dict was built from the sorted tuple and keeps its order; only a new cell needs a sort.
            items = tuple(self.cells.items())
            cells = intern(items if len(items) == len(old.cells) else tuple(sorted(items)))
        return World(
            tuple(self.positions),
            interned_parts(self.barriers, old.barriers, intern),
            tuple(self.flags),
            cells,
            interned_parts(self.knowledge, old.knowledge, intern),
            tuple(self.engines),
            tuple(self.loads[label] for label in sorted(self.loads)) if self.loads else (),
            interned_parts(self.counters, old.counters, intern),
            self.launched,
            self._pending_peeks(),
        )

    def _pending_peeks(self) -> tuple[tuple[int, int], ...]:
        """The failed peeks whose phase has still not completed (a barrier's phase count only grows)."""
        if not self.peeks:
            return ()
        return tuple(sorted((bar, phase) for bar, phase in self.peeks if self.barriers[bar].completed <= phase))

    # -- agents ----------------------------------------------------------------------------------
    def run_agent(self, agent: int) -> None:
        tree = self.machine.trees[agent]
        name = self.machine.names[agent]
        node = self.positions[agent]
        first = len(self.lines)
        while True:
            op = tree.op(node)
            line = len(self.lines)
            if type(op) is not Start:
                self.lines.append(f"{name}: {op.describe()}")
            result = self._execute(agent, node, op)
            if op.branching:
                self.lines[line] += f" → {result!r}"
            node = tree.child(node, result)
            following = tree.op(node)
            if following.sync or not self.machine.reduction:
                break
        if len(self.lines) == first:
            self.lines.append(f"{name}: starts")
        self.positions[agent] = node
        if type(following) is Crash:
            self.problem = Problem("AGENT_ERROR", f"agent {name} raised {following.message}")
        elif type(following) is Done and following.problems:
            self.problem = Problem(
                "UNBALANCED_EXIT", f"unbalanced state at exit of {name}: " + "; ".join(following.problems)
            )

    def _execute(self, agent: int, node: int, op: Any) -> Any:
        result = self._perform(agent, node, op)
        if type(op) in _RELEASES and not getattr(op, "relaxed", False):
            count = len(self.machine.names)
            reads = 1 << agent | 1 << (mem.REREAD * count + agent)
            self.knowledge[agent] = mem.mark_released(self.knowledge[agent], reads, 1 << (mem.RELEASED * count + agent))
        return result

    def _perform(self, agent: int, node: int, op: Any) -> Any:
        kind = type(op)
        if kind is Start:
            earlier = self.machine.earlier[agent]
            if earlier and not earlier & self.world.launched and earlier & ~self.machine.finished(self.world) == 0:
                # No trigger: launched in stream order, after the earlier grids completed — their writes are
                # visible. After a trigger it may have launched earlier: only griddepcontrol.wait orders them.
                self._grid_dependency_wait(agent)
            return None
        if kind is Wait:
            self._pass(agent, op)
        elif kind is TryWait:
            if not mb.passes(self.barriers[op.barrier], op.parity):
                # The phase being waited for is the current one: remembered until it completes; one still
                # incomplete at exit is a peek that blocked until mbarrier.try_wait's time limit.
                self.peeks.add((op.barrier, self.barriers[op.barrier].completed))
                return False
            self._pass(agent, op)
            return True
        elif kind is Arrive:
            self._arrive(agent, op)
        elif kind is Write:
            self._write(agent, op)
        elif kind is Read:
            return self._read(agent, op)
        elif kind is Fence:
            count = len(self.machine.names)
            reads = 1 << agent | 1 << (mem.REREAD * count + agent)  # its reads of either epoch
            self.knowledge[agent] = mem.fence(
                self.knowledge[agent], reads, 1 << (2 * count + agent), 1 << (3 * count + agent), 1 << (4 * count)
            )
        elif kind is FlagSet:
            try:
                self.flags[op.flag] = mb.set_flag(self.flags[op.flag], self.knowledge[agent])
            except mb.DoubleSet as exc:
                raise mem.Hazard("DOUBLE_SET", f"flag {op.flag_name}: {op.who}, in {op.call}: {exc}") from None
        elif kind is FlagWait:
            flag = self.flags[op.flag]
            self.knowledge[agent] = mem.join(self.knowledge[agent], flag.published)
            self.flags[op.flag] = mb.clear_flag(flag)
        elif kind is CounterSignal:
            declared = self.machine.layout.counters[op.counter]
            try:
                self.counters[op.counter] = mc.signal(
                    self.counters[op.counter], op.by, self._release(agent, op), declared.capacity
                )
            except mc.CounterFull as exc:
                reading = " (the binary reading: a second signal before the take merges into the first)"
                raise mem.Hazard(
                    "COUNTER_OVERFLOW",
                    f"counter {op.counter_name}: {op.who}, in {op.call}: {exc}"
                    + (reading if declared.capacity == 1 else "")
                    + " — the wait meant for it never returns; the signalling side runs too far ahead",
                ) from None
        elif kind is CounterStore:
            self._store_word(agent, op)
            self.counters[op.counter] = mc.store(self.counters[op.counter], op.value, self._release(agent, op))
        elif kind is CounterTake:
            self.counters[op.counter], releases = mc.take(self.counters[op.counter])
            self._acquire(agent, releases, op.scope)
        elif kind is CounterWait:
            self._acquire(agent, self.counters[op.counter].published, op.scope)
        elif kind is LaunchDependents:
            self.launched |= 1 << agent
        elif kind is GridDependencyWait:
            self._grid_dependency_wait(agent)
        elif kind is BulkStore:
            self.engines[agent] = bulk.issue(self.engines[agent], node, op.src, op.dst, self.knowledge[agent])
        elif kind is BulkCommit:
            self.engines[agent] = bulk.commit_group(self.engines[agent])
        elif kind is BulkWait:
            self._bulk_wait(agent, op)
        elif kind is TmaLoad:
            # Each destination of a (multicast) load lands as an event of its own.
            for index, (cell, barrier, barrier_name) in enumerate(op.destinations):
                label = f"tma:{self.machine.names[agent]}#{node}" + (f"@{index}" if index else "")
                self.loads[label] = Load(
                    label,
                    self.knowledge[agent],
                    cell,
                    op.value,
                    barrier,
                    barrier_name,
                    op.nbytes,
                    op.completion,
                    op.who,
                    agent,
                    node,
                )
        return None

    def _release(self, agent: int, op: Any) -> mc.Release:
        return mc.Release(self.machine.layout.places[agent], op.scope, op.who, self.knowledge[agent], op.relaxed)

    def _acquire(self, agent: int, releases: mc.Releases, scope: sc.Scope) -> None:
        learned = mc.visible(releases, self.machine.layout.places[agent], scope)
        self.knowledge[agent] = mem.join(self.knowledge[agent], learned)

    def _grid_dependency_wait(self, agent: int) -> None:
        """The earlier grids have completed: their writes — bulk stores still in flight included — are visible."""
        earlier = self.machine.earlier[agent]
        for other in range(len(self.knowledge)):
            if not earlier >> other & 1:
                continue
            if self.engines[other].stores:
                self._complete_stores(other)
            self.knowledge[agent] = mem.join(self.knowledge[agent], self.knowledge[other])

    def _pass(self, agent: int, op: Wait | TryWait) -> None:
        bar = self.barriers[op.barrier]
        stale = mb.stale_pass_problem(bar, op.parity, op.completion)
        if stale:
            self.lines[-1] += " → passes"
            hint = mb.parity_hint(op.parity, op.completion, bar)
            raise mem.Hazard("PHASE_ALIASING", f"{op.barrier_name}: {op.who}, in {op.call}: {stale}{hint}")
        knowledge = mem.join(self.knowledge[agent], bar.published)
        if bar.remote:
            # Arrivals from other CTAs: a cluster-scoped acquire synchronises with them; a CTA-scoped one only
            # comes after them (their reads are done, their writes ordered before this agent's, not visible).
            if op.scope is sc.Scope.CTA:
                knowledge = mem.learn_ordered(knowledge, bar.remote)
            else:
                knowledge = mem.join(knowledge, bar.remote)
        self.knowledge[agent] = knowledge

    def _arrive(self, agent: int, op: Arrive) -> None:
        exited = self.machine.exited(self.world, op.barrier, agent)
        if exited:
            raise mem.Hazard(
                "REMOTE_AFTER_EXIT", f"{op.who}, in {op.call}, arrives remotely on {op.barrier_name} {exited}"
            )
        self._check_role(agent, op)
        bar = self.barriers[op.barrier]
        judged = mb.arrival_problem(bar, op.completion, op.count)
        if judged:
            raise mem.Hazard(judged[0], f"{op.barrier_name}: {judged[1]} — {op.who}, in {op.call}")
        knowledge = self.knowledge[agent]
        if op.scope is not sc.Scope.SYSTEM and not self.machine.reaches(op.scope, agent, op.barrier):
            # The arrival counts, but a release too narrow for the barrier's CTA orders nothing there.
            bar = mb.note_narrow(bar, op.who, op.scope, knowledge)
            knowledge = mem.EMPTY_KNOWLEDGE
        remote = not self.machine.reaches(sc.Scope.CTA, agent, op.barrier)
        try:
            self.barriers[op.barrier] = mb.arrive(bar, op.count, knowledge, op.tx, op.completion, op.who, remote)
        except mb.OverArrival as exc:
            raise mem.Hazard(
                "OVER_ARRIVAL",
                f"{op.barrier_name}: more arrivals in a phase than the barrier expects: {exc} — {op.who}, in {op.call}",
            ) from None

    def _store_word(self, agent: int, op: CounterStore) -> None:
        """A store to a counter/flag word: a write-write race unless the last store to it is ordered before this one
        (its storer's release acquired, directly or through others, or the same agent's). The word is a cell of
        its own, whose versions the stores' releases carry like data."""
        self.cells_touched = True
        cell = f"flag word {op.counter_name}"
        state = self.cells.get(cell, mem.UNWRITTEN)
        known, _ = mem.lookup(self.knowledge[agent], cell)
        if known < state.version:
            raise mem.Hazard(
                "FLAG_RACE",
                f"counter {op.counter_name}: {op.who}, in {op.call}, stores {op.value} while the store by "
                f"{state.value} is not ordered before it (no acquire of that store's release, directly or through "
                "others): two unordered stores to one flag word — which value it ends with depends on timing",
            )
        version = state.version + 1
        self.cells[cell] = mem.CellState(version, 0, f"{op.who} (= {op.value})")
        self.knowledge[agent] = mem.learn(self.knowledge[agent], cell, version, 0)

    def _check_role(self, agent: int, op: Arrive) -> None:
        """An arrive on a pipeline's full (empty) barrier by an agent that plays only its consumer (producer) side."""
        side = _barrier_sides(self.machine).get(op.barrier)
        if side is None:
            return
        pipe, arriving, names = side
        spec = self.machine.layout.pipelines[pipe].spec
        joined = {role for p, role, _ in self.machine.trees[agent].joined if p == pipe}
        plays = {"producer" if role == "producer" else "consumer" for role in joined}
        if not plays or arriving in plays:
            return
        roles = sorted(role for role in joined if role != "producer")
        mine = f"producer '{spec.producer.name}'" if "producer" in joined else f"consumer '{', '.join(roles)}'"
        name = self.machine.names[agent]
        raise mem.Hazard(
            "WRONG_ROLE",
            f"{name} ({mine} of {pipe}) arrives on {op.barrier_name}, which only {names} on — "
            f"in {op.call}: an arrive from the other side of the pipeline counts as one of theirs",
        )

    def _write(self, agent: int, op: Write) -> None:
        self.cells_touched = True
        cell = self.cells.get(op.cell, mem.UNWRITTEN)
        writer = 1 << (3 * len(self.machine.names) + agent)
        self.cells[op.cell], self.knowledge[agent] = mem.write(
            op.cell, cell, self.knowledge[agent], op.value, op.who, self.machine.reader_names, writer_bit=writer
        )

    def _read(self, agent: int, op: Read) -> Any:
        self.cells_touched = True
        cell = self.cells.get(op.cell, mem.UNWRITTEN)
        count = len(self.machine.names)
        fenced = 1 << (2 * count + agent) if op.async_proxy else 0
        # A read made again after the agent released the data is recorded apart from the one it published.
        released = 1 << (mem.RELEASED * count + agent)
        reader = mem.reader_bit(
            self.knowledge[agent], op.cell, cell.version, 1 << agent, 1 << (mem.REREAD * count + agent), released
        )
        try:
            self.cells[op.cell], knowledge = mem.read(op.cell, cell, self.knowledge[agent], reader, op.who, fenced)
            self.knowledge[agent] = mem.forget_released(knowledge, op.cell, released)
        except mem.Hazard as hazard:
            note = self._narrow_note(agent, op.cell, cell.version)
            raise mem.Hazard(hazard.kind, hazard.message + note) from None
        return cell.value

    def _narrow_note(self, agent: int, cell: str, version: int) -> str:
        """Name a release that carried the write but was relaxed (a missing fence or memory barrier) or too
        narrow to reach this reader (a scope bug)."""
        reader = self.machine.layout.places[agent]
        layout = self.machine.layout
        for declared, counter in zip(layout.counters, self.counters, strict=True):
            for release in counter.published:
                if release.relaxed and mem.lookup(release.knowledge, cell)[0] >= version:
                    return (
                        f" — {release.who}'s write of {declared.name} (now {counter.value}) came after this write, but "
                        "the flag write was relaxed (no fence / memory barrier before it): it publishes nothing, so "
                        f"an acquire of {declared.name} orders nothing before this read"
                    )
        if version and mem.ordered_version(self.knowledge[agent], cell) >= version:
            return self._cta_wait_note(agent, cell, version)
        candidates = []
        for index, bar in enumerate(self.barriers):
            for who, scope, knowledge in bar.narrow:
                candidates.append(
                    (f"arrive on {layout.barrier_names[index]}", who, scope, knowledge, layout.barrier_places[index])
                )
        for declared, counter in zip(layout.counters, self.counters, strict=True):
            for release in counter.published:
                if not sc.reaches(release.scope, release.place, reader):
                    candidates.append(
                        (f"release of {declared.name}", release.who, release.scope, release.knowledge, reader)
                    )
        for what, who, scope, knowledge, target in candidates:
            if mem.lookup(knowledge, cell)[0] >= version:
                need = sc.needed(layout.places[self.machine.agent_index.get(who.split(" ")[0], agent)], target)
                return (
                    f" — {who}'s {what} carried this write, but its release has {scope.name} scope ({scope.ptx}) and "
                    f"does not reach {self.machine.names[agent]}, which runs {reader}: it needs {need.name} scope "
                    f"({need.ptx})"
                )
        return ""

    def _cta_wait_note(self, agent: int, cell: str, version: int) -> str:
        """Name the CTA-scoped wait that ordered a reader after a peer CTA's write without making it visible."""
        layout = self.machine.layout
        name = self.machine.names[agent]
        place = layout.places[agent]
        carried = [
            layout.barrier_names[index]
            for index, bar in enumerate(self.barriers)
            if layout.barrier_places[index] == place and mem.lookup(bar.remote, cell)[0] >= version
        ]
        where = f" on {carried[0]}" if carried else ""
        return (
            f" — {name}'s wait{where} came after this write (an arrive from another CTA of the cluster completed its "
            "phase), but it acquires at CTA scope (acquire.cta), which does not synchronise with another CTA's "
            f"release: that CTA's writes need not be visible to {name}; wait at cluster scope "
            "(mbarrier.try_wait.acquire.cluster: wait(..., scope=Scope.CLUSTER))"
        )

    def _bulk_wait(self, agent: int, op: BulkWait) -> None:
        self._complete_stores(agent, op.pending, op.read)

    def _complete_stores(self, agent: int, pending: int = 0, read_only: bool = False) -> None:
        self.cells_touched = True
        name = self.machine.names[agent]
        agents = len(self.machine.names)
        engine_bit = 1 << (agents + agent)
        copier = f"{name}'s TMA store"

        def read_source(store: bulk.Store) -> tuple[Any, mem.Knowledge]:
            cell = self.cells.get(store.src, mem.UNWRITTEN)
            self.lines.append(f"  (bulk copy of {name} reads {store.src})")
            self.cells[store.src], knowledge = mem.read(store.src, cell, store.knowledge, engine_bit, copier)
            mem.require_fenced_write(store.src, store.knowledge, copier, agents, self.machine.reader_names)
            return cell.value, knowledge

        def write_destination(store: bulk.Store) -> mem.Knowledge:
            cell = self.cells.get(store.dst, mem.UNWRITTEN)
            self.lines.append(f"  (bulk copy of {name} writes {store.dst})")
            self.cells[store.dst], knowledge = mem.write(
                store.dst, cell, store.knowledge, store.value, copier, self.machine.reader_names, agents
            )
            return knowledge

        self.engines[agent], learned = bulk.wait_group(
            self.engines[agent], pending, read_only, read_source, write_destination
        )
        for knowledge in learned:
            self.knowledge[agent] = mem.join(self.knowledge[agent], knowledge)

    # -- TMA loads landing ---------------------------------------------------------------------------
    def land(self, label: str) -> None:
        load = self.loads.pop(label)
        self.cells_touched = True
        exited = self.machine.exited(self.world, load.barrier, load.agent) if load.agent >= 0 else None
        if exited:
            self.lines.append(f"TMA load issued by {load.issuer} lands in {load.cell} and {load.barrier_name}")
            raise mem.Hazard(
                "REMOTE_AFTER_EXIT",
                f"the multicast TMA load issued by {load.issuer} writes {load.cell} and completes its bytes on "
                f"{load.barrier_name} {exited}",
            )
        self.lines.append(
            f"TMA load issued by {load.issuer} lands: writes {load.cell} = {load.value!r}, "
            f"completes {load.nbytes} B on {load.barrier_name}"
        )
        cell = self.cells.get(load.cell, mem.UNWRITTEN)
        self.cells[load.cell], knowledge = mem.write(
            load.cell,
            cell,
            load.knowledge,
            load.value,
            f"the TMA load issued by {load.issuer}",
            self.machine.reader_names,
            len(self.machine.names),
        )
        bar = self.barriers[load.barrier]
        what = f"transaction bytes of the TMA load issued by {load.issuer}"
        judged = mb.arrival_problem(bar, load.completion, load.nbytes, what)
        if judged:
            raise mem.Hazard(judged[0], f"{load.barrier_name}: {judged[1]}")
        who = f"the TMA load issued by {load.issuer}"
        self.barriers[load.barrier] = mb.complete_tx(bar, load.nbytes, knowledge, load.completion, who)
