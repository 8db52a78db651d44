"""Catalogue protocols built on the model pipelines: the ordinary Producer/Consumer handles over the model
backend (ARRIVAL, TMA-load, store→notify and FLAG pipelines, ordered barriers)."""

from __future__ import annotations

from collections.abc import Callable

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ...state import CONSUMER_START_PHASE
from ..context import Ctx
from ..protocol import END_OF_STREAM, Agent, ModelFlag, ModelOrder, ModelPipeline, Protocol

TILE_BYTES = 16384


def _stream_producer(pipe: str, items: int, tma: bool = False) -> Callable[[Ctx], None]:
    def producer(ctx: Ctx) -> None:
        p = ctx.producer(pipe)
        for item in range(items):
            slot = p.acquire()
            if tma:
                ctx.load(pipe, slot, item)
            else:
                ctx.write(pipe, slot, item)
            p.commit()
        p.tail()

    return producer


def _stream_consumer(pipe: str, items: int, role: str | None = None, bug: str = "") -> Callable[[Ctx], None]:
    """``bug``: "" (correct), "no_release", "release_before_read", "keep_last" (never releases the last),
    "read_after_release" (reads the slot, releases it, then reads it again)."""

    def consumer(ctx: Ctx) -> None:
        c = ctx.consumer(pipe, role)
        for item in range(items):
            slot = c.wait()
            if bug == "release_before_read":
                c.release()
            value = ctx.read(pipe, slot)
            assert value == item, f"{ctx.name} read {value!r} from {pipe} slot {slot}, expected {item}"
            if bug in ("", "read_after_release") or (bug == "keep_last" and item < items - 1):
                c.release()
            if bug == "read_after_release":
                ctx.read(pipe, slot)  # a second pass over the slot it already handed back

    return consumer


def async_pipeline(stages: int, items: int = 6, bug: str = "") -> Protocol:
    """ARRIVAL pipeline: a thread-role producer writes ``items`` values, a warp consumer reads them."""
    spec = PipelineSpec("data", stages, Role("load", ArrivalUnit.THREAD), Role("math", ArrivalUnit.WARP))
    agents = [Agent("load", _stream_producer("data", items)), Agent("math", _stream_consumer("data", items, bug=bug))]
    return Protocol(f"async_s{stages}{'_' + bug if bug else ''}", agents, [ModelPipeline(spec)])


def tma_pipeline(stages: int, items: int = 6, load_bytes: int | None = None, fence_reads: bool = True) -> Protocol:
    """TRANSACTION_BYTES pipeline: an elected producer thread issues TMA loads, a warpgroup consumes
    with ordinary (generic-proxy) loads. ``fence_reads=False``: its releases omit ``fence.proxy.async``."""
    spec = PipelineSpec(
        "smem",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("math", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES,
        TILE_BYTES,
    )

    def producer(ctx: Ctx) -> None:
        p = ctx.producer("smem")
        for item in range(items):
            slot = p.acquire()
            ctx.load("smem", slot, item, load_bytes)
            p.commit()
        p.tail()

    agents = [Agent("tma", producer), Agent("math", _stream_consumer("smem", items))]
    name = f"tma_s{stages}{'' if fence_reads else '_no_proxy_fence'}"
    return Protocol(name, agents, [ModelPipeline(spec, fence_reads=fence_reads)])


def token_pipeline(stages: int = 2, items: int = 4) -> Protocol:
    """ARRIVAL pipeline driven with try_ tokens (poll, do other work, then wait only if needed)."""
    spec = PipelineSpec("data", stages, Role("load"), Role("math", ArrivalUnit.WARP))

    def producer(ctx: Ctx) -> None:
        p = ctx.producer("data")
        for item in range(items):
            token = p.try_acquire()
            slot = p.acquire(token)
            ctx.write("data", slot, item)
            p.commit()
        p.tail()

    def consumer(ctx: Ctx) -> None:
        c = ctx.consumer("data")
        for item in range(items):
            token = c.try_wait()
            slot = c.wait(token)
            assert ctx.read("data", slot) == item
            c.release()

    return Protocol("tokens", [Agent("load", producer), Agent("math", consumer)], [ModelPipeline(spec)])


def producer_at_phase_zero(stages: int = 2, items: int = 4) -> Protocol:
    """Bad: the producer's explicit state starts at phase 0 (a consumer's start) instead of 1."""
    spec = PipelineSpec("data", stages, Role("load"), Role("math", ArrivalUnit.WARP))

    def producer(ctx: Ctx) -> None:
        ops = ctx.pipeline("data")
        state = ops.make_state(CONSUMER_START_PHASE)  # the bug: PRODUCER_START_PHASE is 1
        for item in range(items):
            ops.producer_acquire(state)
            ctx.write("data", state.index, item)
            ops.producer_commit(state)
            state.advance()
        ops.producer_tail(state)

    agents = [Agent("load", producer), Agent("math", _stream_consumer("data", items))]
    return Protocol("producer_phase_0", agents, [ModelPipeline(spec)])


def consumer_warpgroups(declared: int = 2, stages: int = 2, items: int = 4, running: int = 2) -> Protocol:
    """A TMA mainloop read by ``running`` consumer warpgroups; the spec declares ``declared`` of them."""
    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("math", ArrivalUnit.WARPGROUP, count=declared),
        Completion.TRANSACTION_BYTES,
        TILE_BYTES,
    )
    producer = Agent("tma", _stream_producer("mainloop", items, tma=True))
    agents = [producer, *(Agent(f"math{g}", _stream_consumer("mainloop", items)) for g in range(running))]
    suffix = "" if running == 2 else f"_running_{running}"
    return Protocol(f"two_warpgroups_declared_{declared}{suffix}", agents, [ModelPipeline(spec)])


