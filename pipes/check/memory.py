"""Data cells and happens-before knowledge: how the checker judges reads and writes.

A *cell* is a piece of data the protocol protects: a slot's buffer (``out.slot[2]``), a slot's
metadata (``out.meta[2]``), a tile in global memory (``global['C', 3]``). Each cell has a version (how
many times it was written), the set of knowers that read the current version, and the current value.

*Knowledge* is what a knower (an agent, or an agent's bulk-copy engine) is guaranteed to see: for each
cell, the latest version whose write happens-before the knower's current point, and which reads of
that version happen-before it too. It grows along program order and flows through synchronisation:
an arrive adds the arriver's knowledge to the barrier's phase, a passing wait adds the completed phase's
knowledge to the waiter. It is a vector clock restricted to data accesses, so its entries stay small
and a correct protocol reaches the same knowledge whatever the interleaving (state hashing stays
effective).

Because accesses are judged by happens-before, a race is found whichever of the two accesses runs
first: a write checks that every read of the previous version is known to have finished (else an
*overwrite of a slot not yet released*), and a read checks that the latest write is known (else a
*read of data that was not committed* to this reader).

Knowledge is a sorted tuple of ``(cell, version, readers bitmask)``; it is hashable and compared by value.

*Ordered, not visible*: a wait at CTA scope that passes on a phase a peer CTA's arrive completed does not
synchronise with that arrive (:mod:`pipes.check.barrier`), yet it does come after it — the peer's reads
have returned, its writes were issued. What the peer knew is then learned under :func:`ordered_name`
(:func:`learn_ordered`): a later write by the waiter is ordered after those reads and writes (no race), a
later read of what the peer wrote is not (the write need not be visible: ``READ_UNCOMMITTED``).

Reader bits, for a protocol of ``n`` agents: bit ``a`` is agent ``a``'s read, bit ``n + a`` its bulk
(TMA) store engine's read, bit ``2n + a`` "agent ``a``'s read is fenced". A cell records only the first
two kinds; the other bits live in knowledge. Ordinary loads read through the *generic proxy*, TMA loads
and bulk stores write through the *async proxy*, and a release/acquire pair does not order the first
before the second: an async write therefore needs, for each agent that read the cell, that agent's
*fenced* bit — set by its ``fence.proxy.async`` (:func:`fence`) after the read and before the release
that publishes it, or at once by a read through the async proxy (wgmma operands, TMA forwarding). The
engines' reads are async themselves and need no fence.

The writer side (read-after-write across proxies) uses two more kinds of bit: ``3n + a`` "this version
was written by agent ``a`` through the generic proxy" (set by the write itself) and ``4n`` "its writer
fenced it" (set by the writer's :func:`fence`). A bulk store's source read (:func:`require_fenced_write`)
needs the second whenever the first is there; a version written through the async proxy (a TMA load, a
bulk copy) carries neither and needs no fence. Both bits are facts about one version, so joining
knowledge by the union of bits keeps them right: a fenced fact dominates an unfenced one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

Knowledge = tuple[tuple[str, int, int], ...]

REREAD = 5
"""Bit kind ``5n + a``: agent ``a``'s read of a version made again after a release that published its
earlier read of it (read → release → read again). Kept apart from bit ``a``, so what that release
published does not cover it: a writer ordered only after the release still races with it."""
RELEASED = 6
"""Bit kind ``6n + a``, in agent ``a``'s own knowledge only: ``a`` has released since reading this version."""


def mark_released(knowledge: Knowledge, reads: int, released: int) -> Knowledge:
    """After a release by the agent whose read bits are ``reads``: flag every version it has read."""
    if all(not readers & reads or readers & released for _, _, readers in knowledge):
        return knowledge
    return tuple((c, v, r | released if r & reads else r) for c, v, r in knowledge)


