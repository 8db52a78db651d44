"""Model of a counter that synchronises: an Ascend cross-core flag, a GPU semaphore or ready flag in memory.

One immutable value per counter; every operation returns a new one.

* ``signal(by)`` adds ``by`` with release semantics (Ascend ``set_cross_flag``; CUDA ``red.release.add``).
  Beyond ``capacity`` the signal is lost — the caller reports it and the counter does not count it, so
  the wait it was meant for shows the consequence.
* ``take`` blocks while the value is 0, then subtracts one (Ascend ``wait_cross_flag``; a semaphore
  acquire). The taker learns what every signal up to the one it took knew — signals are counted in
  order, so taking the k-th means the first k happened.
* ``wait(at_least=n)`` blocks until the value is at least ``n`` and takes nothing (a ready flag read with
  ``ld.acquire``; a threshold quorum: "at least n of the m producers are done"). It learns what every
  signal so far knew.
* ``store(value)`` overwrites the value (``st.release``), as an epoch flag does; readers then learn what
  the storer knew.
"""

from __future__ import annotations

from typing import NamedTuple

from .memory import EMPTY_KNOWLEDGE, Knowledge, join


class CounterState(NamedTuple):
    value: int
    pending: tuple[Knowledge, ...]
    """Per untaken unit, oldest first: what a take of it learns (cumulative)."""
    published: Knowledge
    """What every signal or store so far knew (what a waiter for a value learns)."""

    @classmethod
    def fresh(cls, initial: int) -> CounterState:
        return cls(initial, (EMPTY_KNOWLEDGE,) * initial, EMPTY_KNOWLEDGE)


class CounterFull(Exception):
    """A signal that would take the counter beyond its capacity: it is lost."""


def signal(counter: CounterState, by: int, knowledge: Knowledge, capacity: int | None) -> CounterState:
    if capacity is not None and counter.value + by > capacity:
        lost = counter.value + by - capacity
        raise CounterFull(
            f"it already holds {counter.value} untaken signal(s) and counts at most {capacity}, so "
            + ("this signal is lost" if by == 1 else f"{lost} of these {by} signals are lost")
        )
    published = join(counter.published, knowledge)
    return CounterState(counter.value + by, counter.pending + (published,) * by, published)


def can_take(counter: CounterState) -> bool:
    return counter.value > 0


def take(counter: CounterState) -> tuple[CounterState, Knowledge]:
    """Take one signal: the new counter and what the taker learns."""
    learned = counter.pending[0] if counter.pending else counter.published
    return CounterState(counter.value - 1, counter.pending[1:], counter.published), learned


def reaches(counter: CounterState, at_least: int) -> bool:
    return counter.value >= at_least


def store(counter: CounterState, value: int, knowledge: Knowledge) -> CounterState:
    # A plain store starts a new release sequence: readers of the new value learn what the storer knew.
    # (Only the first few units are queued: takes after a store of a large value learn ``published``.)
    return CounterState(value, (knowledge,) * min(max(value, 0), _QUEUED), knowledge)


_QUEUED = 16
