"""Check a backend's pipeline declaration from its own spec: no second description to drift apart.

:func:`model_of` turns a declaration — anything with a ``spec`` (``pipes.cute.AsyncPipeline``,
``TmaLoadPipeline``, ``StoreNotifyPipeline`` with its ``lag`` and ``readers``, ``pipes.ascend`` flag
pipelines) or a bare :class:`~pipes.PipelineSpec` — into the checker's :class:`ModelPipeline`; an
ordered barrier's spec (``groups``, ``role``, ``depth``) becomes a :class:`ModelOrder`.
:func:`stream_protocol` builds the standard agents for a pipeline: its producer streams ``items``
through the kind's own data path (thread writes, TMA loads, TMA stores with metadata and end-of-stream)
and every unit of every consumer role checks each item and releases it — reading through the async
proxy when the declaration's ``readers`` are ``ASYNC`` (its releases then issue no proxy fence).
:func:`ordered_protocol` makes the groups of an ordered barrier take turns. Both only read attributes:
this module imports no backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..spec import Completion, PipelineSpec
from .context import Ctx
from .protocol import ASYNC_WRITTEN, END_OF_STREAM, Agent, ModelOrder, ModelPipeline, Protocol

__all__ = ["model_of", "ordered_protocol", "stream_protocol"]


def model_of(declaration: Any) -> ModelPipeline:
    """The checker's model of a pipeline declaration (or spec), with the kind's options it carries."""
    spec = declaration if isinstance(declaration, PipelineSpec) else getattr(declaration, "spec", None)
    if not isinstance(spec, PipelineSpec):
        raise TypeError(f"model_of({declaration!r}): expected a PipelineSpec or an object with a .spec PipelineSpec")
    lag = getattr(declaration, "lag", None) if spec.completion is Completion.STORE_COMPLETE else None
    # pipes.cute.SlotReaders, by name: ASYNC readers (wgmma, TMA forwarding) get no fence before a release.
    readers = getattr(declaration, "readers", None)
    fence_reads = getattr(readers, "name", None) != "ASYNC" or spec.completion not in ASYNC_WRITTEN
    return ModelPipeline(spec, lag=lag, fence_reads=fence_reads)


def _producer(spec: PipelineSpec, items: int) -> Callable[[Ctx], None]:
    name = spec.name

    def produce(ctx: Ctx) -> None:
        p = ctx.producer(name)
        for item in range(items):
            slot = p.acquire()
            if spec.completion is Completion.TRANSACTION_BYTES:
                ctx.load(name, slot, item)
                p.commit()
            elif spec.completion is Completion.STORE_COMPLETE:
                ctx.write(name, slot, item)
                ctx.fence_proxy_async()  # the staged tile is read by the TMA store (async proxy)
                ctx.store(name, slot, (name, item))
                p.commit(item)
            else:
                ctx.write(name, slot, item)
                p.commit()
        p.tail()

    return produce


def _consumer(model: ModelPipeline, role: str, items: int) -> Callable[[Ctx], None]:
    spec = model.spec
    name = spec.name
    # A pipeline whose releases do not fence stands for consumers that read through the async proxy.
    proxy = "generic" if model.fence_reads else "async"

    def consume(ctx: Ctx) -> None:
        c = ctx.consumer(name, role)
        if spec.completion is Completion.STORE_COMPLETE:
            seen = 0
            while (item := ctx.read_meta(name, c.wait())) is not END_OF_STREAM:
                assert item == seen and ctx.read_global((name, item), proxy) == item, f"{ctx.name}: item {item!r}"
                c.release()
                seen += 1
            c.release()
            assert seen == items, f"{ctx.name} saw {seen} items before end-of-stream, expected {items}"
            return
        for item in range(items):
            slot = c.wait()
            assert ctx.read(name, slot, proxy=proxy) == item, f"{ctx.name} read a wrong item from {name} slot {slot}"
            c.release()

    return consume


def stream_protocol(declaration: Any, items: int = 6) -> Protocol:
    """One producer agent and one agent per consumer unit (``role.count`` of each role) streaming
    ``items`` items through ``declaration``'s pipeline, as its kind moves data."""
    model = model_of(declaration)
    spec = model.spec
    agents = [Agent(spec.producer.name, _producer(spec, items))]
    for role in spec.consumers:
        agents += [Agent(f"{role.name}{unit}", _consumer(model, role.name, items)) for unit in range(role.count)]
    return Protocol(f"{spec.name}_stream", agents, [model])


def ordered_protocol(order_spec: Any, rounds: int = 3) -> Protocol:
    """The groups of an ordered barrier (``name``, ``groups``, ``role``, ``depth``) take turns for
    ``rounds`` rounds, one agent per unit of the role (``role.count``). In every section the group's
    first unit checks that the previous group went before it and records its own turn; the other units
    only take turns — they run one function, so the checker explores them as one orbit."""
    order = ModelOrder(order_spec.name, order_spec.groups, order_spec.role, order_spec.depth)

    def leader(g: int) -> Callable[[Ctx], None]:
        def run(ctx: Ctx) -> None:
            turn = ctx.order(order.name, g)
            for r in range(rounds):
                for section in range(order.depth):
                    turn.wait()
                    if g:
                        assert ctx.read_global((section, r, g - 1)) == "done", f"{ctx.name}: group {g - 1} went later"
                    ctx.write_global((section, r, g), "done")
                    turn.arrive()

        return run

    def follower(g: int) -> Callable[[Ctx], None]:
        def run(ctx: Ctx) -> None:
            turn = ctx.order(order.name, g)
            for _ in range(rounds * order.depth):
                turn.wait()
                turn.arrive()

        return run

    agents = []
    for g in range(order.groups):
        follow = follower(g)
        for u in range(order.role.count):
            name = f"{order.role.name}{g}" + (f"_{u}" if order.role.count > 1 else "")
            agents.append(Agent(name, leader(g) if u == 0 else follow))
    return Protocol(f"{order.name}_turns", agents, [], orders=[order])
