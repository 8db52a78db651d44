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
  signal so far knew. ``wait_value`` (``Ctx.wait_value``) blocks until the value *equals* ``n`` instead:
  a flag whose tokens alternate (launch parity), where "at least" would not mean "this launch's".
* ``store(value)`` overwrites the value (``st.release``), as an epoch flag does; readers then learn what
  the storer knew.
* A *relaxed* signal or store (a flag written without the fence before it, a copy engine's flag write
  without its memory barrier) changes the value the same way but publishes nothing.

Every release carries its agent's place and scope (:mod:`pipes.check.scope`): a reader learns only what
releases that reach it published, through an acquire whose scope includes the releaser. Releases that
do not reach a reader stay in the state, so a hazard they fail to prevent can name them.
"""

from __future__ import annotations

from typing import NamedTuple

from .memory import EMPTY_KNOWLEDGE, Knowledge, join
from .scope import Place, Scope, reaches


class Release(NamedTuple):
    """What one releasing agent (at ``place``, with ``scope``) published, joined over its releases."""

    place: Place
    scope: Scope
    who: str
    knowledge: Knowledge
    relaxed: bool = False
    """A relaxed store or add: ``knowledge`` is what it would have published, had it been a release; it
    publishes nothing (kept so a hazard it fails to prevent can name it)."""


Releases = tuple[Release, ...]


def _add(releases: Releases, release: Release) -> Releases:
    for index, old in enumerate(releases):
        if old[:3] == release[:3] and old.relaxed == release.relaxed:
            merged = old._replace(knowledge=join(old.knowledge, release.knowledge))
            return (*releases[:index], merged, *releases[index + 1 :])
    return (*releases, release)


def visible(releases: Releases, reader: Place, acquire: Scope) -> Knowledge:
    """What a reader at ``reader`` acquiring with scope ``acquire`` learns from ``releases``."""
    learned = EMPTY_KNOWLEDGE
    for release in releases:
        if release.relaxed:
            continue
        if reaches(release.scope, release.place, reader) and reaches(acquire, reader, release.place):
            learned = join(learned, release.knowledge)
    return learned


class CounterState(NamedTuple):
    value: int
    pending: tuple[Releases, ...]
    """Per untaken unit, oldest first: what a take of it learns (cumulative)."""
    published: Releases
    """What every signal or store so far published (what a waiter for a value learns)."""

    @classmethod
    def fresh(cls, initial: int) -> CounterState:
        return cls(initial, ((),) * min(initial, _QUEUED), ())


_QUEUED = 16
"""Only the first few units are queued: takes beyond them (after storing a large value) learn ``published``."""


class CounterFull(Exception):
    """A signal that would take the counter beyond its capacity: it is lost."""


def signal(counter: CounterState, by: int, release: Release, capacity: int | None) -> CounterState:
    if capacity is not None and counter.value + by > capacity:
        lost = counter.value + by - capacity
        raise CounterFull(
            f"it already holds {counter.value} untaken signal(s) and counts at most {capacity}, so "
            + ("this signal is lost" if by == 1 else f"{lost} of these {by} signals are lost")
        )
    published = _add(counter.published, release)
    queued = counter.pending + (published,) * min(by, max(0, _QUEUED - len(counter.pending)))
    return CounterState(counter.value + by, queued, published)


def can_take(counter: CounterState) -> bool:
    return counter.value > 0


def take(counter: CounterState) -> tuple[CounterState, Releases]:
    """Take one signal: the new counter and the releases the taker synchronises with."""
    learned = counter.pending[0] if counter.pending else counter.published
    return CounterState(counter.value - 1, counter.pending[1:], counter.published), learned


def store(counter: CounterState, value: int, release: Release) -> CounterState:
    # A plain store starts a new release sequence: readers of the new value synchronise with it alone.
    published = (release,)
    return CounterState(value, (published,) * min(max(value, 0), _QUEUED), published)
