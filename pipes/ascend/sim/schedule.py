"""Schedules: which of the possible next steps (start an instruction, finish one in flight) happens.

The simulator explores several: program order, seeded random orders, and for each pipe in use an
adversarial pair — that pipe delayed as long as anything else can move, and that pipe rushed ahead.
Delays expose missing waits (a consumer that does not wait reads too early once its producer is slow);
rushes expose double sets (a producer that runs ahead sets a flag the consumer has not taken).
"""

from __future__ import annotations

import random
from typing import Protocol

from ..pairs import Pipe
from .machine_state import PipeRun

Action = tuple[bool, PipeRun]  # (finish?, pipe)


def _order(action: Action) -> tuple[int, int, int]:
    finish, run = action
    instr = run.inflight[0][0] if finish else run.queue[run.head]
    return (instr.seq, run.core, 0 if finish else 1)


class Schedule(Protocol):
    name: str

    def choose(self, enabled: list[Action]) -> int: ...


class ProgramOrder:
    """The step of the earliest instruction in program order (finishes before starts): the benign order."""

    name = "program-order"

    def choose(self, enabled: list[Action]) -> int:
        return min(range(len(enabled)), key=lambda i: _order(enabled[i]))


class RandomOrder:
    """A uniformly random possible step, reproducible from ``seed``."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.name = f"random(seed={seed})"
        self._rng = random.Random(seed)

    def choose(self, enabled: list[Action]) -> int:
        return self._rng.randrange(len(enabled))


class DelayPipe:
    """``pipe`` (on every core) moves only when nothing else can; others go in program order."""

    def __init__(self, pipe: Pipe | str) -> None:
        pipe = Pipe.parse(pipe)
        self.pipe = pipe
        self.name = f"delay({pipe.name})"

    def choose(self, enabled: list[Action]) -> int:
        others = [i for i, (_, run) in enumerate(enabled) if run.pipe is not self.pipe]
        pool = others or range(len(enabled))
        return min(pool, key=lambda i: _order(enabled[i]))


class RushPipe:
    """``pipe`` starts whatever it can before anything else moves (finishing only when it must)."""

    def __init__(self, pipe: Pipe | str) -> None:
        pipe = Pipe.parse(pipe)
        self.pipe = pipe
        self.name = f"rush({pipe.name})"

    def choose(self, enabled: list[Action]) -> int:
        starts = [i for i, (finish, run) in enumerate(enabled) if run.pipe is self.pipe and not finish]
        mine = starts or [i for i, (_, run) in enumerate(enabled) if run.pipe is self.pipe]
        pool = mine or range(len(enabled))
        return min(pool, key=lambda i: _order(enabled[i]))


def default_schedules(pipes: list[Pipe], seeds: int = 4) -> list[Schedule]:
    """Program order, ``seeds`` random orders, and a delay and a rush of each pipe in ``pipes``."""
    schedules: list[Schedule] = [ProgramOrder()]
    schedules += [RandomOrder(seed) for seed in range(seeds)]
    schedules += [DelayPipe(pipe) for pipe in pipes]
    schedules += [RushPipe(pipe) for pipe in pipes]
    return schedules
