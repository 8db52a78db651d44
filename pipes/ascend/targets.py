"""Per-target hardware facts: one frozen :class:`AscendTarget` per device generation.

Everything that depends on which Ascend part runs the kernel lives here, and everything that judges a kernel
reads it from here (through ``EventIdRules.target``): the allocator (ids per flag pair), ``flag_pipeline`` and
the emitters (which intra-core flag pairs exist), and the simulator and ``Simulator.prove`` (which pairs
exist, which pipes execute their own instructions in order, how far a cross-core counter counts).

* :data:`ATLAS_A2_A3` — the A2/A3 cube and vector cores (``../shared/DESIGN.md``'s Ascend facts).
* :data:`FIRST_GEN` — first-generation training parts: the A2/A3 facts with 4 ids per pair.
* :data:`ASCEND_950` — Ascend 950 (A5, ``__NPU_ARCH__`` 3510), derived from A2/A3 by :func:`derive_target`:
  the pairs it added (:data:`ASCEND_950_ADDED`) and the pairs it removed (:data:`ASCEND_950_REMOVED`).

What is known about the 950 comes from CANN's documentation, not from a run on one. Its ``HardEvent``
enumeration lists the added cube-side pairs. Which A2/A3 pairs the 950 *removed* is not known here: no
source in this repository says, so :data:`ASCEND_950_REMOVED` is empty — the mechanism takes the set, and a
pair put in it is refused on the 950 (by the simulator, ``prove``, ``flag_pipeline`` and the emitters) with
a message naming the pair and the target. Likewise no source here says the 950 changed which pipes run
their instructions in order, so it keeps A2/A3's; a confirmed change is one argument to
:func:`derive_target`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import SpecError
from .pairs import LEGAL_PAIRS, PIPES_OF, CoreType, Pipe

#: CANN: each cross-core flag id is a counter of at most 15 outstanding sets.
CROSS_CORE_CAPACITY = 15

Triple = tuple[CoreType, Pipe, Pipe]
"""``(core, src, dst)``: one intra-core flag pair."""

_FLAG_PIPES = [p for p in Pipe if p is not Pipe.ALL]


def _triples(table: Mapping[tuple[CoreType, Pipe], Iterable[Pipe]]) -> frozenset[Triple]:
    return frozenset((core, src, dst) for (core, src), dsts in table.items() for dst in dsts)


def _pair_name(triple: Triple) -> str:
    core, src, dst = triple
    return f"{src.name}→{dst.name} ({core.name})"


@dataclass(frozen=True)
class AscendTarget:
    """The facts of one Ascend generation that decide whether a kernel is correct on it.

    Frozen and hashable: ``EventIdRules`` and the simulator's configuration hold one.
    """

    name: str
    """Short name (``"A2/A3"``, ``"A5"``)."""
    label: str
    """How messages name the target (``"Atlas A2"``, ``"Ascend 950 (A5)"``)."""
    event_ids: int
    """Intra-core event ids per flag pair (ids ``0 … event_ids - 1``)."""
    pairs: frozenset[Triple]
    """Every legal intra-core flag pair ``(core, src, dst)``."""
    in_order: frozenset[Pipe]
    """Pipes that finish one instruction before starting the next: a later instruction of such a pipe is
    ordered after an earlier one without ``pipe_barrier``. The other pipes may overlap consecutive
    instructions, so a same-pipe dependency on them needs ``pipe_barrier(PIPE_X)``."""
    cross_core_capacity: int = CROSS_CORE_CAPACITY
    """How many untaken sets one cross-core flag id counts on this hardware (CANN: 15)."""
    cross_core_ids: int = 16
    """Cross-core flag ids per core (``0 … cross_core_ids - 1``)."""
    removed: frozenset[Triple] = field(default=frozenset(), compare=False)
    """Pairs of the target this one was derived from that this one lacks (the refusal says so)."""
    base_label: str | None = field(default=None, compare=False)
    """The label of the target this one was derived from (the first, if derived again), if any."""
    base_pairs: frozenset[Triple] | None = field(default=None, compare=False, repr=False)
    """That target's pairs (``removed`` is those of them this one lacks)."""

    def __post_init__(self) -> None:
        if isinstance(self.event_ids, bool) or not isinstance(self.event_ids, int) or self.event_ids < 1:
            raise SpecError(f"AscendTarget.event_ids = {self.event_ids!r} is invalid: allowed an int >= 1")
        capacity = self.cross_core_capacity
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise SpecError(f"AscendTarget.cross_core_capacity = {capacity!r} is invalid: allowed an int >= 1")
        for core, src, dst in self.pairs:
            if src == dst or src not in PIPES_OF[core] or dst not in PIPES_OF[core]:
                raise SpecError(f"AscendTarget.pairs: {_pair_name((core, src, dst))} is invalid on {core.name}")
        if Pipe.ALL in self.in_order:
            raise SpecError("AscendTarget.in_order: PIPE_ALL is no pipe of its own")

    @property
    def legal_pairs(self) -> dict[tuple[CoreType, Pipe], frozenset[Pipe]]:
        """``(core, src) → destinations``: the pair table in ``pipes.ascend.pairs``' shape."""
        table: dict[tuple[CoreType, Pipe], set[Pipe]] = {}
        for core, src, dst in self.pairs:
            table.setdefault((core, src), set()).add(dst)
        return {key: frozenset(dsts) for key, dsts in table.items()}

    @property
    def overlapping(self) -> frozenset[Pipe]:
        """The pipes not in order (the simulator's ``overlap``): a same-pipe dependency needs a barrier."""
        return frozenset(_FLAG_PIPES) - self.in_order

    def removed_note(self, core: CoreType, src: Pipe, dst: Pipe) -> str | None:
        """Why ``src → dst`` is missing when it is a pair this target's base had, or None."""
        if (core, src, dst) in self.removed:
            return f"removed on this generation; {self.base_label or 'its base'} has it"
        return None

    def __str__(self) -> str:
        return self.label


