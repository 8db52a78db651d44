"""Catalogue protocols of shipping finished tiles (:mod:`pipes.check.comm`): the epilogue → communication
warp → receiver chain of ``examples/epilogue_comm.py``, the copy engine's steps, and back-to-back launches
with credits — each correct, and with the defects that break it.

* :func:`epilogue_comm` — the epilogue TMA-stores each tile through a store→notify pipeline (lag 1, so
  stores stay in flight); the communication warp waits for the tile, reads it, ships it into pinned host
  memory (``transport="host"``) or a peer device's buffer (``"peer"``) and raises the tile's ready flag to
  the launch's epoch at the scope the receiver needs; the receiver acquires the flag and reads the tile.
  The receive buffer starts with the previous launch's tiles, so reading it early is no hazard by itself.
* :func:`copy_engine_comm` — the communication warp counts each tile into its step; the copy engine's
  stream waits for the step's count, copies the step and raises its flag; the host reads the step.
* :func:`comm_launches` — a sender and a host reader over back-to-back launches: flags that must tell
  this launch from the last, credits that keep a buffer until the reader consumed it.

The all-gather GEMM's protocol is in :mod:`.all_gather`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...epoch import FIRST, FRESH, next_epoch, previous
from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..comm import ModelCredits, ModelReadyFlags, ModelStepCounters, copy_stream, host_reader, model_epoch
from ..context import Ctx
from ..declarations import END_OF_STREAM, ModelPipeline
from ..protocol import Agent, Protocol
from ..report import FindingKind
from ..scope import HOST, Scope
from .entry import Entry

TRANSPORTS = ("host", "peer")


def _chain(tiles: int, stages: int, lag: int, notify_on: str) -> tuple[ModelPipeline, Agent]:
    """The epilogue agent and its store→notify pipeline ``out``: tile ``t`` lands in ``global[('C', t)]``."""
    spec = PipelineSpec(
        "out",
        stages,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        Role("comm", ArrivalUnit.ELECTED_PER_WARP),
        Completion.STORE_COMPLETE,
    )

    def epilogue(ctx: Ctx) -> None:
        out = ctx.producer("out")
        for tile in range(tiles):
            slot = out.acquire()
            ctx.write("out", slot, f"C{tile}")
            ctx.fence_proxy_async()
            ctx.store("out", slot, ("C", tile))
            out.commit(tile)
        out.tail()

    return ModelPipeline(spec, lag=lag, notify_on=notify_on), Agent("epilogue", epilogue)


def _tiles(ctx: Ctx) -> Iterator[int]:
    """The communication warp's loop over the tiles the epilogue notifies, until end of stream."""
    inbox = ctx.consumer("out")
    while (tile := ctx.read_meta("out", inbox.wait())) is not END_OF_STREAM:
        yield tile
        inbox.release()
    inbox.release()


