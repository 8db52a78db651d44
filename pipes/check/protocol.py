"""What the checker checks: a :class:`Protocol` of model pipelines, ordered barriers and agents.

The declarations here are plain, validated, immutable values. :func:`compile_layout` numbers their
barriers and flags once, for the model state to index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import invalid
from ..spec import MAX_ARRIVALS, ArrivalUnit, Completion, PipelineSpec, Role

if TYPE_CHECKING:
    from .context import Ctx

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
    """

    spec: PipelineSpec
    lag: int | None = None
    notify_on: str = "store_complete"
    fence_reads: bool = True

    def __post_init__(self) -> None:
        owner = f"ModelPipeline({getattr(self.spec, 'name', '?')!r})"
        if not isinstance(self.spec, PipelineSpec):
            raise invalid("ModelPipeline", "spec", self.spec, "a pipes.PipelineSpec")
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


@dataclass(frozen=True)
class ModelBarrier:
    """A raw mbarrier for agents that synchronise by hand (``ctx.arrive`` / ``ctx.wait``)."""

    name: str
    expected: int

    def __post_init__(self) -> None:
        if (
            isinstance(self.expected, bool)
            or not isinstance(self.expected, int)
            or not 1 <= self.expected <= MAX_ARRIVALS
        ):
            raise invalid(f"ModelBarrier({self.name!r})", "expected", self.expected, f"an int in [1, {MAX_ARRIVALS}]")


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
    """

    name: str
    initial: int = 0
    capacity: int | None = None
    drain: bool = False

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


@dataclass(frozen=True)
class Agent:
    """One unit of a role (a thread, elected warp, warp or warpgroup) running ``fn(ctx)``.

    ``fn`` must be deterministic given the results of its operations (tokens, values read): the
    checker re-runs it to explore what it does after each result.
    """

    name: str
    fn: Callable[[Ctx], Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("Agent", "name", self.name, "a non-empty identifier")
        if not callable(self.fn):
            raise invalid(f"Agent({self.name!r})", "fn", self.fn, "a function taking the agent's context")


def _tuple(value: Any) -> tuple:
    return tuple(value) if hasattr(value, "__iter__") else (value,)


@dataclass(frozen=True)
class Protocol:
    """Everything the checker explores: agents and the pipelines, orders, barriers and flags they share."""

    name: str
    agents: tuple[Agent, ...]
    pipelines: tuple[ModelPipeline, ...] = ()
    orders: tuple[ModelOrder, ...] = ()
    barriers: tuple[ModelBarrier, ...] = ()
    flags: tuple[ModelFlag, ...] = ()
    counters: tuple[ModelCounter, ...] = ()

    def __post_init__(self) -> None:
        for name in ("agents", "pipelines", "orders", "barriers", "flags", "counters"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))
        owner = f"Protocol({self.name!r})"
        if not self.agents:
            raise invalid(owner, "agents", self.agents, "at least one Agent")
        kinds = (
            ("agents", Agent),
            ("pipelines", ModelPipeline),
            ("orders", ModelOrder),
            ("barriers", ModelBarrier),
            ("flags", ModelFlag),
            ("counters", ModelCounter),
        )
        for name, kind in kinds:
            for item in getattr(self, name):
                if not isinstance(item, kind):
                    raise invalid(owner, name, item, f"{kind.__name__} values")
        agent_names = [a.name for a in self.agents]
        if len(set(agent_names)) != len(agent_names):
            raise invalid(owner, "agents", agent_names, "distinct agent names")
        objects = [p.name for p in self.pipelines] + [o.name for o in self.orders]
        objects += [b.name for b in self.barriers] + [f.name for f in self.flags] + [c.name for c in self.counters]
        if len(set(objects)) != len(objects):
            raise invalid(owner, "names", objects, "distinct names for pipelines, orders, barriers and flags")


@dataclass
class Layout:
    """The numbering of every barrier and flag of a protocol, and how pipelines map onto them."""

    barrier_names: list[str] = field(default_factory=list)
    barrier_expected: list[int] = field(default_factory=list)
    flag_names: list[str] = field(default_factory=list)
    flag_initially_set: list[bool] = field(default_factory=list)
    pipelines: dict[str, ModelPipeline] = field(default_factory=dict)
    full: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Per pipeline, per slot: the full barrier id (the flag id for FLAG pipelines)."""
    empty: dict[str, tuple[int, ...]] = field(default_factory=dict)
    orders: dict[str, tuple[ModelOrder, tuple[int, ...]]] = field(default_factory=dict)
    barrier_ids: dict[str, int] = field(default_factory=dict)
    flag_ids: dict[str, int] = field(default_factory=dict)
    counters: list[ModelCounter] = field(default_factory=list)
    counter_ids: dict[str, int] = field(default_factory=dict)

    def add_barrier(self, name: str, expected: int) -> int:
        self.barrier_ids[name] = len(self.barrier_names)
        self.barrier_names.append(name)
        self.barrier_expected.append(expected)
        return self.barrier_ids[name]

    def add_flag(self, name: str, initially_set: bool) -> int:
        self.flag_ids[name] = len(self.flag_names)
        self.flag_names.append(name)
        self.flag_initially_set.append(initially_set)
        return self.flag_ids[name]

    def is_flag_pipeline(self, pipe: str) -> bool:
        return self.pipelines[pipe].spec.completion is Completion.FLAG


def compile_layout(protocol: Protocol) -> Layout:
    """Number the barriers and flags: per pipeline ``full[s]`` then ``empty[s]``; then orders; then raw ones."""
    layout = Layout()
    for model in protocol.pipelines:
        spec = model.spec
        layout.pipelines[spec.name] = model
        slots = range(spec.stages)
        if spec.completion is Completion.FLAG:
            # Priming: "pretend the consumer already released" every slot before the loop.
            layout.full[spec.name] = tuple(layout.add_flag(f"{spec.name}.full[{s}]", False) for s in slots)
            layout.empty[spec.name] = tuple(layout.add_flag(f"{spec.name}.empty[{s}]", True) for s in slots)
        else:
            layout.full[spec.name] = tuple(
                layout.add_barrier(f"{spec.name}.full[{s}]", spec.full_arrivals) for s in slots
            )
            layout.empty[spec.name] = tuple(
                layout.add_barrier(f"{spec.name}.empty[{s}]", spec.empty_arrivals) for s in slots
            )
    for order in protocol.orders:
        ids = tuple(
            layout.add_barrier(f"{order.name}[{s * order.groups + g}]", order.role.arrivals)
            for s in range(order.depth)
            for g in range(order.groups)
        )
        layout.orders[order.name] = (order, ids)
    for barrier in protocol.barriers:
        layout.add_barrier(barrier.name, barrier.expected)
    for flag in protocol.flags:
        layout.add_flag(flag.name, flag.initially_set)
    for counter in protocol.counters:
        layout.counter_ids[counter.name] = len(layout.counters)
        layout.counters.append(counter)
    return layout
