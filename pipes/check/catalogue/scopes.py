"""Catalogue protocols where memory scope decides: the epilogue → communication → host chain of
``examples/epilogue_comm.py`` (issue 9), checked end to end.

The chain: the epilogue TMA-stores each output tile through a ``StoreNotifyPipeline`` (lag 1, so stores
stay in flight); the communication warp waits for the tile (its global write is complete), reads it,
ships it into pinned host memory (``transport="host"``) or a peer device's buffer (``"peer"``), and
raises the tile's ready flag — a store of the launch's epoch with a release at the scope the receiver
needs; a host thread (or the peer device's thread) acquires the flag (``flag >= epoch``) and reads the
tile. The flags and the receiver's buffer start with what the previous launch left (epoch − 1, its
tiles), so a read of a flag or buffer before this launch wrote it is no hazard by itself.
"""

from __future__ import annotations

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..context import Ctx
from ..declarations import END_OF_STREAM, ModelCounter, ModelPipeline
from ..protocol import Agent, Protocol
from ..report import FindingKind
from ..scope import HOST, Scope
from .entry import Entry

TRANSPORTS = ("host", "peer")


def epilogue_comm(
    tiles: int = 3,
    stages: int = 2,
    lag: int = 1,
    transport: str = "host",
    release: Scope = Scope.SYSTEM,
    epoch: int = 2,
) -> Protocol:
    """The ``epilogue_comm`` chain for ``tiles`` tiles; ``release``: the scope of the ready flag's release."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport = {transport!r} is invalid: allowed one of {TRANSPORTS}")
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

    def communicate(ctx: Ctx) -> None:
        inbox = ctx.consumer("out")
        while True:
            slot = inbox.wait()
            tile = ctx.read_meta("out", slot)
            if tile is END_OF_STREAM:
                inbox.release()
                return
            data = ctx.read_global(("C", tile))
            ctx.write_global((transport, tile), data)  # ship: st.global into pinned host / peer memory
            ctx.store_counter(f"ready{tile}", epoch, scope=release)  # st.release<scope> of the epoch
            inbox.release()

    def receive(ctx: Ctx) -> None:
        for tile in range(tiles):
            ctx.wait_counter(f"ready{tile}", at_least=epoch, scope=Scope.SYSTEM)
            data = ctx.read_global((transport, tile))
            assert data == f"C{tile}", f"{ctx.name} read {data!r} for tile {tile} (launch {epoch})"

    where = {"device": HOST} if transport == "host" else {"device": 1}
    agents = [Agent("epilogue", epilogue), Agent("comm", communicate), Agent("receiver", receive, **where)]
    counters = [ModelCounter(f"ready{t}", initial=epoch - 1) for t in range(tiles)]
    stale = {(transport, t): f"C{t} of launch {epoch - 1}" for t in range(tiles)}
    name = f"epilogue_comm_{transport}_{release.name.lower()}"
    return Protocol(name, agents, [ModelPipeline(spec, lag=lag)], counters=counters, initial=stale)


GOOD = [
    Entry("epilogue_comm_host", "epilogue → comm warp → pinned host memory, ready flag released .sys", epilogue_comm),
    Entry(
        "epilogue_comm_peer",
        "epilogue → comm warp → a peer device's buffer, ready flag released .sys",
        lambda: epilogue_comm(transport="peer"),
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
        "epilogue_comm_peer_gpu_release",
        "the ready flag is released at GPU scope: a peer device's reader is outside it",
        lambda: epilogue_comm(transport="peer", release=Scope.GPU),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('peer', 0)]", "release has GPU scope (.gpu)", "needs SYSTEM scope (.sys)"),
        twin="epilogue_comm_peer",
    ),
]
