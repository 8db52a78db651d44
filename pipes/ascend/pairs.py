"""Ascend pipes, core types, memory spaces and the flag pairs the hardware allows between them.

The facts come from the A2/A3 cube (AIC) and vector (AIV) cores: each core issues work from its scalar
unit into in-order pipes; ``set_flag(src, dst, id)`` / ``wait_flag(src, dst, id)`` order one pipe after
another, and only the pairs in :data:`LEGAL_PAIRS` exist. Intra-core flags never cross AIC↔AIV; cross-core
flags do (see :mod:`pipes.ascend.crosscore`).
"""

from __future__ import annotations

import enum
from typing import Protocol

from ..errors import SpecError


class Pipe(enum.Enum):
    """An in-order execution queue of one core."""

    MTE1 = "MTE1"
    """L1 → L0A/L0B loads (cube)."""
    MTE2 = "MTE2"
    """GM → L1/L0 (cube) or GM → UB (vector) loads."""
    MTE3 = "MTE3"
    """UB → GM (vector) or L1 → GM (cube) stores."""
    M = "M"
    """The cube unit: matrix multiply-accumulate L0A × L0B → L0C."""
    V = "V"
    """The vector unit: elementwise work on UB."""
    FIX = "FIX"
    """Fixpipe: L0C → GM/L1 with conversion."""
    S = "S"
    """The scalar unit, which also issues every other pipe's instructions in program order."""
    ALL = "ALL"
    """Every pipe of the core — only for ``pipe_barrier(PIPE_ALL)``; never a flag's source or destination."""

    @classmethod
    def parse(cls, value: Pipe | str) -> Pipe:
        """A :class:`Pipe` from itself or a name in any case (``"mte2"``, ``"PIPE_MTE2"``)."""
        if isinstance(value, Pipe):
            return value
        if isinstance(value, str):
            name = value.upper().removeprefix("PIPE_")
            if name in cls.__members__:
                return cls[name]
        raise SpecError(f"pipe = {value!r} is invalid: allowed one of {[p.name for p in cls]} (any case)")

    def __str__(self) -> str:
        return self.value


class CoreType(enum.Enum):
    """Which kind of AI core runs a piece of code."""

    AIC = "AIC"
    """Cube core: MTE1, MTE2, MTE3, M, FIX, S."""
    AIV = "AIV"
    """Vector core: MTE2, MTE3, V, S."""

    @classmethod
    def parse(cls, value: CoreType | str) -> CoreType:
        if isinstance(value, CoreType):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise SpecError(f"core = {value!r} is invalid: allowed one of {[c.name for c in cls]}")

    def __str__(self) -> str:
        return self.value


class Space(enum.Enum):
    """A memory a buffer lives in."""

    GM = "GM"
    L1 = "L1"
    L0A = "L0A"
    L0B = "L0B"
    L0C = "L0C"
    UB = "UB"

    def __str__(self) -> str:
        return self.value


PIPES_OF: dict[CoreType, frozenset[Pipe]] = {
    CoreType.AIC: frozenset({Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.M, Pipe.FIX, Pipe.S}),
    CoreType.AIV: frozenset({Pipe.MTE2, Pipe.MTE3, Pipe.V, Pipe.S}),
}

SPACES_OF: dict[CoreType, frozenset[Space]] = {
    CoreType.AIC: frozenset({Space.GM, Space.L1, Space.L0A, Space.L0B, Space.L0C}),
    CoreType.AIV: frozenset({Space.GM, Space.UB}),
}

_P = Pipe
#: (core, source pipe) → the destination pipes a ``set_flag``/``wait_flag`` pair may name.
LEGAL_PAIRS: dict[tuple[CoreType, Pipe], frozenset[Pipe]] = {
    (CoreType.AIC, _P.M): frozenset({_P.MTE1, _P.MTE2, _P.FIX}),
    (CoreType.AIC, _P.MTE1): frozenset({_P.M, _P.MTE2, _P.MTE3, _P.FIX}),
    (CoreType.AIC, _P.MTE2): frozenset({_P.M, _P.MTE1, _P.MTE3}),
    (CoreType.AIC, _P.MTE3): frozenset({_P.MTE1, _P.MTE2}),
    (CoreType.AIC, _P.FIX): frozenset({_P.M, _P.MTE1}),
    (CoreType.AIV, _P.S): frozenset({_P.V, _P.MTE2, _P.MTE3}),
    (CoreType.AIV, _P.V): frozenset({_P.S, _P.MTE2, _P.MTE3}),
    (CoreType.AIV, _P.MTE2): frozenset({_P.S, _P.V, _P.MTE3}),
    (CoreType.AIV, _P.MTE3): frozenset({_P.S, _P.V, _P.MTE2}),
}