def reader_bit(knowledge: Knowledge, cell: str, version: int, first: int, again: int, released: int) -> int:
    """Which bit an agent's read of ``cell`` at ``version`` is recorded under: ``again`` when the agent has
    released since it last read this version under ``first`` (so the new read is not covered), else the
    bit it read under last (``first`` by default)."""
    known_version, readers = lookup(knowledge, cell)
    if known_version != version or not readers & released:
        return again if known_version == version and readers & again and not readers & first else first
    return again if readers & first else first


def forget_released(knowledge: Knowledge, cell: str, released: int) -> Knowledge:
    """The released flag of ``cell`` cleared (after a new read: it is not published yet)."""
    for index, (name, version, readers) in enumerate(knowledge):
        if name == cell:
            if not readers & released:
                return knowledge
            return (*knowledge[:index], (name, version, readers & ~released), *knowledge[index + 1 :])
    return knowledge


EMPTY_KNOWLEDGE: Knowledge = ()

ORDERED = "ordered only: "
"""The prefix of a knowledge entry that orders later writes but makes nothing visible (see the module notes)."""


def ordered_name(cell: str) -> str:
    """The knowledge entry under which ``cell``'s ordered-but-not-visible version is kept."""
    return cell if cell.startswith(ORDERED) else ORDERED + cell


def learn_ordered(knowledge: Knowledge, remote: Knowledge) -> Knowledge:
    """``knowledge`` after an acquire that comes after ``remote``'s releases but does not synchronise with them.

    Reads of a version the knower already sees join its entry (they are done, whatever the scope); a newer
    version is kept under :func:`ordered_name`, so a write may follow it but a read may not.
    """
    learned: dict[str, tuple[int, int]] = {}
    for cell, version, readers in remote:
        known_version, known_readers = lookup(knowledge, cell)
        if version < known_version or (version == known_version and not readers & ~known_readers):
            continue
        name = cell if version == known_version else ordered_name(cell)
        old = learned.get(name)
        if old is None or version > old[0]:
            learned[name] = (version, readers)
        elif version == old[0]:
            learned[name] = (version, readers | old[1])
    if not learned:
        return knowledge
    return join(knowledge, tuple(sorted((cell, version, readers) for cell, (version, readers) in learned.items())))


def ordered_version(knowledge: Knowledge, cell: str) -> int:
    """The latest version of ``cell`` that ``knowledge`` is ordered after without seeing it (0: none)."""
    return lookup(knowledge, ordered_name(cell))[0]


def lookup(knowledge: Knowledge, cell: str) -> tuple[int, int]:
    """``(version, readers)`` known for ``cell``; ``(0, 0)`` when nothing is known."""
    for name, version, readers in knowledge:
        if name == cell:
            return version, readers
    return 0, 0


def join(a: Knowledge, b: Knowledge) -> Knowledge:
    """The least knowledge that includes both: per cell the newer version, or the union of readers."""
    if not b or a is b:
        return a
    if not a:
        return b
    merged = {cell: (version, readers) for cell, version, readers in a}
    changed = False
    for cell, version, readers in b:
        mine = merged.get(cell)
        if mine is None or version > mine[0]:
            merged[cell] = (version, readers)
            changed = True
        elif version == mine[0] and (readers | mine[1]) != mine[1]:
            merged[cell] = (version, readers | mine[1])
            changed = True
    if not changed:
        return a
    return tuple(sorted((cell, version, readers) for cell, (version, readers) in merged.items()))


def learn(knowledge: Knowledge, cell: str, version: int, readers: int) -> Knowledge:
    """``knowledge`` plus one fact about ``cell`` (the common case of :func:`join`, kept sorted in place)."""
    for index, (name, known_version, known_readers) in enumerate(knowledge):
        if name == cell:
            if version > known_version:
                entry = (cell, version, readers)
            elif version == known_version and (readers | known_readers) != known_readers:
                entry = (cell, version, readers | known_readers)
            else:
                return knowledge
            return (*knowledge[:index], entry, *knowledge[index + 1 :])
        if name > cell:
            return (*knowledge[:index], (cell, version, readers), *knowledge[index:])
    return (*knowledge, (cell, version, readers))