def derive_target(
    base: AscendTarget,
    *,
    name: str,
    label: str,
    added: Iterable[Triple] = (),
    removed: Iterable[Triple] = (),
    in_order: Iterable[Pipe] | None = None,
    event_ids: int | None = None,
    cross_core_capacity: int | None = None,
) -> AscendTarget:
    """A target that is ``base`` with pairs ``added`` and ``removed`` (and, given, other facts replaced).

    A removed pair ``base`` does not have, or one both added and removed, is an error: the difference is
    meant to be read off the two tables.
    """
    added, removed = frozenset(added), frozenset(removed)
    absent = removed - base.pairs
    if absent:
        raise SpecError(
            f"derive_target({name!r}): removed pairs {sorted(map(_pair_name, absent))} are not pairs of {base.label}"
        )
    if added & removed:
        raise SpecError(f"derive_target({name!r}): pairs {sorted(map(_pair_name, added & removed))} added and removed")
    pairs = (base.pairs - removed) | added
    return AscendTarget(
        name=name,
        label=label,
        event_ids=base.event_ids if event_ids is None else event_ids,
        pairs=pairs,
        in_order=base.in_order if in_order is None else frozenset(in_order),
        cross_core_capacity=base.cross_core_capacity if cross_core_capacity is None else cross_core_capacity,
        cross_core_ids=base.cross_core_ids,
        # Derived from a derived target: removals are named against the root (the first base) and its pairs.
        removed=(root := base.base_pairs if base.base_pairs is not None else base.pairs) - pairs,
        base_label=base.base_label or base.label,
        base_pairs=root,
    )


_P, _C, _V = Pipe, CoreType.AIC, CoreType.AIV

#: A2/A3: the cube's M, MTE1 and FIX pipes and the scalar unit finish one instruction before starting the
#: next; V, MTE2 and MTE3 may overlap consecutive instructions (same-pipe order is ``pipe_barrier(PIPE_X)``).
A2_A3_IN_ORDER = frozenset({_P.M, _P.MTE1, _P.FIX, _P.S})

ATLAS_A2_A3 = AscendTarget(
    name="A2/A3",
    label="Atlas A2",
    event_ids=8,
    pairs=_triples(LEGAL_PAIRS),
    in_order=A2_A3_IN_ORDER,
)
"""Atlas A2/A3 (``pipes.ascend.pairs.LEGAL_PAIRS``); A3 has the same facts under its own label."""

ATLAS_A3 = AscendTarget(name="A2/A3", label="Atlas A3", event_ids=8, pairs=ATLAS_A2_A3.pairs, in_order=A2_A3_IN_ORDER)

FIRST_GEN = AscendTarget(
    name="first-gen", label="first-generation training part", event_ids=4, pairs=ATLAS_A2_A3.pairs,
    in_order=A2_A3_IN_ORDER,
)  # fmt: skip

#: Pairs the 950 added over A2/A3 — the cube-side fixpipe and scalar pairs CANN's ``HardEvent`` enumeration
#: lists for the 950 family (MTE2↔FIX, FIX→MTE3, FIX→S, M→S). From the documentation, not measured.
ASCEND_950_ADDED: frozenset[Triple] = frozenset(
    {(_C, _P.MTE2, _P.FIX), (_C, _P.FIX, _P.MTE2), (_C, _P.FIX, _P.MTE3), (_C, _P.FIX, _P.S), (_C, _P.M, _P.S)}
)

#: A2/A3 pairs the 950 no longer has. Empty: no source in this repository says which (see the module
#: docstring); add a pair here once it is confirmed, and every checker refuses it on the 950.
ASCEND_950_REMOVED: frozenset[Triple] = frozenset()

ASCEND_950 = derive_target(
    ATLAS_A2_A3, name="A5", label="Ascend 950 (A5)", added=ASCEND_950_ADDED, removed=ASCEND_950_REMOVED
)
"""Ascend 950 (A5): A2/A3 plus :data:`ASCEND_950_ADDED`, less :data:`ASCEND_950_REMOVED`; in-order pipes and
cross-core capacity as A2/A3 (no source here says otherwise)."""


def pair_table(target: AscendTarget) -> str:
    """The target's pairs as text, one ``core src → {dsts}`` line per source pipe (for docs and errors)."""
    lines = []
    table = target.legal_pairs
    for core, src in sorted(table, key=lambda key: (key[0].name, _FLAG_PIPES.index(key[1]))):
        dsts = table[(core, src)]
        names = ", ".join(p.name for p in sorted(dsts, key=_FLAG_PIPES.index))
        lines.append(f"{core.name} {src.name} → {{{names}}}")
    return "\n".join(lines)


__all__ = [
    "A2_A3_IN_ORDER",
    "ASCEND_950",
    "ASCEND_950_ADDED",
    "ASCEND_950_REMOVED",
    "ATLAS_A2_A3",
    "ATLAS_A3",
    "CROSS_CORE_CAPACITY",
    "FIRST_GEN",
    "AscendTarget",
    "derive_target",
    "pair_table",
]