def consumer_warps(count: int = 8, stages: int = 2, items: int = 3) -> Protocol:
    """A TMA-load pipeline read by ``count`` identical consumer warps of one role (elected per warp), as a
    kernel's declaration gives it to :func:`pipes.check.stream_protocol` — the symmetry benchmark."""
    from ..bridge import stream_protocol

    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, count=count),
        Completion.TRANSACTION_BYTES,
        8192,
    )
    return stream_protocol(spec, items=items)


def fan_out(stages: int = 2, items: int = 4) -> Protocol:
    """One producer, two consumer roles (a warp each) that both read every slot before it is free."""
    spec = PipelineSpec(
        "tiles",
        stages,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        (Role("send", ArrivalUnit.WARP), Role("log", ArrivalUnit.WARP)),
    )
    agents = [
        Agent("epi", _stream_producer("tiles", items)),
        Agent("send", _stream_consumer("tiles", items, role="send")),
        Agent("log", _stream_consumer("tiles", items, role="log")),
    ]
    return Protocol("fan_out", agents, [ModelPipeline(spec)])


def handoff(
    stages: int = 2,
    tiles: int = 4,
    consumers: int = 1,
    lag: int | None = None,
    notify_on: str = "store_complete",
    fence_writes: bool = True,
) -> Protocol:
    """The epilogue → communication hand-off (STORE_COMPLETE).

    The epilogue stages each output tile in a shared-memory slot with ordinary stores, fences them
    (``fence.proxy.async``) for the TMA store that reads the slot, and commits the tile index as
    metadata; ``consumers`` communication warps (units of one role) each wait for a tile, read it from
    global memory and release the slot, and stop at END_OF_STREAM, which the producer's tail commits.
    ``fence_writes=False``: the epilogue omits the proxy fence.
    """
    spec = PipelineSpec(
        "out",
        stages,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        Role("comm", ArrivalUnit.ELECTED_PER_WARP, count=consumers),
        Completion.STORE_COMPLETE,
    )

    def epilogue(ctx: Ctx) -> None:
        out = ctx.producer("out")
        for tile in range(tiles):
            slot = out.acquire()
            ctx.write("out", slot, f"C{tile}")
            if fence_writes:
                ctx.fence_proxy_async()
            ctx.store("out", slot, ("C", tile))
            out.commit(tile)
        out.tail()

    def communicate(ctx: Ctx) -> None:
        inbox = ctx.consumer("out")
        expected = 0
        while True:
            slot = inbox.wait()
            tile = ctx.read_meta("out", slot)
            if tile is END_OF_STREAM:
                inbox.release()
                break
            assert tile == expected, f"{ctx.name} got tile {tile!r}, expected {expected}"
            data = ctx.read_global(("C", tile))
            assert data == f"C{tile}", f"{ctx.name} read {data!r} for tile {tile}"
            inbox.release()
            expected += 1
        assert expected == tiles, f"{ctx.name} saw {expected} tiles before END_OF_STREAM, expected {tiles}"

    agents = [Agent("epilogue", epilogue), *(Agent(f"comm{i}", communicate) for i in range(consumers))]
    suffix = ("" if notify_on == "store_complete" else f"_{notify_on}") + ("" if fence_writes else "_no_proxy_fence")
    name = f"handoff_s{stages}_x{consumers}{suffix}"
    return Protocol(name, agents, [ModelPipeline(spec, lag=lag, notify_on=notify_on)])