class CellState(NamedTuple):
    version: int
    readers: int
    value: Any
    initial: bool = False
    """Version 0 holds a value a previous kernel left (``Protocol(initial=...)``): reading it is no hazard."""


UNWRITTEN = CellState(0, 0, None)


class Hazard(Exception):
    """A data access that is not ordered with a conflicting one. ``kind`` names a FindingKind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


Namer = Callable[[int], str]


def _version(state: CellState) -> str:
    return f"write #{state.version}" if state.version or not state.initial else "the value at kernel start"


def _is_global(cell: str) -> bool:
    return cell.startswith("global[")


def _uncommitted(cell: str) -> str:
    """Why a read saw data that was not ordered before it, in the terms of what the cell is."""
    if _is_global(cell):
        return (
            "a read of global memory whose write is not ordered before it (no release → acquire chain from its writer)"
        )
    if ".meta[" in cell:
        return "a read of a slot's metadata that was not committed"
    return "a read of a slot whose data was not committed"


_NO_CREDIT = (
    "the reader released nothing after its read that the writer acquired (such as a credit handing the buffer back)"
)


def _unreleased(cell: str) -> str:
    """Why a write came too early for an earlier read, in the terms of what the cell is."""
    if _is_global(cell):
        return f"nothing orders that read before this write: {_NO_CREDIT}"
    return "the slot was not released after that read"


def _handed_back(cell: str) -> str:
    if _is_global(cell):
        return f"the overwrite is not ordered after this read: {_NO_CREDIT}"
    return "the slot was handed back before the read finished"


def write(
    cell: str,
    state: CellState,
    knowledge: Knowledge,
    value: Any,
    who: str,
    names: Namer,
    async_agents: int = 0,
    writer_bit: int = 0,
) -> tuple[CellState, Knowledge]:
    """``who`` (knowing ``knowledge``) writes ``value``; returns the new cell and the writer's knowledge.

    ``async_agents`` > 0: the write goes through the async proxy in a protocol of that many agents, so
    every agent read of the previous version must also be known *fenced* (bit ``2 * async_agents + a``).
    ``writer_bit``: for a generic write by an agent, its writer bit (``3n + a``), which the new version
    carries until the writer's fence adds the write-fenced bit.
    """
    known = lookup(knowledge, cell)
    hazard = _write_hazard(cell, state, known, who, names, async_agents)
    if hazard is not None:
        ordered = lookup(knowledge, ordered_name(cell))
        if ordered[0] > known[0]:
            hazard = _write_hazard(cell, state, ordered, who, names, async_agents)
        elif ordered[0] == known[0] and ordered[1] & ~known[1]:
            hazard = _write_hazard(cell, state, (known[0], known[1] | ordered[1]), who, names, async_agents)
        if hazard is not None:
            raise hazard
    version = state.version + 1
    return CellState(version, 0, value), learn(knowledge, cell, version, writer_bit)


def _write_hazard(
    cell: str, state: CellState, known: tuple[int, int], who: str, names: Namer, async_agents: int
) -> Hazard | None:
    """What is wrong with ``who``'s write of ``cell`` when it knows ``(version, readers)`` of it (None: nothing)."""
    known_version, known_readers = known
    if known_version < state.version:
        return Hazard(
            "OVERWRITE_UNRELEASED",
            f"{who} overwrites {cell} but write #{state.version} of it is not ordered before this write "
            f"({who} last synchronised with write #{known_version}): two unordered writes",
        )
    unfinished = state.readers & ~known_readers
    if unfinished:
        return Hazard(
            "OVERWRITE_UNRELEASED",
            f"{who} overwrites {cell} (write #{state.version + 1}) while the read of {_version(state)} by "
            f"{names(unfinished)} is not known to have finished: {_unreleased(cell)}",
        )
    if async_agents:
        mask = (1 << async_agents) - 1
        agent_reads = (state.readers & mask) | (state.readers >> (REREAD * async_agents) & mask)
        unfenced = agent_reads & ~(known_readers >> (2 * async_agents))
        if unfenced:
            return Hazard(
                "OVERWRITE_UNRELEASED",
                f"{who} overwrites {cell} while {names(unfenced)}'s read of write #{state.version} was not fenced "
                "(fence.proxy.async) before its release: the async-proxy write may overtake the generic read",
            )
    return None


