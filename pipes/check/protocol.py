"""What the checker checks: a :class:`Protocol` of agents and what they share (declared in
:mod:`pipes.check.declarations`). :func:`compile_layout` numbers barriers, flags and counters once, for
the model state to index (a :class:`~pipes.check.layout.Layout`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import invalid
from ..spec import Completion
from .declarations import (
    ASYNC_WRITTEN,
    END_OF_STREAM,
    NOTIFY_ON,
    ModelBarrier,
    ModelCounter,
    ModelFlag,
    ModelOrder,
    ModelPipeline,
)
from .layout import Layout
from .scope import Place

if TYPE_CHECKING:
    from .context import Ctx

__all__ = [
    "ASYNC_WRITTEN",
    "END_OF_STREAM",
    "NOTIFY_ON",
    "Agent",
    "Layout",
    "ModelBarrier",
    "ModelCounter",
    "ModelFlag",
    "ModelOrder",
    "ModelPipeline",
    "Protocol",
    "compile_layout",
]


@dataclass(frozen=True)
class Agent:
    """One unit of a role (a thread, elected warp, warp or warpgroup) running ``fn(ctx)``.

    ``fn`` must be deterministic given the results of its operations (tokens, values read): the
    checker re-runs it to explore what it does after each result.

    Where it runs: CTA ``cta`` of ``cluster`` on ``device`` (``device="host"`` for a host thread), in
    launch ``grid`` (0, 1, …: a later grid is a dependent kernel launched with programmatic dependent
    launch, which may start once every agent of the earlier grids triggered or finished, and sees their
    writes only after ``ctx.grid_dependency_wait()``).
    """

    name: str
    fn: Callable[[Ctx], Any]
    cta: int = 0
    cluster: int = 0
    device: int | str = 0
    grid: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("Agent", "name", self.name, "a non-empty identifier")
        if not callable(self.fn):
            raise invalid(f"Agent({self.name!r})", "fn", self.fn, "a function taking the agent's context")
        Place(self.device, self.cluster, self.cta)  # validates
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or self.grid < 0:
            raise invalid(f"Agent({self.name!r})", "grid", self.grid, "an int >= 0 (the launch order)")

    @property
    def place(self) -> Place:
        return Place(self.device, self.cluster, self.cta)


def _tuple(value: Any) -> tuple:
    return tuple(value) if hasattr(value, "__iter__") else (value,)


@dataclass(frozen=True)
class Protocol:
    """Everything the checker explores: agents and the pipelines, orders, barriers, flags and counters they
    share. ``initial``: global memory a previous kernel left (``{key: value}``, the keys of
    ``ctx.read_global``): reading it is no hazard by itself; writes are judged against it as usual."""

    name: str
    agents: tuple[Agent, ...]
    pipelines: tuple[ModelPipeline, ...] = ()
    orders: tuple[ModelOrder, ...] = ()
    barriers: tuple[ModelBarrier, ...] = ()
    flags: tuple[ModelFlag, ...] = ()
    counters: tuple[ModelCounter, ...] = ()
    initial: Any = None

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
            raise invalid(owner, "names", objects, "distinct names for pipelines, orders, barriers, flags and counters")
        for declared, field_name in [(b, "arrivers") for b in self.barriers] + [
            (c, "signallers") for c in self.counters
        ]:
            unknown = [n for n, _ in getattr(declared, field_name) or () if n not in agent_names]
            if unknown:
                raise invalid(
                    f"{type(declared).__name__}({declared.name!r})", field_name, unknown, f"agent names {agent_names}"
                )
        initial = dict(self.initial or {})
        for key, value in initial.items():
            try:
                hash((key, value))
            except TypeError:
                raise invalid(owner, "initial", {key: value}, "hashable keys and values") from None
        object.__setattr__(self, "initial", tuple(initial.items()))


def compile_layout(protocol: Protocol) -> Layout:
    """Number the barriers and flags: per pipeline and CTA ``full[s]`` then ``empty[s]``; then orders; then raw ones."""
    layout = Layout()
    layout.places = [agent.place for agent in protocol.agents]
    layout.grids = [agent.grid for agent in protocol.agents]
    for model in protocol.pipelines:
        spec = model.spec
        layout.pipelines[spec.name] = model
        slots = range(spec.stages)
        for cta in model.ctas:
            at = model.cta_suffix(cta)
            place = Place(0, 0, cta)
            if spec.completion is Completion.FLAG:
                # Priming: "pretend the consumer already released" every slot before the loop.
                layout.full[spec.name, cta] = tuple(layout.add_flag(f"{spec.name}.full[{s}]{at}", False) for s in slots)
                layout.empty[spec.name, cta] = tuple(
                    layout.add_flag(f"{spec.name}.empty[{s}]{at}", True) for s in slots
                )
                continue
            full_arrivals = spec.producer.unit.arrivals * spec.producer.count
            if len(model.ctas) == 1:
                full_arrivals = spec.full_arrivals
            layout.full[spec.name, cta] = tuple(
                layout.add_barrier(f"{spec.name}.full[{s}]{at}", full_arrivals, place) for s in slots
            )
            layout.empty[spec.name, cta] = tuple(
                layout.add_barrier(f"{spec.name}.empty[{s}]{at}", model.empty_arrivals, place) for s in slots
            )
    for order in protocol.orders:
        ids = tuple(
            layout.add_barrier(f"{order.name}[{s * order.groups + g}]", order.role.arrivals)
            for s in range(order.depth)
            for g in range(order.groups)
        )
        layout.orders[order.name] = (order, ids)
    for barrier in protocol.barriers:
        layout.add_barrier(barrier.name, barrier.expected, barrier.place)
    for flag in protocol.flags:
        layout.add_flag(flag.name, flag.initially_set)
    for counter in protocol.counters:
        layout.counter_ids[counter.name] = len(layout.counters)
        layout.counters.append(counter)
    return layout
