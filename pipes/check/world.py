"""The model state of a whole protocol: an immutable, hashable snapshot.

A :class:`World` holds where each agent is (a node of its operation tree), every barrier and flag,
every data cell, what each agent knows (happens-before), each agent's bulk-store engine and the TMA
loads in flight. :class:`~pipes.check.machine.Machine` lists the moves possible in a world and applies
one (:mod:`pipes.check.move`); the explorer walks the worlds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from . import barrier as mb
from . import bulk
from . import counter as mc
from . import memory as mem


class Load(NamedTuple):
    """A TMA load in flight: it writes ``cell`` and completes ``nbytes`` on ``barrier`` when it lands."""

    label: str
    knowledge: mem.Knowledge
    cell: str
    value: Any
    barrier: int
    barrier_name: str
    nbytes: int
    completion: int | None
    issuer: str
    agent: int = -1
    """The issuing agent and its operation's node (for symmetry reduction)."""
    node: int = -1


class World(NamedTuple):
    positions: tuple[int, ...]
    barriers: tuple[mb.BarrierState, ...]
    flags: tuple[mb.FlagState, ...]
    cells: tuple[tuple[str, mem.CellState], ...]
    knowledge: tuple[mem.Knowledge, ...]
    engines: tuple[bulk.Engine, ...]
    loads: tuple[Load, ...]
    counters: tuple[mc.CounterState, ...] = ()
    launched: int = 0
    """Bit ``a``: agent ``a`` executed ``griddepcontrol.launch_dependents``."""
    peeks: tuple[tuple[int, int], ...] = ()
    """``(barrier, phase)`` of every ``try_wait``/``try_acquire`` that found its phase incomplete and whose
    phase has not completed since (sorted; no agent named, so symmetric worlds stay one state)."""


class Problem(NamedTuple):
    """A finding before it gets its interleaving: ``kind`` is a FindingKind name."""

    kind: str
    message: str


@dataclass
class Outcome:
    """The result of one move: the next world, the trace lines it adds, or the problem it hit."""

    world: World | None
    lines: list[str]
    problem: Problem | None = None
    more: tuple[Problem, ...] = ()
    """Every other problem the move hit — further errors, and warnings (with or without ``problem``); a
    search for every finding (``pipes.check.explore.search(every_finding=True)``) records them too."""
