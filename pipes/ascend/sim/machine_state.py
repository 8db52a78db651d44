"""The state one run of a recorded program moves through: pipe queues and clocks, flags, access records.

A leaf below :mod:`.machine` (which moves the state), :mod:`.verdict` (which reads it at the end or when
stuck), :mod:`.schedule` (which picks among the pipes' next steps) and :mod:`.exhaustive` (which snapshots it).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from ..events import Keying
from ..pairs import CoreType, Pipe
from .counters import CrossCoreCounters
from .diagnosis import Diagnoses, Diagnosis, Kind
from .program import Instr, Recording

PIPE_ORDER = list(Pipe)


class PipeRun:
    """One pipe's queue and what it knows while a schedule runs."""

    __slots__ = ("core", "pipe", "agent", "queue", "head", "inflight", "overlap", "known", "issued", "finished", "name")

    def __init__(self, core: int, pipe: Pipe, agent: int, queue: list[Instr], overlap: bool, name: str) -> None:
        self.core, self.pipe, self.agent, self.queue = core, pipe, agent, queue
        self.head = 0
        self.inflight: deque[tuple[Instr, list[np.ndarray]]] = deque()
        self.overlap = overlap
        self.known: list[int] = []
        self.issued = 0
        self.finished = 0
        self.name = name

    def next(self) -> Instr | None:
        return self.queue[self.head] if self.head < len(self.queue) else None


class Access:
    """One recorded read or write of a region, by an instruction with a pipe-local counter."""

    __slots__ = ("region", "write", "agent", "counter", "instr")

    def __init__(self, region: tuple, write: bool, agent: int, counter: int, instr: Instr) -> None:
        self.region, self.write, self.agent, self.counter, self.instr = region, write, agent, counter, instr


class Flag:
    """A set intra-core flag: the setter's clock, the set instruction (None for a framework pre-set)."""

    __slots__ = ("clock", "setter", "preset")

    def __init__(self, clock: list[int], setter: Instr | None, preset: bool = False) -> None:
        self.clock, self.setter, self.preset = clock, setter, preset


def join(into: list[int], other: list[int]) -> None:
    for i, v in enumerate(other):
        if v > into[i]:
            into[i] = v


class MachineState:
    """The state of one run of a :class:`~pipes.ascend.sim.program.Recording` under one schedule: the pipes' queues
    and clocks, the flags, the cross-core counters, the access records and what was found.

    :class:`~pipes.ascend.sim.machine.Machine` moves it; :mod:`.verdict` reads it."""

    def __init__(self, sim: Recording, values: bool = True) -> None:
        self.sim = sim
        self.values = values
        """False: order and hazards only, no numpy data (the exhaustive explorer, :mod:`.exhaustive`)."""
        self.sampled = True
        """True for one sampled schedule (:meth:`Simulator.run` / ``explore``); False when every schedule is
        explored (:mod:`.exhaustive`): messages then say what the schedule shows, never what timing did."""
        self.found = Diagnoses()
        self.pipes: list[PipeRun] = []
        for program in sim.programs:
            queues: dict[Pipe, list[Instr]] = {}
            for instr in program.instrs:
                queues.setdefault(instr.pipe, []).append(instr)
            for pipe in sorted(queues, key=PIPE_ORDER.index):
                name = f"{program.name}/{pipe.name}"
                run = PipeRun(program.index, pipe, len(self.pipes), queues[pipe], pipe in sim.config.overlap, name)
                self.pipes.append(run)
        for run in self.pipes:
            run.known = [0] * len(self.pipes)
        self.data = [t.fresh() for t in sim.tensors] if values else []
        self.records: list[list[Access]] = [[] for _ in sim.tensors]
        self.flags: dict[tuple, Flag] = {}
        self.merged: dict[tuple, list[tuple[Instr, Instr | None]]] = {}
        """Flag key → the double sets seen (the set that merged, the set still pending or None for a pre-set)."""
        self.cross = CrossCoreCounters(sim.config.cross_core_capacity)
        self.fence_clocks: list[list[list[int]]] = [[] for _ in sim.programs]
        self.fence_seen = [0] * len(self.pipes)
        self.preset_keys: list[tuple] = []
        for program in sim.programs:
            if program.core is CoreType.AIC:
                for event_id in sim.config.rules.preset_ids(CoreType.AIC, Pipe.M, Pipe.MTE1):
                    key = self.flag_key(program.index, Pipe.M, Pipe.MTE1, event_id)
                    self.flags[key] = Flag([0] * len(self.pipes), None, preset=True)
                    self.preset_keys.append(key)
        self.steps = 0

    # -- naming --------------------------------------------------------------------------------------
    def flag_key(self, core: int, src: Pipe, dst: Pipe, event_id: int) -> tuple:
        if self.sim.config.keying is Keying.SOURCE_PIPE:
            return (core, src, event_id)
        return (core, src, dst, event_id)

    def where(self, instr: Instr) -> str:
        return instr.where(self.sim.programs[instr.core].name)

    def report(self, kind: Kind, message: str, signature: tuple, **kw: Any) -> None:
        self.found.add(Diagnosis(kind, message, signature, **kw))
