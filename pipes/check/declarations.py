"""The objects a protocol declares besides its agents: pipelines, ordered barriers, raw mbarriers, flags and
counters. Plain, validated, immutable values; :mod:`pipes.check.protocol` numbers them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import invalid
from ..spec import MAX_ARRIVALS, ArrivalUnit, Completion, PipelineSpec, Role
from .scope import Place

NOTIFY_ON = ("store_complete", "smem_read")
ASYNC_WRITTEN = (Completion.TRANSACTION_BYTES, Completion.STORE_COMPLETE)
"""The kinds whose slots (TMA loads) or global tiles (bulk stores) are rewritten through the async proxy."""


class _EndOfStream:
    """The metadata a store→notify producer's tail commits after its last tile; consumers stop on it."""

    _instance: _EndOfStream | None = None

    def __new__(cls) -> _EndOfStream:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "END_OF_STREAM"


END_OF_STREAM = _EndOfStream()


@dataclass(frozen=True)
class ModelPipeline:
    """A pipeline as the checker runs it: the spec plus the options of its kind.

    ``lag`` (STORE_COMPLETE only): how many later commits a slot's notification trails its commit by —
    commit ``k`` waits (``wait_group lag``) until all but the newest ``lag`` store groups are complete,
    then notifies slot ``k - lag``. Allowed ``[0, stages - 1]``; default ``stages - 1``.
    ``notify_on`` (STORE_COMPLETE only): ``"store_complete"`` (``wait_group`` without ``.read``: the
    global writes are done) or ``"smem_read"`` (``.read``: only the shared-memory source was read — the
    defect the checker must catch).
    ``fence_reads`` (TRANSACTION_BYTES and STORE_COMPLETE): each ``consumer_release`` first issues
    ``fence.proxy.async``, as ``pipes.cute`` does for ``SlotReaders.GENERIC`` (the default), so the
    consumer's ordinary reads are ordered before the async-proxy write that reuses the data. False
    mirrors ``SlotReaders.ASYNC``: the consumers must then read through the async proxy
    (``ctx.read(..., proxy="async")``) or fence themselves.
    ``ctas``: the CTAs of one cluster that each hold a copy of the pipeline (its buffers and barriers); an
    agent uses its own CTA's copy. ``multicast`` (TRANSACTION_BYTES, several CTAs): each producer's TMA
    loads may land in every CTA of ``ctas`` (``ctx.load(..., multicast=True)``), so each consumer releases
    the slot on every CTA's empty barrier (remote arrives at cluster scope) — the consumer roles then
    declare ``peers=len(ctas)``, as ``cutlass`` counts them.
    ``silent``: consumer roles that are declared but never arrive on ``empty[s]`` (the predicate real
    kernels use to let one of several reading roles release): their units wait and read, their releases
    arrive nowhere, and ``empty[s]`` does not count them.
    """

    spec: PipelineSpec
    lag: int | None = None
    notify_on: str = "store_complete"
    fence_reads: bool = True
    ctas: tuple[int, ...] = (0,)
    multicast: bool = False
    silent: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        owner = f"ModelPipeline({getattr(self.spec, 'name', '?')!r})"
        if not isinstance(self.spec, PipelineSpec):
            raise invalid("ModelPipeline", "spec", self.spec, "a pipes.PipelineSpec")
        object.__setattr__(self, "ctas", tuple(self.ctas) if hasattr(self.ctas, "__iter__") else (self.ctas,))
        object.__setattr__(self, "silent", (self.silent,) if isinstance(self.silent, str) else tuple(self.silent))
        ctas = self.ctas
        if (
            not ctas
            or len(set(ctas)) != len(ctas)
            or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in ctas)
        ):
            raise invalid(owner, "ctas", ctas, "distinct CTA indices >= 0 (the CTAs of one cluster)")
        if self.multicast and (len(ctas) < 2 or self.spec.completion is not Completion.TRANSACTION_BYTES):
            raise invalid(owner, "multicast", self.multicast, "False unless a TRANSACTION_BYTES pipeline spans 2+ CTAs")
        roles = [r.name for r in self.spec.consumers]
        for role in self.silent:
            if role not in roles:
                raise invalid(owner, "silent", self.silent, f"names of consumer roles {roles}")
        if len(self.silent) == len(roles):
            raise invalid(owner, "silent", self.silent, "at most all consumer roles but one (someone must release)")
        store = self.spec.completion is Completion.STORE_COMPLETE
        if self.lag is not None:
            if not store:
                raise invalid(
                    owner,
                    "lag",
                    self.lag,
                    f"None unless completion is STORE_COMPLETE (it is {self.spec.completion.name})",
                )
            if isinstance(self.lag, bool) or not isinstance(self.lag, int) or not 0 <= self.lag <= self.spec.stages - 1:
                raise invalid(
                    owner,
                    "lag",
                    self.lag,
                    f"an int in [0, stages - 1] = [0, {self.spec.stages - 1}] (a lag of stages would wait for a "
                    "notification that needs the very slot it waits for)",
                )
        if self.notify_on not in NOTIFY_ON:
            raise invalid(owner, "notify_on", self.notify_on, f"one of {NOTIFY_ON}")
        if self.notify_on != "store_complete" and not store:
            raise invalid(owner, "notify_on", self.notify_on, "'store_complete' unless completion is STORE_COMPLETE")
        if not isinstance(self.fence_reads, bool):
            raise invalid(owner, "fence_reads", self.fence_reads, "True or False")
        if not self.fence_reads and self.spec.completion not in ASYNC_WRITTEN:
            raise invalid(
                owner,
                "fence_reads",
                self.fence_reads,
                f"True unless completion is TRANSACTION_BYTES or STORE_COMPLETE (it is {self.spec.completion.name}: "
                "nothing rewrites its slots through the async proxy)",
            )

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def fences_releases(self) -> bool:
        """Whether ``consumer_release`` issues ``fence.proxy.async`` before its arrival."""
        return self.fence_reads and self.spec.completion in ASYNC_WRITTEN

    @property
    def store_lag(self) -> int:
        return self.spec.stages - 1 if self.lag is None else self.lag

    @property
    def empty_arrivals(self) -> int:
        """Arrivals ``empty[s]`` expects per phase: every consumer role that releases (not the silent ones)."""
        return sum(r.arrivals for r in self.spec.consumers if r.name not in self.silent)

    def cta_suffix(self, cta: int) -> str:
        """How the barriers and buffers of ``cta``'s copy are named (nothing for a one-CTA pipeline)."""
        return "" if self.ctas == (0,) else f"@cta{cta}"