def read(
    cell: str, state: CellState, knowledge: Knowledge, reader_bit: int, who: str, fenced_bit: int = 0
) -> tuple[CellState, Knowledge]:
    """``who`` reads ``cell``; returns the new cell (with the reader recorded) and the reader's knowledge.

    ``fenced_bit``: the reader's fenced bit, for a read through the async proxy (it needs no fence).
    """
    known_version, known_readers = lookup(knowledge, cell)
    if state.version == 0 and not state.initial:
        raise Hazard(
            "READ_UNCOMMITTED",
            f"{who} reads {cell}, which nothing has written yet: {_uncommitted(cell)}",
        )
    if known_version < state.version:
        # Ordered after the write without seeing it (a CTA-scoped wait after a peer CTA's write): not visible.
        ordered = ordered_version(knowledge, cell) >= state.version
        if known_version >= 1 and not known_readers & reader_bit and not ordered:
            raise Hazard(
                "OVERWRITE_UNRELEASED",
                f"{who} reads {cell} expecting write #{known_version}, but write #{state.version} already "
                f"overwrote it: {_handed_back(cell)}",
            )
        if ordered:
            seen = f"synchronised with {f'write #{known_version}' if known_version else 'no write of it'}"
        elif known_version:
            seen = f"last synchronised with write #{known_version}"
        else:
            seen = "is ordered after no write of it"
        raise Hazard(
            "READ_UNCOMMITTED",
            f"{who} reads {cell} but its write #{state.version} is not ordered before this read "
            f"({who} {seen}): {_uncommitted(cell)}",
        )
    updated = CellState(state.version, state.readers | reader_bit, state.value, state.initial)
    return updated, learn(knowledge, cell, state.version, known_readers | reader_bit | fenced_bit)


def fence(
    knowledge: Knowledge, reader_bit: int, fenced_bit: int, writer_bit: int = 0, write_fenced: int = 0
) -> Knowledge:
    """``fence.proxy.async`` by the agent with ``reader_bit`` (and ``writer_bit``): each of its reads it knows
    of becomes fenced (``fenced_bit``), and each of its generic writes too (``write_fenced``)."""

    def fenced(readers: int) -> int:
        if readers & reader_bit:
            readers |= fenced_bit
        if readers & writer_bit:
            readers |= write_fenced
        return readers

    if all(fenced(readers) == readers for _, _, readers in knowledge):
        return knowledge
    return tuple((cell, version, fenced(readers)) for cell, version, readers in knowledge)


def require_fenced_write(cell: str, knowledge: Knowledge, who: str, agents: int, names: Namer) -> None:
    """An async-proxy read of ``cell`` (a bulk store's source) by ``who``, knowing ``knowledge``: if the
    version it reads was written through the generic proxy, its writer must have fenced it before the
    read was ordered after the write (before issuing the store, or before the release publishing it)."""
    version, bits = lookup(knowledge, cell)
    writers = bits >> (3 * agents) & ((1 << agents) - 1)
    if writers and not bits >> (4 * agents) & 1:
        raise Hazard(
            "READ_UNCOMMITTED",
            f"{who} reads {cell} (write #{version} by {names(writers)}) through the async proxy, but that generic "
            "write was not fenced (fence.proxy.async) before the store was issued: the store may read stale "
            "shared memory",
        )
