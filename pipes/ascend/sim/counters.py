"""Cross-core flags as the hardware counts them: one small counter per (core, id), mode 2.

CANN: each ``set_cross_flag`` adds one to the id's counter on the receiving core, each
``wait_cross_flag`` blocks at zero and then takes one; at most ``capacity`` sets may be outstanding
(15 on the parts CANN documents). A producer that runs ahead of its consumer is therefore fine as long
as it stays within the capacity. ``capacity=1`` is the conservative binary reading (a second set before
the wait is lost). Mode 2: a cube set counts on each vector core of its group; a vector-core set counts
on the cube once every vector core of the group has set.

A set that would exceed the capacity is *dropped* — the simulation then goes on without it, so its
consequence (a wait that never returns) shows up as the deadlock it causes, and that deadlock's message
names the dropped set.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

Signal = tuple[list[int], Any]
"""The setter's vector clock (what a taker learns) and the setting instruction."""


@dataclass
class Dropped:
    """A set the counter could not hold: ``instr`` on its way to ``target`` (a core index) with ``held`` untaken."""

    instr: Any
    target: int
    held: int


@dataclass
class CrossCoreCounters:
    """Every cross-core counter of one run."""

    capacity: int
    counters: dict[tuple[int, int], deque[Signal]] = field(default_factory=dict)
    """(receiving core, id) → untaken signals, oldest first."""
    partials: dict[tuple[int, int], deque[Signal]] = field(default_factory=dict)
    """(vector core, id) → its sets toward the cube not yet combined with the other vector cores' sets."""
    dropped: list[Dropped] = field(default_factory=list)

    def ready(self, core: int, flag_id: int) -> bool:
        return bool(self.counters.get((core, flag_id)))

    def take(self, core: int, flag_id: int) -> list[int]:
        """A ``wait_cross_flag`` on ``core`` takes the oldest signal; returns what its setter knew."""
        return self.counters[(core, flag_id)].popleft()[0]

    def add(self, key: tuple[int, int], signal: Signal, *, partial: bool = False) -> Dropped | None:
        """Count one set on ``key``; a :class:`Dropped` (and no count) when the counter is already full."""
        queue = (self.partials if partial else self.counters).setdefault(key, deque())
        if len(queue) >= self.capacity:
            dropped = Dropped(signal[1], key[0], len(queue))
            self.dropped.append(dropped)
            return dropped
        queue.append(signal)
        return None

    def combine(self, vectors: list[int], flag_id: int, width: int) -> list[int] | None:
        """Once every vector core has a pending set of ``flag_id``, take one from each: the merged clock."""
        queues = [self.partials.get((v, flag_id)) for v in vectors]
        if not all(queues):
            return None
        merged = [0] * width
        for queue in queues:
            for i, v in enumerate(queue.popleft()[0]):
                merged[i] = max(merged[i], v)
        return merged

    def dropped_toward(self, core: int, flag_id: int) -> list[Dropped]:
        return [d for d in self.dropped if d.target == core and d.instr.event_id == flag_id]

    def left(self) -> list[tuple[int, int, deque[Signal], bool]]:
        """Untaken signals at exit: ``(core, id, signals, partial)`` for every non-empty counter."""
        out = [(core, fid, q, False) for (core, fid), q in self.counters.items() if q]
        return out + [(core, fid, q, True) for (core, fid), q in self.partials.items() if q]