@dataclass(frozen=True)
class ModelOrder:
    """An ordered barrier: ``groups`` groups (each one unit of ``role``) take turns, ``depth`` sections a round.

    Barrier ``s * groups + g`` means "group g may enter section s". Group 0 starts at phase 1 (its first
    turn is free), the others at phase 0; the phase flips once per round. ``phase_flips=False`` models
    the defect of an implementation whose phase is a loop-invariant constant.
    """

    name: str
    groups: int
    role: Role = field(default_factory=lambda: Role("math", ArrivalUnit.WARPGROUP))
    depth: int = 1
    phase_flips: bool = True

    def __post_init__(self) -> None:
        owner = f"ModelOrder({self.name!r})"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("ModelOrder", "name", self.name, "a non-empty identifier")
        for name, value, low, high in (("groups", self.groups, 2, 16), ("depth", self.depth, 1, 16)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise invalid(owner, name, value, f"an int in [{low}, {high}]")
        if not isinstance(self.role, Role):
            raise invalid(owner, "role", self.role, "a pipes.Role describing one group")


def _arrivers(owner: str, value: Any) -> tuple[tuple[str, int], ...] | None:
    """``None``, agent names (one arrival each per phase), or a mapping name → arrivals per phase."""
    if value is None:
        return None
    pairs = list(value.items()) if isinstance(value, Mapping) else [(name, 1) for name in value]
    for name, count in pairs:
        if not isinstance(name, str) or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise invalid(owner, "arrivers", value, "agent names, or a mapping agent name → arrivals per phase (>= 1)")
    return tuple(pairs)


@dataclass(frozen=True)
class ModelBarrier:
    """A raw mbarrier for agents that synchronise by hand (``ctx.arrive`` / ``ctx.wait``).

    It lives in the shared memory of CTA ``cta`` of ``cluster`` on ``device``: only that CTA's agents may
    wait on it; others arrive remotely (``scope=Scope.CLUSTER``). ``arrivers`` (optional) declares which
    agents arrive on it and how often per phase, so a count that does not add up to ``expected`` is
    reported before exploring. :meth:`array` declares ``full[0]``, ``full[1]``, … at once.
    """

    name: str
    expected: int
    cta: int = 0
    cluster: int = 0
    device: int = 0
    arrivers: Any = None

    def __post_init__(self) -> None:
        owner = f"ModelBarrier({self.name!r})"
        if (
            isinstance(self.expected, bool)
            or not isinstance(self.expected, int)
            or not 1 <= self.expected <= MAX_ARRIVALS
        ):
            raise invalid(owner, "expected", self.expected, f"an int in [1, {MAX_ARRIVALS}]")
        Place(self.device, self.cluster, self.cta)  # validates
        object.__setattr__(self, "arrivers", _arrivers(owner, self.arrivers))

    @property
    def place(self) -> Place:
        return Place(self.device, self.cluster, self.cta)

    @classmethod
    def array(cls, name: str, count: int, expected: int, **options: Any) -> tuple[ModelBarrier, ...]:
        """``count`` barriers named ``name[0]`` … ``name[count - 1]``, as a kernel declares an mbarrier array."""
        return tuple(cls(f"{name}[{i}]", expected, **options) for i in range(count))


@dataclass(frozen=True)
class ModelFlag:
    """A raw binary flag (Ascend ``set_flag``/``wait_flag``), optionally set before the agents start."""

    name: str
    initially_set: bool = False


@dataclass(frozen=True)
class ModelCounter:
    """A counter agents synchronise through: ``ctx.signal``, ``ctx.take``, ``ctx.wait_counter``, ``ctx.store_counter``.

    * An Ascend cross-core flag: ``ModelCounter("scores_full", capacity=15, drain=True)`` — each set counts,
      at most ``capacity`` (15 on CANN's parts; 1 is the conservative binary reading) may be outstanding, and
      signals never taken by exit are a warning (``CREDITS_LEFT``), not an error.
    * A GPU semaphore or ready flag in memory: ``ModelCounter("ready", initial=0)`` (no capacity), read with
      ``ctx.wait_counter(name, at_least=n)`` — also a threshold quorum ("at least n producers are done").

    ``initial``: the value at kernel start (what a previous kernel left, e.g. the last launch's epoch).
    ``quorum`` and ``signallers`` (optional): readers wait for ``quorum`` (the default ``at_least`` of
    ``ctx.wait_counter``), and these agents signal it (a mapping name → signals, or names: one each); a
    quorum they cannot reach is reported before exploring.
    """

    name: str
    initial: int = 0
    capacity: int | None = None
    drain: bool = False
    quorum: int | None = None
    signallers: Any = None

    def __post_init__(self) -> None:
        owner = f"ModelCounter({self.name!r})"
        if not isinstance(self.name, str) or not self.name:
            raise invalid("ModelCounter", "name", self.name, "a non-empty string")
        if isinstance(self.initial, bool) or not isinstance(self.initial, int) or self.initial < 0:
            raise invalid(owner, "initial", self.initial, "an int >= 0")
        if self.capacity is not None and (
            isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1
        ):
            raise invalid(owner, "capacity", self.capacity, "None (unbounded) or an int >= 1")
        if self.capacity is not None and self.initial > self.capacity:
            raise invalid(owner, "initial", self.initial, f"at most capacity = {self.capacity}")
        if not isinstance(self.drain, bool):
            raise invalid(owner, "drain", self.drain, "True or False")
        if self.quorum is not None and (
            isinstance(self.quorum, bool) or not isinstance(self.quorum, int) or self.quorum < 1
        ):
            raise invalid(owner, "quorum", self.quorum, "None or an int >= 1")
        object.__setattr__(self, "signallers", _arrivers(owner, self.signallers))