def ping_pong(stages: int = 2, tiles: int = 4, k_blocks: int = 2, phase_flips: bool = True) -> Protocol:
    """A TMA mainloop shared by two math warpgroups that take turns per output tile (ordered barrier).

    Warpgroup ``g`` computes tiles ``g, g + 2, …``: it waits for its turn, consumes the tile's
    ``k_blocks`` slots with an explicit consumer state, hands the turn on, writes its tile, and skips
    the other warpgroup's ``k_blocks`` slots.
    """
    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("math", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES,
        TILE_BYTES,
    )
    order = ModelOrder("order", groups=2, role=Role("math", ArrivalUnit.WARPGROUP), phase_flips=phase_flips)

    def loads(ctx: Ctx) -> None:
        p = ctx.producer("mainloop")
        for tile in range(tiles):
            for k in range(k_blocks):
                slot = p.acquire()
                ctx.load("mainloop", slot, (tile, k))
                p.commit()
        p.tail()

    def math(group: int) -> Callable[[Ctx], None]:
        def run(ctx: Ctx) -> None:
            ops = ctx.pipeline("mainloop")
            state = ops.make_state(CONSUMER_START_PHASE)
            if group:
                state.advance(group * k_blocks)
            turn = ctx.order("order", group)
            for tile in range(group, tiles, 2):
                turn.wait()
                for k in range(k_blocks):
                    ops.consumer_wait(state)
                    assert ctx.read("mainloop", state.index) == (tile, k)
                    ops.consumer_release(state)
                    state.advance()
                turn.arrive()
                ctx.write_global(("C", tile), tile)
                state.advance(k_blocks)

        return run

    agents = [Agent("tma", loads), Agent("math0", math(0)), Agent("math1", math(1))]
    name = "ping_pong" if phase_flips else "ping_pong_phase_never_flips"
    return Protocol(name, agents, [ModelPipeline(spec)], orders=[order])


def ascend_double_buffer(stages: int = 2, items: int = 4) -> Protocol:
    """FLAG pipeline (Ascend MTE2 → MTE1): primed empty flags, drained by the producer's tail."""
    spec = PipelineSpec("l1", stages, Role("mte2"), Role("mte1"), Completion.FLAG)
    agents = [Agent("mte2", _stream_producer("l1", items)), Agent("mte1", _stream_consumer("l1", items))]
    return Protocol(f"ascend_flags_s{stages}", agents, [ModelPipeline(spec)])


def ascend_set_twice() -> Protocol:
    """Bad: raw flags; the producer sets MTE2→MTE1 again before the consumer's wait_flag cleared it."""

    def mte2(ctx: Ctx) -> None:
        for item in range(2):
            ctx.write_global("l1", item)
            ctx.set_flag("MTE2_MTE1_0")

    def mte1(ctx: Ctx) -> None:
        for _ in range(2):
            ctx.wait_flag("MTE2_MTE1_0")
            ctx.read_global("l1")

    return Protocol("ascend_set_twice", [Agent("mte2", mte2), Agent("mte1", mte1)], flags=[ModelFlag("MTE2_MTE1_0")])
