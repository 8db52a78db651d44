"""Event-ID allocation: collision-free ids for the flags of pipelines alive at the same time.

Each intra-core pipeline from pipe P to pipe C uses one id per stage, in both directions: the forward
flag ``P→C`` (full) and the backward flag ``C→P`` (empty) carry the same id, as hand-written kernels do.
Whether the hardware keys a flag by ``(src, dst, id)`` or by ``(src, id)`` is disputed, so by default
(:attr:`Keying.SOURCE_PIPE`) an id is taken from the *source pipe's* pool of its core: a pipeline needs
its ids free in the pool of P (for ``P→C``) and in the pool of C (for ``C→P``). Ids are freed when the
pipeline is drained.

Reserved ids never handed out: 6 (reserved by convention), 7 (the framework's automatic sync) and, on the
cube core, M→MTE1 ids 0–2 which the framework's pipe object pre-sets unless it is destroyed first
(``framework_preset=False`` says it is). First-generation parts have 4 ids per pair, A2/A3 parts 8.
Cross-core flags have their own pool of 16 ids per core group, of which 11–14 belong to the all-core sync.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..errors import PipesError
from . import targets as _targets
from .pairs import CoreType, Pipe
from .targets import CROSS_CORE_CAPACITY as CROSS_CORE_CAPACITY  # re-exported: the A2/A3 counter's capacity
from .targets import AscendTarget


class Generation(enum.Enum):
    """A device generation — the one target setting (``EventIdRules.generation``) that the allocator, the
    pipelines, the emitters and the simulator all read. Its facts (event ids per flag pair, flag pairs,
    in-order pipes, cross-core capacity) are its :attr:`target`, a :class:`~pipes.ascend.targets.AscendTarget`."""

    ATLAS_A2 = ("Atlas A2", 8)
    ATLAS_A3 = ("Atlas A3", 8)
    FIRST_GEN = ("first-generation training part", 4)
    ASCEND_950 = ("Ascend 950 (A5)", 8)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def target(self) -> AscendTarget:
        """This generation's hardware facts (:mod:`pipes.ascend.targets`)."""
        return _GENERATION_TARGETS[self]

    @property
    def event_ids(self) -> int:
        return self.target.event_ids

    @property
    def legal_pairs(self) -> dict[tuple[CoreType, Pipe], frozenset[Pipe]]:
        """Which intra-core flag pairs exist (the target's table: A2/A3's, or the 950's)."""
        return self.target.legal_pairs

    def removed_note(self, core: CoreType, src: Pipe, dst: Pipe) -> str | None:
        return self.target.removed_note(core, src, dst)


_GENERATION_TARGETS: dict[Generation, AscendTarget] = {
    Generation.ATLAS_A2: _targets.ATLAS_A2_A3,
    Generation.ATLAS_A3: _targets.ATLAS_A3,
    Generation.FIRST_GEN: _targets.FIRST_GEN,
    Generation.ASCEND_950: _targets.ASCEND_950,
}


class Keying(enum.Enum):
    """What the hardware is assumed to key a flag by; SOURCE_PIPE is safe whichever way it really does."""

    SOURCE_PIPE = "source pipe"
    """``(core, src, id)``: pipelines alive together never share an id from the same source pipe."""
    PIPE_PAIR = "pipe pair"
    """``(core, src, dst, id)``: ids only need to differ per ordered pipe pair."""


#: The one default for how flags are keyed, used by the allocator and the simulator alike (both read it from
#: :attr:`EventIdRules.keying`). SOURCE_PIPE is the reading under which a program is safe whichever way the
#: hardware really keys flags: the allocator never shares an id from one source pipe between live pipelines,
#: and the simulator executes two flags that share a source pipe and an id as one flag.
DEFAULT_KEYING = Keying.SOURCE_PIPE


class EventIdError(PipesError):
    """No event id can be handed out (exhausted, or a request that cannot be met)."""