def epilogue_comm(
    tiles: int = 3,
    stages: int = 2,
    lag: int = 1,
    transport: str = "host",
    release: Scope = Scope.SYSTEM,
    epoch: int = FIRST,
    notify_on: str = "store_complete",
    fenced: bool = True,
) -> Protocol:
    """The ``epilogue_comm`` chain for ``tiles`` tiles of launch ``epoch``.

    ``release``: the ready flag's scope (the receiver acquires at ``.sys``); ``notify_on="smem_read"``: the
    epilogue notifies after ``wait_group.read`` only; ``fenced=False``: no fence between the tile's data
    and its flag (a relaxed flag store).
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"transport = {transport!r} is invalid: allowed one of {TRANSPORTS}")
    epoch = model_epoch(epoch)
    left = FRESH if epoch == FIRST else previous(epoch)  # what the launch before left in the flags
    flags = ModelReadyFlags("ready", tiles, release, initial=left)
    pipeline, epilogue = _chain(tiles, stages, lag, notify_on)

    def communicate(ctx: Ctx) -> None:
        for tile in _tiles(ctx):
            data = ctx.read_global(("C", tile))
            ctx.write_global((transport, tile), data)  # ship: st.global into pinned host / peer memory
            flags.publish(ctx, tile, epoch, fenced=fenced)

    where = {"device": HOST} if transport == "host" else {"device": 1}
    receiver = host_reader(
        "receiver",
        flags,
        lambda ctx, t: ctx.read_global((transport, t)),
        lambda t, e: f"C{t}",
        epochs=(epoch,),
        **where,
    )
    stale = {(transport, t): f"C{t} of the launch before" for t in range(tiles)}
    name = f"epilogue_comm_{transport}_{release.name.lower()}"
    name += "" if notify_on == "store_complete" else "_notify_on_read"
    name += "" if fenced else "_no_fence"
    agents = [epilogue, Agent("comm", communicate), receiver]
    return Protocol(name, agents, [pipeline], counters=flags.counters(), initial=stale)


def copy_engine_comm(
    tiles: int = 4, step_tiles: int = 2, stages: int = 2, barrier: bool = True, counted: bool = True
) -> Protocol:
    """The copy engine ships ``tiles`` tiles in steps of ``step_tiles`` to the host: the communication warp
    counts each tile into its step (``red.release.sys``), the copy stream waits for the count, copies the
    step and raises its flag (``cuStreamWriteValue32`` behind a memory barrier), the host reads the step.

    ``barrier=False``: the flag write has no memory barrier (relaxed); ``counted=False``: the warp's count
    is a relaxed add (no fence before it).
    """
    if tiles % step_tiles:
        raise ValueError(f"tiles = {tiles} is invalid: allowed a multiple of step_tiles = {step_tiles}")
    steps = ModelStepCounters("step", tiles // step_tiles, step_tiles)
    flags = ModelReadyFlags("ready", steps.steps, Scope.SYSTEM, holds="parity_token")
    pipeline, epilogue = _chain(tiles, stages, min(1, stages - 1), "store_complete")

    def count(ctx: Ctx) -> None:
        for tile in _tiles(ctx):
            steps.count(ctx, tile // step_tiles, fenced=counted)

    copy = copy_stream(
        "copy",
        steps,
        flags,
        lambda ctx, t: ctx.read_global(("C", t)),
        lambda ctx, t, value: ctx.write_global(("host", t), value),
        barrier=barrier,
    )
    host = host_reader(
        "host", flags, lambda ctx, t: ctx.read_global(("host", t)), lambda t, e: f"C{t}", tiles_per_flag=step_tiles
    )
    name = "copy_engine_comm" + ("" if barrier else "_no_barrier") + ("" if counted else "_relaxed_count")
    agents = [epilogue, Agent("comm", count), copy, host]
    return Protocol(name, agents, [pipeline], counters=(*steps.counters(), *flags.counters()))


def comm_launches(launches: int = 2, tiles: int = 1, holds: str = "epoch", credits: bool = True) -> Protocol:
    """A sender (the communication warp, launch after launch in stream order) ships ``tiles`` tiles per
    launch to the host, which reads each launch's tiles and hands each back with a credit.

    ``holds``: what the flags hold (``"epoch"``, ``"parity_token"``, or the 0/1 ``"epoch_bit"`` defect);
    ``credits=False``: the sender never waits for a credit before overwriting a receive buffer.
    """
    if launches < 2:
        raise ValueError(f"launches = {launches} is invalid: allowed at least 2 (the hazards are between launches)")
    epochs = [FIRST]
    while len(epochs) < launches:
        epochs.append(next_epoch(epochs[-1]))
    flags = ModelReadyFlags("ready", tiles, Scope.SYSTEM, holds=holds)
    given = ModelCredits("credit", tiles)

    def send(ctx: Ctx) -> None:
        for epoch in epochs:
            for tile in range(tiles):
                if credits:
                    given.wait(ctx, tile, epoch, scope=Scope.SYSTEM)
                ctx.write_global(("host", tile), (epoch, tile))
                flags.publish(ctx, tile, epoch)

    host = host_reader(
        "host",
        flags,
        lambda ctx, t: ctx.read_global(("host", t)),
        lambda t, e: (e, t),
        epochs=epochs,
        credits=given,
    )
    stale = {("host", t): ("before the first launch", t) for t in range(tiles)}
    name = f"comm_launches_{holds}" + ("" if credits else "_no_credit")
    return Protocol(name, [Agent("sender", send), host], counters=(*flags.counters(), *given.counters()), initial=stale)


GOOD = [
    Entry("epilogue_comm_host", "epilogue → comm warp → pinned host memory, ready flag released .sys", epilogue_comm),
    Entry(
        "epilogue_comm_peer",
        "epilogue → comm warp → a peer device's buffer, ready flag released .sys",
        lambda: epilogue_comm(transport="peer"),
    ),
    Entry(
        "copy_engine_comm",
        "comm warp counts steps (red.release.sys); the copy stream waits, copies, barrier + flag; the host reads",
        copy_engine_comm,
    ),
    Entry("comm_launches_epoch", "two launches: epoch flags, per-tile credits", comm_launches),
    Entry(
        "comm_launches_parity",
        "two launches: copy-engine parity tokens (1 or 2), per-tile credits",
        lambda: comm_launches(holds="parity_token"),
    ),
]

BAD = [
    Entry(
        "epilogue_comm_host_cta_release",
        "the ready flag is released at CTA scope: the host thread's read of the tile is not ordered after it",
        lambda: epilogue_comm(release=Scope.CTA),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('host', 0)]", "release has CTA scope (.cta)", "needs SYSTEM scope (.sys)"),
        twin="epilogue_comm_host",
    ),
    Entry(
        "epilogue_comm_host_gpu_release",
        "the ready flag is released at GPU scope (st.release.gpu): the host thread is outside it",
        lambda: epilogue_comm(release=Scope.GPU),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('host', 0)]", "release has GPU scope (.gpu)", "needs SYSTEM scope (.sys)"),
        twin="epilogue_comm_host",
    ),
    Entry(
        "epilogue_comm_peer_gpu_release",
        "the ready flag is released at GPU scope: a peer device's reader is outside it",
        lambda: epilogue_comm(transport="peer", release=Scope.GPU),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('peer', 0)]", "release has GPU scope (.gpu)", "needs SYSTEM scope (.sys)"),
        twin="epilogue_comm_peer",
    ),
    Entry(
        "epilogue_comm_notify_on_read",
        "the comm warp is notified after wait_group.read: the tile's TMA store has read shared memory, but its "
        "global write may not be done",
        lambda: epilogue_comm(notify_on="smem_read"),
        FindingKind.READ_UNCOMMITTED,
        ("comm reads global[('C', 0)]", "nothing has written yet"),
        twin="epilogue_comm_host",
    ),
    Entry(
        "epilogue_comm_no_fence",
        "no fence between the tile's data and its flag: a relaxed flag store publishes nothing",
        lambda: epilogue_comm(fenced=False),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('host', 0)]", "the flag write was relaxed", "it publishes nothing"),
        twin="epilogue_comm_host",
    ),
    Entry(
        "copy_engine_comm_no_barrier",
        "the copy stream writes the step's flag without its memory barrier: a relaxed write publishes nothing",
        lambda: copy_engine_comm(barrier=False),
        FindingKind.READ_UNCOMMITTED,
        ("host reads global[('host', 0)]", "copy's write of ready0", "relaxed", "it publishes nothing"),
        twin="copy_engine_comm",
    ),
    Entry(
        "copy_engine_comm_relaxed_count",
        "the comm warp counts a tile with a relaxed add: the copy stream copies C unordered after its store",
        lambda: copy_engine_comm(counted=False),
        FindingKind.READ_UNCOMMITTED,
        ("copy reads global[('C', 0)]", "comm's write of step0", "relaxed", "it publishes nothing"),
        twin="copy_engine_comm",
    ),
    Entry(
        "comm_launches_no_credit",
        "the sender overwrites a receive buffer the host has not consumed (no credit)",
        lambda: comm_launches(credits=False),
        FindingKind.OVERWRITE_UNRELEASED,
        ("global[('host', 0)]", "write #2", "a credit handing the buffer back"),
        twin="comm_launches_epoch",
    ),
    Entry(
        "comm_launches_epoch_bit",
        "flags reused with a 0/1 parity: launch 2's token 0 is what a fresh flag holds",
        lambda: comm_launches(holds="epoch_bit"),
        FindingKind.AGENT_ERROR,
        ("host read tile 0 as ('before the first launch', 0) in launch 2", "ready0 == 0", "2 & 1 = 0 = FRESH"),
        twin="comm_launches_parity",
    ),
]
