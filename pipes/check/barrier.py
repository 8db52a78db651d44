"""Models of the two synchronisation objects: the mbarrier (Hopper) and the binary flag (Ascend).

Both are immutable values; every operation returns a new value. Each also carries the happens-before
knowledge it publishes (:mod:`pipes.check.memory`), so a waiter learns what the arrivers had done.

mbarrier semantics modelled here:

* ``completed`` counts finished phases; the current phase is number ``completed`` and its parity is
  ``completed & 1``. A fresh barrier is in phase 0.
* ``try_wait.parity P`` succeeds iff the current phase's parity differs from ``P`` — i.e. the phase
  with parity ``P`` has completed. On a fresh barrier parity 1 passes at once (the "previous" phase
  counts as complete). The completion a passing wait observes is the latest one, ``completed - 1``.
* A phase completes when its pending arrivals reach zero and its transaction count is zero; then the
  pending count resets to ``expected``.
"""

from __future__ import annotations

from typing import NamedTuple

from .memory import EMPTY_KNOWLEDGE, Knowledge, join


class BarrierState(NamedTuple):
    """One mbarrier: ``expected`` arrivals per phase; ``pending`` still missing in the current one."""

    expected: int
    completed: int
    pending: int
    tx: int
    published: Knowledge
    """What the last completed phase's arrivers knew (a passing waiter learns it)."""
    gathered: Knowledge
    """What the current phase's arrivers knew so far."""

    @classmethod
    def fresh(cls, expected: int) -> BarrierState:
        return cls(expected, 0, expected, 0, EMPTY_KNOWLEDGE, EMPTY_KNOWLEDGE)


def passes(bar: BarrierState, parity: int) -> bool:
    """Whether ``try_wait.parity parity`` succeeds now."""
    return (bar.completed & 1) != parity


class OverArrival(Exception):
    """An arrive asked for more arrivals than the current phase still needs."""


def _maybe_complete(bar: BarrierState) -> BarrierState:
    if bar.pending == 0 and bar.tx == 0:
        return BarrierState(bar.expected, bar.completed + 1, bar.expected, 0, bar.gathered, EMPTY_KNOWLEDGE)
    return bar


def arrive(bar: BarrierState, count: int, knowledge: Knowledge, expect_tx: int = 0) -> BarrierState:
    """``count`` arrivals (and ``expect_tx`` more outstanding bytes) into the current phase."""
    if count > bar.pending:
        raise OverArrival(f"{count} arrivals with only {bar.pending} of {bar.expected} pending")
    updated = bar._replace(pending=bar.pending - count, tx=bar.tx + expect_tx, gathered=join(bar.gathered, knowledge))
    return _maybe_complete(updated)


def complete_tx(bar: BarrierState, nbytes: int, knowledge: Knowledge) -> BarrierState:
    """An asynchronous copy delivered ``nbytes`` to this barrier's transaction count."""
    updated = bar._replace(tx=bar.tx - nbytes, gathered=join(bar.gathered, knowledge))
    return _maybe_complete(updated)


def status(bar: BarrierState) -> str:
    """Where the barrier stands, for messages."""
    arrived = bar.expected - bar.pending
    text = f"{bar.completed} phase(s) completed; phase #{bar.completed} has {arrived} of {bar.expected} arrivals"
    if bar.tx:
        text += f" and {bar.tx} transaction bytes outstanding"
    return text


def arrival_problem(bar: BarrierState, completion: int | None, count: int) -> tuple[str, str] | None:
    """Judge an arrival meant for phase ``completion``: ``(kind name, detail)`` or None when fine."""
    if completion is None or completion == bar.completed:
        return None
    if completion < bar.completed:
        got = bar.expected + count
        return (
            "OVER_ARRIVAL",
            f"more arrivals in phase #{completion} than the barrier expects (expected {bar.expected}, got {got}): "
            f"phase #{completion} had already completed, so these arrivals land in phase #{bar.completed}",
        )
    return (
        "PHASE_ALIASING",
        f"an arrival meant for phase #{completion} lands in phase #{bar.completed}: "
        "the arriving agent is a full ring ahead",
    )


def late_wait_problem(bar: BarrierState, parity: int, completion: int | None) -> str | None:
    """A waiter that can no longer observe the completion it means to: the barrier is 2+ phases past it."""
    if completion is None or bar.completed < completion + 2:
        return None
    return (
        f"it waits for completion #{completion} (parity {parity}) but the barrier has already completed "
        f"#{completion} and #{completion + 1} ({bar.completed} in all): a parity wait sees only the latest phase, "
        "so it hangs or passes on the wrong phase — another agent ran a full ring ahead"
    )


def stale_pass_problem(bar: BarrierState, parity: int, completion: int | None) -> str | None:
    """A wait that passes now, but not on the completion it means to observe (its parity aliases)."""
    if completion is None or not passes(bar, parity) or bar.completed == completion + 1:
        return None
    seen = bar.completed - 1
    seen_text = "the fresh barrier's virtual completion #-1" if seen < 0 else f"the stale completion #{seen}"
    return (
        f"it passes a wait for completion #{completion} (parity {parity}) although the barrier has completed "
        f"only {bar.completed} phase(s): it passed on {seen_text}, which has the same parity"
    )


def parity_hint(parity: int, completion: int | None) -> str:
    """A note when a blocked waiter's parity cannot match the completion it means to observe."""
    if completion is None or (completion & 1) == parity:
        return ""
    return (
        f" — its parity {parity} does not match completion #{completion} (parity {completion & 1}): "
        "is the cursor's start phase or phase flip wrong (a producer starts at phase 1, a consumer at 0)?"
    )


class FlagState(NamedTuple):
    """A binary flag (Ascend ``set_flag``/``wait_flag``) and what its setter knew."""

    is_set: bool
    published: Knowledge

    @classmethod
    def fresh(cls, is_set: bool = False) -> FlagState:
        return cls(is_set, EMPTY_KNOWLEDGE)


class DoubleSet(Exception):
    """``set_flag`` on a flag that is already set (undefined behaviour on Ascend)."""


def set_flag(flag: FlagState, knowledge: Knowledge) -> FlagState:
    if flag.is_set:
        raise DoubleSet("set_flag on a flag that is already set: a second set before the wait")
    return FlagState(True, knowledge)


def flag_ready(flag: FlagState) -> bool:
    """Whether ``wait_flag`` can pass now (it then clears the flag)."""
    return flag.is_set


def clear_flag(flag: FlagState) -> FlagState:
    return FlagState(False, EMPTY_KNOWLEDGE)
