"""Executing a recorded program under one schedule: in-order pipes, binary flags, cross-core counters.

Each pipe of each core is an in-order queue. An instruction *starts* when it reaches the head of its
queue and may go (a ``wait_flag`` needs its flag set, a ``set_flag`` or barrier needs the pipe's earlier
work finished, a data op on a non-overlapping pipe needs the previous one finished); data ops then
*finish* later, in order. The schedule picks the next start or finish among those possible.

Data hazards are found with vector clocks, not by luck of timing: every pipe knows which instructions
of every pipe are guaranteed finished (through flags, barriers and its own order); an access that
conflicts with one not known to be finished is a hazard even if, in this schedule, it happened to be.
Sources are read when an op starts and results written when it finishes, so a real race also shows
up as wrong data.
"""

from __future__ import annotations

import numpy as np

from ..pairs import CoreType
from .buffers import View, contains, overlaps
from .diagnosis import Kind, RunResult
from .machine_state import Access, Flag, MachineState, PipeRun, join
from .program import Instr, Op, Recording
from .schedule import Schedule
from .verdict import check_exit, explain_deadlock, report_hazard

#: Steps between sweeps of the access records (see Machine.collect).
_COLLECT_EVERY = 256


class Machine(MachineState):
    """One run of a :class:`~pipes.ascend.sim.program.Recording` (a
    :class:`~pipes.ascend.sim.simulator.Simulator`'s program) under one schedule.

    The state is a :class:`~pipes.ascend.sim.machine_state.MachineState`; the moves are :meth:`can_start`,
    :meth:`start`, :meth:`finish` and :meth:`collect` (the exhaustive explorer drives them one at a time).
    """

    def __init__(self, sim: Recording, schedule: Schedule | None, values: bool = True) -> None:
        super().__init__(sim, values)
        self.schedule = schedule
        self.sampled = schedule is not None

    # -- the run -------------------------------------------------------------------------------------
    def run(self) -> RunResult:
        pipes = self.pipes
        limit = 4 * sum(len(p.queue) for p in pipes) + 16
        while self.steps < limit:
            enabled = []
            for run in pipes:
                if run.inflight:
                    enabled.append((True, run))
                if run.head < len(run.queue) and self.can_start(run):
                    enabled.append((False, run))
            if not enabled:
                break
            finish, run = enabled[self.schedule.choose(enabled)] if len(enabled) > 1 else enabled[0]
            if finish:
                self.finish(run)
            else:
                self.start(run)
            self.steps += 1
            if self.steps % _COLLECT_EVERY == 0:
                self.collect()
        completed = all(p.head == len(p.queue) and not p.inflight for p in pipes)
        if completed:
            check_exit(self)
        else:
            explain_deadlock(self)
        outputs = {t.name: self.data[t.tid] for t in self.sim.tensors if t.core is None}
        return RunResult(self.schedule.name, self.found, outputs, self.steps, completed)

    def can_start(self, run: PipeRun) -> bool:
        instr = run.queue[run.head]
        if instr.fences_before > len(self.fence_clocks[instr.core]):
            return False
        op = instr.op
        if op is Op.DATA:
            return not run.inflight or (run.overlap and len(run.inflight) < self.sim.config.overlap_depth)
        if op is Op.WAIT:
            return self.flag_key(instr.core, instr.src, instr.dst, instr.event_id) in self.flags
        if op is Op.XWAIT:
            return self.cross.ready(instr.core, instr.event_id)
        if op is Op.BARRIER_ALL:
            return all(self._done_before(other, instr.seq) for other in self.pipes if other.core == instr.core)
        return not run.inflight  # set_flag, barrier and cross-core set wait for the pipe's earlier work

    def start(self, run: PipeRun) -> None:
        instr = run.queue[run.head]
        run.head += 1
        known = run.known
        if instr.fences_before > self.fence_seen[run.agent]:
            join(known, self.fence_clocks[instr.core][instr.fences_before - 1])
            self.fence_seen[run.agent] = instr.fences_before
        op = instr.op
        if op is Op.DATA:
            run.issued += 1
            if not run.overlap:
                known[run.agent] = run.issued - 1
            for view in instr.reads:
                self._access(instr, run, view, False)
            for view in instr.writes:
                self._access(instr, run, view, True)
            if not self.values:
                run.inflight.append((instr, None))
                return
            inputs = [np.array(self.data[v.tensor.tid][v.key]) for v in instr.reads]
            run.inflight.append((instr, instr.compute(inputs)))
            return
        if op in (Op.SET, Op.XSET, Op.BARRIER):
            known[run.agent] = run.issued  # these wait until the pipe's earlier work has finished
        if op is Op.SET:
            self._set(instr, list(known))
        elif op is Op.WAIT:
            flag = self.flags.pop(self.flag_key(instr.core, instr.src, instr.dst, instr.event_id))
            join(known, flag.clock)
        elif op is Op.XSET:
            self._cross_set(instr, list(known))
        elif op is Op.XWAIT:
            join(known, self.cross.take(instr.core, instr.event_id))
            self.fence_clocks[instr.core].append(list(known))
        elif op is Op.BARRIER_ALL:
            for other in self.pipes:
                if other.core == instr.core:
                    join(known, other.known)
                    known[other.agent] = max(known[other.agent], other.issued)
            self.fence_clocks[instr.core].append(list(known))

    @staticmethod
    def _done_before(run: PipeRun, seq: int) -> bool:
        """Whether every instruction of ``run`` earlier in program order than ``seq`` has finished."""
        ahead = run.queue[run.head] if run.head < len(run.queue) else None
        return (ahead is None or ahead.seq >= seq) and not any(i.seq < seq for i, _ in run.inflight)

    def finish(self, run: PipeRun) -> None:
        instr, outputs = run.inflight.popleft()
        run.finished += 1
        for view, value in zip(instr.writes, outputs or (), strict=bool(outputs)):
            self.data[view.tensor.tid][view.key] = value

    def collect(self) -> None:
        """Forget accesses every pipe that may still act already knows are finished: none can conflict again.

        Keeps the per-tensor access lists short, so checking stays linear in the program length.
        """
        active = [p.known for p in self.pipes if p.head < len(p.queue)]
        if not active:
            return
        floor = [min(column) for column in zip(*active, strict=True)]
        for tid, records in enumerate(self.records):
            if records:
                self.records[tid] = [r for r in records if floor[r.agent] < r.counter]

    # -- flags ---------------------------------------------------------------------------------------
    def _set(self, instr: Instr, clock: list[int]) -> None:
        key = self.flag_key(instr.core, instr.src, instr.dst, instr.event_id)
        current = self.flags.get(key)
        if current is None:
            self.flags[key] = Flag(clock, instr)
            return
        self.merged.setdefault(key, []).append((instr, current.setter))
        if current.preset:
            before = "the framework pipe object pre-set it at kernel start and nothing has waited on it"
        else:
            before = f"it is still set by {self.where(current.setter)} and nothing has waited on it since"
        same = self._same_flag_note(instr, current.setter)
        self.report(
            Kind.DOUBLE_SET,
            f"{self.where(instr)} sets a flag that is already set: {before}{same}. The two signals merge into one, so "
            "one later wait_flag never returns (undefined behaviour that can also poison later kernels).",
            ("set", key),
        )

    def _same_flag_note(self, instr: Instr, other: Instr | None) -> str:
        """When keying by source pipe made two pairs one flag, say so (the kernel names them differently)."""
        if other is None or other.dst is instr.dst:
            return ""
        return (
            f" ({instr.src.name}→{instr.dst.name} and {other.src.name}→{other.dst.name} with id {instr.event_id} are "
            "one flag when flags are keyed by (source pipe, id), the default reading: "
            "EventIdRules(keying=Keying.PIPE_PAIR) if your hardware keys them by pair)"
        )

    def _cross_set(self, instr: Instr, clock: list[int]) -> None:
        program = self.sim.programs[instr.core]
        if program.core is CoreType.AIC:
            for target in self.sim.vector_programs:
                self._signal(target.index, instr, clock)
            return
        # A vector core's set counts on the cube once every vector core of the group has set.
        dropped = self.cross.add((instr.core, instr.event_id), (clock, instr), partial=True)
        if dropped is not None:
            self._full_counter(
                instr, program.name, dropped.held, "sets of its own not yet matched by the other vector cores"
            )
            return
        vectors = [v.index for v in self.sim.vector_programs]
        merged = self.cross.combine(vectors, instr.event_id, len(self.pipes))
        if merged is not None:
            self._signal(self.sim.cube_program.index, instr, merged)

    def _signal(self, target: int, instr: Instr, clock: list[int]) -> None:
        dropped = self.cross.add((target, instr.event_id), (clock, instr))
        if dropped is not None:
            self._full_counter(instr, self.sim.programs[target].name, dropped.held, "untaken signals")

    def _full_counter(self, instr: Instr, target: str, held: int, what: str) -> None:
        capacity = self.cross.capacity
        if capacity == 1:
            self.report(
                Kind.LOST_SIGNAL,
                f"{self.where(instr)} sets cross-core flag id {instr.event_id} again before {target} took the previous "
                f"signal; under the binary reading (cross_core_capacity=1) the two merge, so this set is lost and a "
                "later wait_cross_flag of it never returns. On parts that count up to 15 sets this is fine; if yours "
                "may not, give each slot its own id and acquire the slot before writing it.",
                ("lost", instr.core, instr.pipe, instr.event_id),
            )
            return
        self.report(
            Kind.COUNTER_OVERFLOW,
            f"{self.where(instr)}: {target}'s cross-core counter for id {instr.event_id} already holds {held} {what}, "
            f"the most it counts ({capacity}): this set is lost (an error on hardware) and a later wait_cross_flag of "
            "it never returns — the producer runs too far ahead of its consumer",
            ("overflow", instr.core, instr.pipe, instr.event_id),
        )

    # -- hazards -------------------------------------------------------------------------------------
    def _access(self, instr: Instr, run: PipeRun, view: View, write: bool) -> None:
        known = run.known
        records = self.records[view.tensor.tid]
        region = view.region
        for rec in records:
            unordered = (write or rec.write) and known[rec.agent] < rec.counter
            if unordered and rec.instr is not instr and overlaps(region, rec.region):
                report_hazard(self, instr, run, view, write, rec)
        counter = run.issued
        if write:
            records[:] = [r for r in records if not (known[r.agent] >= r.counter and contains(region, r.region))]
        else:
            records[:] = [r for r in records if r.write or r.agent != run.agent or not contains(region, r.region)]
        records.append(Access(region, write, run.agent, counter, instr))