#: Ascend 950 (A5, ``__NPU_ARCH__`` 3510), written out: the A2/A3 pairs plus the cube-side fixpipe and scalar
#: pairs that CANN's ``HardEvent`` enumeration lists for the 950 family (MTE2↔FIX, FIX→MTE3, FIX→S, M→S).
#: Taken from the documentation, not measured on hardware: confirm on a 950 before relying on an extra pair.
#: Which A2/A3 pairs the 950 removed is not known here (none are removed); the facts, and the mechanism that
#: removes pairs, live in :mod:`pipes.ascend.targets` (``ASCEND_950`` is derived there and must equal this).
ASCEND_950_PAIRS: dict[tuple[CoreType, Pipe], frozenset[Pipe]] = {
    (CoreType.AIC, _P.M): frozenset({_P.MTE1, _P.MTE2, _P.FIX, _P.S}),
    (CoreType.AIC, _P.MTE1): frozenset({_P.M, _P.MTE2, _P.MTE3, _P.FIX}),
    (CoreType.AIC, _P.MTE2): frozenset({_P.M, _P.MTE1, _P.MTE3, _P.FIX}),
    (CoreType.AIC, _P.MTE3): frozenset({_P.MTE1, _P.MTE2}),
    (CoreType.AIC, _P.FIX): frozenset({_P.M, _P.MTE1, _P.MTE2, _P.MTE3, _P.S}),
    (CoreType.AIV, _P.S): frozenset({_P.V, _P.MTE2, _P.MTE3}),
    (CoreType.AIV, _P.V): frozenset({_P.S, _P.MTE2, _P.MTE3}),
    (CoreType.AIV, _P.MTE2): frozenset({_P.S, _P.V, _P.MTE3}),
    (CoreType.AIV, _P.MTE3): frozenset({_P.S, _P.V, _P.MTE2}),
}

_PIPE_ORDER = list(Pipe)


def _names(pipes: frozenset[Pipe] | set[Pipe]) -> str:
    return "{" + ", ".join(p.name for p in sorted(pipes, key=_PIPE_ORDER.index)) + "}"


class PairTable(Protocol):
    """What decides a target's flag pairs (a :class:`pipes.ascend.targets.AscendTarget`, or a
    :class:`pipes.ascend.Generation`, which stands for its target)."""

    label: str
    legal_pairs: dict[tuple[CoreType, Pipe], frozenset[Pipe]]


def legal_destinations(core: CoreType, src: Pipe, target: PairTable | None = None) -> frozenset[Pipe]:
    """The pipes ``src`` may signal with an intra-core flag on ``core`` (empty if none), on ``target``
    (default: the A2/A3 table)."""
    pairs = LEGAL_PAIRS if target is None else target.legal_pairs
    return pairs.get((core, src), frozenset())


def pair_problem(core: CoreType, src: Pipe, dst: Pipe, target: PairTable | None = None) -> str | None:
    """Why ``set_flag(src, dst)`` is illegal on ``core`` of ``target``, or None when the pair exists."""
    for pipe in (src, dst):
        if pipe not in PIPES_OF[core]:
            return f"pipe {pipe.name} does not exist on the {core.name} core (it has {_names(PIPES_OF[core])})"
    if src == dst:
        return f"{src.name}→{dst.name} is one pipe: order it with pipe_barrier(PIPE_{src.name}), not a flag"
    allowed = legal_destinations(core, src, target)
    if dst in allowed:
        return None
    on = f"the {core.name} core" + ("" if target is None else f" of {target.label}")
    note = getattr(target, "removed_note", None)
    removed = note(core, src, dst) if note is not None else None
    why = "" if removed is None else f" ({removed})"
    if not allowed:
        return f"{src.name} cannot set intra-core flags on {on}{why}"
    return f"{src.name}→{dst.name} is not a flag pair on {on}{why}; {src.name} may signal {_names(allowed)}"


def check_pair(core: CoreType, src: Pipe, dst: Pipe, target: PairTable | None = None) -> None:
    """Raise :class:`SpecError` naming the legal destinations unless ``src → dst`` is a flag pair on ``core``."""
    problem = pair_problem(core, src, dst, target)
    if problem is not None:
        raise SpecError(f"illegal flag pair: {problem}")


def check_pipe_on(core: CoreType, pipe: Pipe, what: str = "pipe") -> None:
    if pipe not in PIPES_OF[core]:
        raise SpecError(f"{what} = {pipe.name} is invalid on the {core.name} core: allowed {_names(PIPES_OF[core])}")


#: (source space, destination space) → (pipe that moves the data, core it runs on).
COPY_ROUTES: dict[tuple[Space, Space], tuple[Pipe, CoreType]] = {
    (Space.GM, Space.L1): (Pipe.MTE2, CoreType.AIC),
    (Space.GM, Space.L0A): (Pipe.MTE2, CoreType.AIC),
    (Space.GM, Space.L0B): (Pipe.MTE2, CoreType.AIC),
    (Space.L1, Space.L0A): (Pipe.MTE1, CoreType.AIC),
    (Space.L1, Space.L0B): (Pipe.MTE1, CoreType.AIC),
    (Space.L1, Space.GM): (Pipe.MTE3, CoreType.AIC),
    (Space.L0C, Space.GM): (Pipe.FIX, CoreType.AIC),
    (Space.L0C, Space.L1): (Pipe.FIX, CoreType.AIC),
    (Space.GM, Space.UB): (Pipe.MTE2, CoreType.AIV),
    (Space.UB, Space.GM): (Pipe.MTE3, CoreType.AIV),
    (Space.UB, Space.UB): (Pipe.V, CoreType.AIV),
}


def copy_route(src: Space, dst: Space, core: CoreType) -> Pipe:
    """The pipe that copies ``src → dst`` on ``core``; :class:`SpecError` listing the routes if none does."""
    route = COPY_ROUTES.get((src, dst))
    if route is None or route[1] is not core:
        routes = ", ".join(f"{s.name}→{d.name} ({p.name})" for (s, d), (p, c) in COPY_ROUTES.items() if c is core)
        raise SpecError(f"copy {src.name}→{dst.name} is invalid on the {core.name} core: allowed {routes}")
    return route[0]