DEFAULT_RESERVED: tuple[tuple[int, str], ...] = ((6, "reserved by convention"), (7, "framework automatic sync"))
DEFAULT_CROSS_RESERVED: tuple[tuple[int, str], ...] = tuple((i, "all-core sync") for i in (11, 12, 13, 14))
#: The framework's pipe object pre-sets these flags on the cube core when it is created.
FRAMEWORK_PRESET = (CoreType.AIC, Pipe.M, Pipe.MTE1, (0, 1, 2))
CROSS_CORE_IDS = 16
"""A2/A3's cross-core ids per core; the rules read ``target.cross_core_ids``."""


@dataclass(frozen=True)
class EventIdRules:
    """The id space of one kernel: device generation, reservations and the keying assumption.

    The hardware facts are :attr:`target`: ``hardware`` when given (a target of your own, e.g. from
    :func:`pipes.ascend.targets.derive_target`), else the generation's.
    """

    generation: Generation = Generation.ATLAS_A2
    reserved: tuple[tuple[int, str], ...] = DEFAULT_RESERVED
    framework_preset: bool = True
    """Whether the framework's pipe object is alive and has pre-set M→MTE1 ids 0–2 on the cube core."""
    keying: Keying = DEFAULT_KEYING
    """What the hardware is assumed to key a flag by: the allocator allocates and the simulator executes by it."""
    cross_core_reserved: tuple[tuple[int, str], ...] = DEFAULT_CROSS_RESERVED
    cross_core_capacity: int | None = None
    """How many untaken sets one cross-core flag id counts; None (the default) takes the target's
    (``target.cross_core_capacity``, CANN: 15) and is replaced by it at construction. 1 is the conservative
    binary reading: a second set before the wait is lost. More than the target's is an error."""
    hardware: AscendTarget | None = None
    """A target of your own instead of ``generation.target`` (None: the generation's)."""

    def __post_init__(self) -> None:
        if not isinstance(self.generation, Generation):
            raise EventIdError(f"EventIdRules.generation = {self.generation!r} is invalid: allowed a Generation")
        if not isinstance(self.keying, Keying):
            raise EventIdError(f"EventIdRules.keying = {self.keying!r} is invalid: allowed a Keying")
        if self.hardware is not None and not isinstance(self.hardware, AscendTarget):
            raise EventIdError(f"EventIdRules.hardware = {self.hardware!r} is invalid: allowed an AscendTarget or None")
        most = self.target.cross_core_capacity
        capacity = self.cross_core_capacity
        if capacity is None:
            object.__setattr__(self, "cross_core_capacity", most)
        elif isinstance(capacity, bool) or not isinstance(capacity, int) or not 1 <= capacity <= most:
            raise EventIdError(
                f"EventIdRules.cross_core_capacity = {capacity!r} is invalid: allowed an int in "
                f"[1, {most}] (1: the binary reading, {most}: {self.target.label}'s counter)"
            )

    @property
    def target(self) -> AscendTarget:
        """The hardware facts every checker reads: ``hardware`` if given, else ``generation.target``."""
        return self.hardware if self.hardware is not None else self.generation.target

    @property
    def event_ids(self) -> int:
        return self.target.event_ids

    def reserved_reason(self, event_id: int) -> str | None:
        return dict(self.reserved).get(event_id)

    def cross_reserved_reason(self, flag_id: int) -> str | None:
        return dict(self.cross_core_reserved).get(flag_id)

    def preset_ids(self, core: CoreType, src: Pipe, dst: Pipe) -> tuple[int, ...]:
        """Ids of ``src→dst`` on ``core`` that the framework has already set at kernel start."""
        preset_core, preset_src, preset_dst, ids = FRAMEWORK_PRESET
        if self.framework_preset and (core, src, dst) == (preset_core, preset_src, preset_dst):
            return tuple(i for i in ids if i < self.event_ids)
        return ()

    def id_problem(self, event_id: object) -> str | None:
        """Why ``event_id`` may not be used for an intra-core flag at all (out of range, not an int), or None."""
        if isinstance(event_id, bool) or not isinstance(event_id, int):
            return f"event id {event_id!r} is not an int"
        if not 0 <= event_id < self.event_ids:
            return f"event id {event_id} is out of range: {self.target.label} has ids 0–{self.event_ids - 1}"
        return None

    def id_caution(self, event_id: object) -> str | None:
        """Why an explicit use of ``event_id`` deserves a warning (a reserved id), or None.

        The allocator never hands reserved ids out, but shipped hand-written kernels do use them (id 6
        above all), so an explicit use is a caution, not an error.
        """
        reason = self.reserved_reason(event_id) if isinstance(event_id, int) else None
        if reason is None:
            return None
        return (
            f"event id {event_id} is reserved ({reason}): the allocator never hands it out; an explicit use is "
            "fine as long as nothing else in the kernel (the framework's own synchronization) uses it"
        )

    def cross_id_problem(self, flag_id: object) -> str | None:
        """Why ``flag_id`` may not be used for a cross-core flag at all, or None."""
        if isinstance(flag_id, bool) or not isinstance(flag_id, int):
            return f"cross-core flag id {flag_id!r} is not an int"
        ids = self.target.cross_core_ids
        if not 0 <= flag_id < ids:
            return f"cross-core flag id {flag_id} is out of range: ids are 0–{ids - 1}"
        return None

    def cross_id_caution(self, flag_id: object) -> str | None:
        """Why an explicit use of cross-core ``flag_id`` deserves a warning (a reserved id), or None."""
        reason = self.cross_reserved_reason(flag_id) if isinstance(flag_id, int) else None
        if reason is None:
            return None
        return (
            f"cross-core flag id {flag_id} is reserved ({reason}): it collides with that synchronization if the "
            "kernel also uses it"
        )


@dataclass(frozen=True)
class EventIds:
    """The ids one pipeline holds: ``ids[s]`` serves stage ``s``; they are contiguous from ``base``."""

    owner: str
    pools: tuple[tuple, ...]
    ids: tuple[int, ...]
    description: str = ""

    @property
    def base(self) -> int:
        return self.ids[0]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class _Pool:
    size: int
    holders: dict[int, str] = field(default_factory=dict)

    def free_ids(self) -> list[int]:
        return [i for i in range(self.size) if i not in self.holders]


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0–2, 5"``."""
    if not ids:
        return "none"
    parts, start, prev = [], ids[0], ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(f"{start}" if start == prev else f"{start}–{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


class EventIdAllocator:
    """Hands out event ids to pipelines and takes them back; one per kernel (all cores of it).

    Every request is for a contiguous run, so a stage's id is ``base + stage`` — an expression that
    works on a traced loop variable as well as on a Python int.
    """

    def __init__(self, rules: EventIdRules | None = None) -> None:
        self.rules = rules if rules is not None else EventIdRules()
        self._pools: dict[tuple, _Pool] = {}
        self._live: dict[int, EventIds] = {}

    # -- pools -------------------------------------------------------------------------------------
    def _pool_key(self, core: CoreType, src: Pipe, dst: Pipe) -> tuple:
        if self.rules.keying is Keying.SOURCE_PIPE:
            return (core, src)
        return (core, src, dst)

    @staticmethod
    def _pool_name(key: tuple) -> str:
        if key[0] == "cross":
            return "cross-core flags"
        if len(key) == 2:
            return f"{key[0].name} source pipe {key[1].name}"
        return f"{key[0].name} {key[1].name}→{key[2].name}"

    def _pool(self, key: tuple) -> _Pool:
        pool = self._pools.get(key)
        if pool is not None:
            return pool
        if key[0] == "cross":
            pool = _Pool(self.rules.target.cross_core_ids)
            for flag_id, reason in self.rules.cross_core_reserved:
                pool.holders[flag_id] = reason
        else:
            pool = _Pool(self.rules.event_ids)
            for event_id, reason in self.rules.reserved:
                if event_id < pool.size:
                    pool.holders[event_id] = reason
            core, src = key[0], key[1]
            preset_core, preset_src, preset_dst, preset = FRAMEWORK_PRESET
            dst_matches = len(key) == 2 or key[2] is preset_dst
            if self.rules.framework_preset and (core, src) == (preset_core, preset_src) and dst_matches:
                for event_id in preset:
                    if event_id < pool.size:
                        pool.holders[event_id] = "framework pipe object pre-set M→MTE1"
        self._pools[key] = pool
        return pool

    # -- allocation --------------------------------------------------------------------------------
    def allocate(self, owner: str, core: CoreType, src: Pipe, dst: Pipe, count: int) -> EventIds:
        """``count`` contiguous ids for a pipeline ``src→dst`` on ``core`` (both flag directions)."""
        keys = (self._pool_key(core, src, dst), self._pool_key(core, dst, src))
        description = f"pipeline {owner!r} ({src.name}→{dst.name} on {core.name})"
        return self._take(owner, keys, count, description)

    def allocate_cross(self, owner: str, count: int, purpose: str) -> EventIds:
        """``count`` contiguous cross-core flag ids (one pool per core group)."""
        return self._take(owner, (("cross",),), count, f"cross-core pipeline {owner!r} ({purpose})")

    def _take(self, owner: str, keys: tuple[tuple, ...], count: int, description: str) -> EventIds:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise EventIdError(f"{description}: id count = {count!r} is invalid: allowed an int >= 1")
        pools = [self._pool(k) for k in dict.fromkeys(keys)]
        size = min(p.size for p in pools)
        for base in range(size - count + 1):
            run = range(base, base + count)
            if all(i not in p.holders for p in pools for i in run):
                for pool in pools:
                    for i in run:
                        pool.holders[i] = description
                ids = EventIds(owner, tuple(dict.fromkeys(keys)), tuple(run), description)
                self._live[id(ids)] = ids
                return ids
        raise EventIdError(self._exhausted_message(description, keys, count))

    def _exhausted_message(self, description: str, keys: tuple[tuple, ...], count: int) -> str:
        lines = [f"cannot allocate {count} contiguous event id(s) for {description}:"]
        if keys[0][0] != "cross":
            lines[0] += f" they must be free in every pool below (keying by {self.rules.keying.value})"
        for key in dict.fromkeys(keys):
            pool = self._pool(key)
            lines.append(f"  pool {self._pool_name(key)} (ids 0–{pool.size - 1}):")
            by_holder: dict[str, list[int]] = {}
            for i in sorted(pool.holders):
                by_holder.setdefault(pool.holders[i], []).append(i)
            for holder, ids in by_holder.items():
                lines.append(f"    {_ranges(ids)}: {holder}")
            lines.append(f"    free: {_ranges(pool.free_ids())}")
        hints = ["drain a pipeline that is no longer needed (its ids are freed)", "use fewer stages"]
        if self.rules.framework_preset and keys[0][0] != "cross":
            hints.append("pass EventIdRules(framework_preset=False) if the framework pipe object is destroyed")
        if self.rules.keying is Keying.SOURCE_PIPE and keys[0][0] != "cross":
            hints.append("Keying.PIPE_PAIR if your hardware keys flags by (src, dst, id)")
        lines.append("  options: " + "; ".join(hints))
        return "\n".join(lines)

    def free(self, ids: EventIds) -> None:
        """Return a pipeline's ids (at drain); freeing twice is an error."""
        if self._live.pop(id(ids), None) is None:
            raise EventIdError(f"ids {list(ids.ids)} of {ids.description} are not held (freed twice?)")
        for key in ids.pools:
            pool = self._pool(key)
            for i in ids.ids:
                if pool.holders.get(i) == ids.description:
                    del pool.holders[i]

    def holders(self) -> dict[str, dict[int, str]]:
        """Pool name → {id: holder} for every pool touched so far (reservations included)."""
        return {self._pool_name(k): dict(sorted(p.holders.items())) for k, p in self._pools.items()}

    def table(self) -> str:
        """A readable listing of who holds which id."""
        lines = []
        for name, holders in self.holders().items():
            lines.append(f"{name}:")
            for i, holder in holders.items():
                lines.append(f"  {i}: {holder}")
        return "\n".join(lines)
