"""Where a role stands in a pipeline's ring of slots: stage index, phase bit, iteration count.

All of the ring arithmetic lives in :func:`stage_index`, :func:`position` and :func:`advance_position`
(and, for TMA-store staging rings, :func:`staging_in_flight`).
They use only ``+ // % & ^`` so the same code runs on Python ints (the CPU checker, the Ascend
simulator) and on CuTe DSL ``Int32`` values (traced into the kernel). Every backend, producer and
consumer alike, moves through the ring by calling them.

Phase convention (mbarrier parity): a fresh barrier is in phase 0 and waiting for parity 1 succeeds at
once, because the "previous" phase counts as complete. So a producer starts at phase 1 — every slot is
empty — and a consumer at phase 0 — nothing has been filled yet.
"""

from __future__ import annotations

from typing import Any

PRODUCER_START_PHASE = 1
CONSUMER_START_PHASE = 0


def stage_index(iteration: Any, stages: int) -> Any:
    """The slot the ``iteration``-th use of a ``stages``-slot ring lands in (the tile→slot map)."""
    return iteration % stages


def position(iteration: Any, stages: int, start_phase: int) -> tuple[Any, Any]:
    """The ``(stage index, phase)`` of the ``iteration``-th use of a ``stages``-slot ring.

    This is the tile→slot map: iteration ``k`` uses slot ``k % stages`` and waits for the phase that
    flips once per trip around the ring.
    """
    return stage_index(iteration, stages), start_phase ^ ((iteration // stages) & 1)


def advance_position(index: Any, phase: Any, steps: Any, stages: int) -> tuple[Any, Any]:
    """``(index, phase)`` moved ``steps`` slots forward; the phase flips once per wrap of the ring."""
    ahead = index + steps
    return ahead % stages, phase ^ ((ahead // stages) & 1)


def staging_in_flight(stages: int, slots: int = 1) -> int:
    """Stores a ``stages``-buffer staging ring may leave reading their buffers when it hands out the next
    ``slots`` buffers at once: ``stages - slots``.

    One bulk group is committed per buffer, so the last store to use the newest of the ``slots`` buffers
    is the ``(stages - slots + 1)``-th newest group: every older one must have read its source
    (``cp.async.bulk.wait_group.read stages - slots``). Raises for ``slots`` outside ``[1, stages]``.
    """
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= stages:
        raise ValueError(f"staging slots = {slots!r} is invalid: allowed an int in [1, {stages}] (the ring's buffers)")
    return stages - slots


class PipelineState:
    """A mutable cursor into the ring: ``index`` (slot), ``phase`` (parity to wait for), ``count``.

    ``count`` is the number of slots this cursor has passed: the iteration number of the next use.
    Fields are Python ints or DSL integers; ``stages`` is always a Python int.
    """

    __slots__ = ("stages", "index", "phase", "count")

    def __init__(self, stages: int, index: Any = 0, phase: Any = 0, count: Any = 0) -> None:
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
            raise ValueError(f"PipelineState.stages = {stages!r} is invalid: allowed an int >= 1")
        self.stages = stages
        self.index = index
        self.phase = phase
        self.count = count

    @classmethod
    def producer_start(cls, stages: int) -> PipelineState:
        """A producer's first cursor: slot 0, waiting for parity 1 (all slots start empty)."""
        return cls(stages, 0, PRODUCER_START_PHASE, 0)

    @classmethod
    def consumer_start(cls, stages: int) -> PipelineState:
        """A consumer's first cursor: slot 0, waiting for parity 0 (nothing is full yet)."""
        return cls(stages, 0, CONSUMER_START_PHASE, 0)

    @classmethod
    def at(cls, iteration: Any, stages: int, start_phase: int) -> PipelineState:
        """The cursor a role that started at ``start_phase`` has after ``iteration`` uses."""
        index, phase = position(iteration, stages, start_phase)
        return cls(stages, index, phase, iteration)

    def advance(self, steps: Any = 1) -> None:
        """Move ``steps`` slots forward (``steps`` may be a DSL integer)."""
        if isinstance(steps, int) and not isinstance(steps, bool) and steps < 1:
            raise ValueError(f"PipelineState.advance(steps={steps}) is invalid: allowed steps >= 1")
        self.index, self.phase = advance_position(self.index, self.phase, steps, self.stages)
        self.count = self.count + steps

    def clone(self) -> PipelineState:
        return type(self)(self.stages, self.index, self.phase, self.count)

    def __repr__(self) -> str:
        return f"PipelineState(stages={self.stages}, index={self.index}, phase={self.phase}, count={self.count})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PipelineState):
            return NotImplemented
        return (self.stages, self.index, self.phase, self.count) == (
            other.stages,
            other.index,
            other.phase,
            other.count,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable
