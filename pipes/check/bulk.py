"""Model of one thread's bulk (TMA) store engine: issue, ``commit_group``, ``wait_group[.read]``.

Bulk async-groups are per issuing thread. A store joins the thread's open group when issued;
``commit_group`` closes the group; ``wait_group N`` returns once every group but the newest ``N`` is
complete — only the shared-memory *source reads* with ``.read``, the *global writes* as well without
it. A store that was issued but not yet committed belongs to no group, so no ``wait_group`` covers it.

Each store makes two asynchronous events: it reads its source, then writes its destination. The
checker fires them at the latest moment the protocol allows — when a ``wait_group`` needs them. That is
sound because hazards are judged by happens-before (:mod:`pipes.check.memory`), which does not depend on
when an asynchronous event happens, only on what it is ordered after (the issue) and before (the
``wait_group`` that covers it); and the latest moment is the one that exposes a reader that did not
wait for the write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .memory import Knowledge

ISSUED, SOURCE_READ, WRITTEN = 0, 1, 2


class Store(NamedTuple):
    """One bulk store in flight."""

    ident: int
    group: int | None
    progress: int
    knowledge: Knowledge
    """The copy's own view: the issuer's knowledge at issue, plus the copy's own accesses."""
    src: str
    dst: str
    value: Any


class Engine(NamedTuple):
    """A thread's stores in flight and the number of groups it has committed."""

    committed_groups: int
    stores: tuple[Store, ...]


IDLE = Engine(0, ())


def issue(engine: Engine, ident: int, src: str, dst: str, knowledge: Knowledge) -> Engine:
    return Engine(engine.committed_groups, (*engine.stores, Store(ident, None, ISSUED, knowledge, src, dst, None)))


def commit_group(engine: Engine) -> Engine:
    group = engine.committed_groups
    stores = tuple(s._replace(group=group) if s.group is None else s for s in engine.stores)
    return Engine(group + 1, stores)


ReadSource = Callable[[Store], tuple[Any, Knowledge]]
WriteDestination = Callable[[Store], Knowledge]


def wait_group(
    engine: Engine,
    pending: int,
    read_only: bool,
    read_source: ReadSource,
    write_destination: WriteDestination,
) -> tuple[Engine, list[Knowledge]]:
    """Complete what ``wait_group[.read] pending`` needs, oldest first.

    ``read_source(store)`` performs a store's source read and returns ``(value, knowledge after)``;
    ``write_destination(store)`` performs its global write and returns the knowledge after it. Returns
    the new engine and the knowledge of each covered store, which the issuing thread now has.
    """
    goal = SOURCE_READ if read_only else WRITTEN
    covered_below = engine.committed_groups - pending
    kept: list[Store] = []
    learned: list[Knowledge] = []
    for store in engine.stores:
        if store.group is None or store.group >= covered_below:
            kept.append(store)
            continue
        if store.progress < SOURCE_READ <= goal:
            value, knowledge = read_source(store)
            store = store._replace(progress=SOURCE_READ, value=value, knowledge=knowledge)
        if store.progress < WRITTEN <= goal:
            store = store._replace(progress=WRITTEN, knowledge=write_destination(store))
        learned.append(store.knowledge)
        if store.progress < WRITTEN:
            kept.append(store)
    return Engine(engine.committed_groups, tuple(kept)), learned


def unsafe_at_exit(engine: Engine) -> str | None:
    """Why the issuing thread may not exit yet — a store whose shared-memory source may still be read
    (never committed, or not covered by a ``wait_group[.read]``) — or None.

    Global writes still in flight at exit are not a problem of this kernel: its completion makes them
    visible to the next one (``cp.async.bulk.wait_group.read 0`` before exit, as CUTLASS's epilogues end,
    is enough); readers inside the kernel are judged by happens-before as usual.
    """
    unread = [s for s in engine.stores if s.progress < SOURCE_READ]
    if not unread:
        return None
    uncommitted = [s for s in unread if s.group is None]
    text = (
        f"{len(unread)} TMA store(s) whose shared-memory source may still be read ({', '.join(s.src for s in unread)})"
    )
    if uncommitted:
        text += f", {len(uncommitted)} never committed to a group"
    return text + ": no cp.async.bulk.wait_group.read 0 covers them, and the CTA's shared memory goes away at exit"


def outstanding(engine: Engine) -> str | None:
    """Why the engine is not idle (stores not globally complete), or None."""
    if not engine.stores:
        return None
    unwritten = [s for s in engine.stores if s.progress < WRITTEN]
    uncommitted = [s for s in engine.stores if s.group is None]
    text = f"{len(unwritten)} bulk store(s) not known complete ({', '.join(s.dst for s in unwritten)})"
    if uncommitted:
        text += f", {len(uncommitted)} never committed to a group"
    return text + ": no cp.async.bulk.wait_group 0 (without .read) covers them"
