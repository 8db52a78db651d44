"""A catalogue of small Ascend kernels for the simulator: correct ones, and broken twins with the diagnosis
each must produce — the hardware facts the simulator models, each shown once right and once wrong.

Every entry records a kernel into a fresh :class:`~pipes.ascend.sim.Simulator`. A correct entry must
explore with no diagnosis at all; a bad one must give ``expect`` (an error, or a warning where the
kernel is harmless) with the words in ``mentions``, and names its corrected twin. The tests run them
all, through the simulator's schedules and through the exhaustive explorer (``Simulator.prove``,
:mod:`pipes.ascend.sim.exhaustive`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..check.report import FindingKind
from .events import EventIdRules, Generation, Keying
from .pairs import Space
from .sim import Kind, Simulator


@dataclass(frozen=True)
class AscendEntry:
    name: str
    summary: str
    build: Callable[[], Simulator]
    expect: Kind | None = None
    mentions: tuple[str, ...] = ()
    twin: str | None = None
    proven: FindingKind | None = None
    """What the exhaustive explorer (``Simulator.prove``) reports for a bad entry, in its own kinds."""


def _rules(**options: object) -> EventIdRules:
    return EventIdRules(framework_preset=False, **options)  # type: ignore[arg-type]


def cube_runs_ahead(sets: int = 3, capacity: int = 15) -> Simulator:
    """The cube signals a cross-core flag ``sets`` times before the vector cores take the first: counting
    hardware holds them; ``capacity=1`` (the binary reading) loses the second."""
    sim = Simulator(_rules(cross_core_capacity=capacity))
    for _ in range(sets):
        sim.cube().set_cross_flag("FIX", 0)
    for vec in sim.vector_programs:
        for _ in range(sets):
            vec.wait_cross_flag("MTE2", 0)
    return sim


def primed_credits(drain: bool = True, slots: int = 2, tiles: int = 3) -> Simulator:
    """A vector core primes ``slots`` free-slot credits for the cube on a cross-core flag; the cube takes
    one per tile and, with ``drain``, takes the last ones back at the end."""
    sim = Simulator(_rules(), vector_cores=1)
    cube, vec = sim.cube(), sim.vector(0)
    for _ in range(slots):
        vec.set_cross_flag("MTE3", 4)
    for _ in range(tiles):
        cube.wait_cross_flag("FIX", 4)
        cube.set_cross_flag("FIX", 5)
        vec.wait_cross_flag("MTE2", 5)
        vec.set_cross_flag("MTE3", 4)
    if drain:
        for _ in range(slots):
            cube.wait_cross_flag("FIX", 4)
    return sim


def explicit_id(event_id: int = 6) -> Simulator:
    """A hand-written MTE2 → V hand-off on an explicit event id (shipped kernels use 6)."""
    sim = Simulator(_rules(), vector_cores=1)
    vec = sim.vector(0)
    vec.set_flag("MTE2", "V", event_id)
    vec.wait_flag("MTE2", "V", event_id)
    return sim


def shared_source_ids(distinct: bool = False, keying: Keying | None = None) -> Simulator:
    """MTE1 signals M and MTE2 with one id (as kernels that number ids per pipe pair do). Under the default
    reading (flags keyed by source pipe and id) they are one flag: the second set merges into the first
    and a wait never returns. ``distinct``: separate ids, as the allocator hands them out."""
    sim = Simulator(_rules() if keying is None else _rules(keying=keying))
    aic = sim.cube()
    aic.set_flag("MTE1", "MTE2", 0)
    aic.set_flag("MTE1", "M", 1 if distinct else 0)
    aic.wait_flag("MTE1", "M", 1 if distinct else 0)
    aic.wait_flag("MTE1", "MTE2", 0)
    return sim


def copy_through_ub(barrier: str | None = "ALL", n: int = 16) -> Simulator:
    """GM → UB (MTE2), ×2 on V, UB → GM (MTE3) on one vector core, ordered only by pipe barriers:
    ``pipe_barrier(PIPE_ALL)`` between the steps, or none (``barrier=None``)."""
    sim = Simulator(_rules(), vector_cores=1)
    x = np.arange(n, dtype=np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", (n,), np.float32)
    sim.expect(gy, 2 * x)
    vec = sim.vector(0)
    a, b = vec.buffer("a", Space.UB, (n,), np.float32), vec.buffer("b", Space.UB, (n,), np.float32)
    vec.copy(gx, a)
    if barrier:
        vec.pipe_barrier(barrier)
    vec.vector("muls", b, a, 2.0)
    if barrier:
        vec.pipe_barrier(barrier)
    vec.copy(b, gy)
    return sim


def fix_to_mte2(generation: Generation = Generation.ASCEND_950) -> Simulator:
    """The cube's fixpipe hands L0C → L1 to an MTE2 copy out of L1 with a FIX → MTE2 flag: a pair Ascend 950
    has and Atlas A2/A3 do not."""
    sim = Simulator(_rules(generation=generation))
    aic = sim.cube()
    aic.set_flag("FIX", "MTE2", 0)
    aic.wait_flag("FIX", "MTE2", 0)
    return sim


GOOD = [
    AscendEntry("cube_runs_ahead", "the cube signals a cross-core flag 3 times ahead: counted", cube_runs_ahead),
    AscendEntry("primed_credits", "primed free-slot credits, drained at the end", primed_credits),
    AscendEntry("allocator_id", "an id the allocator would hand out (not reserved)", lambda: explicit_id(3)),
    AscendEntry(
        "distinct_source_ids", "each pair from one source pipe has its own id", lambda: shared_source_ids(True)
    ),
    AscendEntry("pipe_all", "MTE2 → V → MTE3 on one core ordered by pipe_barrier(PIPE_ALL)", copy_through_ub),
    AscendEntry("fix_to_mte2_on_950", "a FIX → MTE2 flag on Ascend 950", fix_to_mte2),
]

BAD = [
    AscendEntry(
        "cube_runs_ahead_binary",
        "read as a binary flag (capacity 1), the cube's second signal is lost and a wait never returns",
        lambda: cube_runs_ahead(capacity=1),
        Kind.LOST_SIGNAL,
        ("under the binary reading (cross_core_capacity=1)",),
        twin="cube_runs_ahead",
        proven=FindingKind.COUNTER_OVERFLOW,
    ),
    AscendEntry(
        "credits_left",
        "free-slot credits primed and never taken back (harmless at exit: a warning)",
        lambda: primed_credits(drain=False),
        Kind.CREDITS_LEFT,
        ("cross-core flag id 4 of aic holds 2 untaken signal(s) at exit",),
        twin="primed_credits",
        proven=FindingKind.CREDITS_LEFT,
    ),
    AscendEntry(
        "reserved_id",
        "an explicit use of reserved event id 6 (legal, a warning)",
        explicit_id,
        Kind.ID_RESERVED,
        ("event id 6 is reserved (reserved by convention)",),
        twin="allocator_id",
        proven=FindingKind.FLAG_CAUTION,
    ),
    AscendEntry(
        "shared_source_id",
        "two pairs from one source pipe with one id collide under the default keying",
        shared_source_ids,
        Kind.UNMATCHED_WAIT,
        ("1 set(s) merged into one still pending", "so 1 signal(s) fewer arrived than were set"),
        twin="distinct_source_ids",
        proven=FindingKind.DOUBLE_SET,
    ),
    AscendEntry(
        "no_pipe_barrier",
        "MTE2 → V → MTE3 on one core with nothing ordering them",
        lambda: copy_through_ub(None),
        Kind.DATA_HAZARD,
        ("RAW on a", "aiv0/V reads a before aiv0/MTE2 finished writing it"),
        twin="pipe_all",
        proven=FindingKind.READ_UNCOMMITTED,
    ),
    AscendEntry(
        "fix_to_mte2_on_a2",
        "a FIX → MTE2 flag on Atlas A2, which has no such pair",
        lambda: fix_to_mte2(Generation.ATLAS_A2),
        Kind.ILLEGAL_PAIR,
        ("FIX→MTE2 is not a flag pair on the AIC core of Atlas A2",),
        twin="fix_to_mte2_on_950",
        proven=FindingKind.ILLEGAL_FLAG,
    ),
]

ENTRIES = {entry.name: entry for entry in (*GOOD, *BAD)}
