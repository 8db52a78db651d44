"""Catalogue protocols on a thread-block cluster: one agent per CTA, multicast TMA loads landing in every
CTA, remote arrives on a peer CTA's barrier, and the release scope such an arrive needs."""

from __future__ import annotations

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..context import Ctx
from ..declarations import ModelBarrier, ModelPipeline
from ..protocol import Agent, Protocol
from ..report import FindingKind
from ..scope import Scope
from .entry import Entry

HALF = 8192


def multicast_mainloop(k_blocks: int = 2, stages: int = 2, peers: int = 2, tail: bool = True) -> Protocol:
    """A 2-CTA cluster mainloop: each CTA's TMA producer loads half of the shared tile and multicasts it
    into both CTAs' slot (completing its bytes on both ``full[s]``); each CTA's math warpgroup reads both
    halves and releases the slot on both CTAs' ``empty[s]`` — the peer's remotely, at cluster scope —
    because the peer's producer writes into its slot too. ``peers``: what the consumer role declares
    (2 is right: each CTA's ``empty[s]`` collects both CTAs' releases). ``tail=False``: the producers skip
    ``producer.tail()``, so a CTA may exit while the peer's consumer still has to arrive on its ``empty[s]``
    — the remote arrive lands in an exited CTA (on an H100: an unspecified launch failure)."""
    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.WARPGROUP, peers=peers),
        Completion.TRANSACTION_BYTES,
        2 * HALF,
    )

    def loads(cta: int):
        def run(ctx: Ctx) -> None:
            p = ctx.producer("mainloop")
            for k in range(k_blocks):
                slot = p.acquire()
                ctx.load("mainloop", slot, ("B", k, cta), nbytes=HALF, part=f"half{cta}", multicast=True)
                p.commit()
            if tail:
                p.tail()

        return run

    def mma(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop")
        for k in range(k_blocks):
            slot = c.wait()
            halves = tuple(ctx.read("mainloop", slot, part=f"half{h}", proxy="async") for h in range(2))
            assert halves == (("B", k, 0), ("B", k, 1)), f"{ctx.name} read {halves!r} for k block {k}"
            c.release()

    agents = [
        Agent("tma0", loads(0), cta=0),
        Agent("tma1", loads(1), cta=1),
        Agent("mma0", mma, cta=0),
        Agent("mma1", mma, cta=1),
    ]
    model = ModelPipeline(spec, fence_reads=False, ctas=(0, 1), multicast=True)
    name = "multicast_mainloop" + ("" if peers == 2 else f"_peers{peers}") + ("" if tail else "_no_tail")
    return Protocol(name, agents, [model])


def cluster_warps(k_blocks: int = 1, stages: int = 2, warps: int = 4) -> Protocol:
    """A realistic cluster layout for the symmetry benchmark: 2 CTAs, each with a TMA producer warp that
    multicasts its half of the tile, and a math warpgroup written as its ``warps`` warps (elected per
    warp): 8 consumer warps in 2 warpgroups on 2 CTAs. The warps of one CTA run one function, so the
    checker explores them as one orbit."""
    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, count=warps, peers=2),
        Completion.TRANSACTION_BYTES,
        2 * HALF,
    )

    def loads(cta: int):
        def run(ctx: Ctx) -> None:
            p = ctx.producer("mainloop")
            for k in range(k_blocks):
                slot = p.acquire()
                ctx.load("mainloop", slot, ("B", k, cta), nbytes=HALF, part=f"half{cta}", multicast=True)
                p.commit()
            p.tail()

        return run

    def warp(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop")
        for k in range(k_blocks):
            slot = c.wait()
            for half in range(2):
                assert ctx.read("mainloop", slot, part=f"half{half}", proxy="async") == ("B", k, half)
            c.release()

    agents = [Agent("tma0", loads(0), cta=0), Agent("tma1", loads(1), cta=1)]
    agents += [Agent(f"mma{cta}_w{w}", warp, cta=cta) for cta in range(2) for w in range(warps)]
    model = ModelPipeline(spec, fence_reads=False, ctas=(0, 1), multicast=True)
    return Protocol(f"cluster_warps_{warps}x2_k{k_blocks}", agents, [model])


def dsmem_relay(scope: Scope = Scope.CLUSTER, rounds: int = 2, acquire: Scope = Scope.CLUSTER) -> Protocol:
    """A relay across the cluster: a warp in CTA 0 writes a tile into CTA 1's shared memory (modelled as
    the global cell ``('dsmem', 1, r)``) and arrives on CTA 1's ``ready`` barrier; CTA 1's warp waits and
    reads it, then hands the buffer back on CTA 0's ``free`` barrier, which the sender waits for once more
    before it exits (a remote arrive into an exited CTA fails the launch). The data's hand-over needs cluster
    scope on both sides: ``scope=Scope.CTA`` (the arrive's release) orders nothing for CTA 1, and
    ``acquire=Scope.CTA`` (the receiver's wait, ``mbarrier.try_wait`` without ``.acquire.cluster``) does not
    synchronise with CTA 0's release. The hand-back needs no more than the sender's CTA-scoped wait: it
    only orders the receiver's finished read before the next write, as the library's producers do."""

    def sender(ctx: Ctx) -> None:
        for r in range(rounds):
            ctx.wait("free", (r & 1) ^ 1, completion=r - 1)
            ctx.write_global(("dsmem", 1), ("tile", r))
            ctx.arrive("ready", 1, completion=r, scope=scope)
        # The last hand-back too: CTA 0 must not exit before the receiver's remote arrive on its ``free``.
        ctx.wait("free", (rounds - 1) & 1, completion=rounds - 1)

    def receiver(ctx: Ctx) -> None:
        for r in range(rounds):
            ctx.wait("ready", r & 1, completion=r, scope=acquire)
            assert ctx.read_global(("dsmem", 1)) == ("tile", r)
            ctx.arrive("free", 1, completion=r, scope=Scope.CLUSTER)

    barriers = [ModelBarrier("ready", 1, cta=1), ModelBarrier("free", 1, cta=0)]
    agents = [Agent("sender", sender, cta=0), Agent("receiver", receiver, cta=1)]
    name = f"dsmem_relay_{scope.name.lower()}" + ("" if acquire is Scope.CLUSTER else f"_{acquire.name.lower()}_wait")
    return Protocol(name, agents, barriers=barriers)


def silent_reader(sync: bool = True, tiles: int = 3, stages: int = 2) -> Protocol:
    """A slot read by two consumer roles of which only one arrives on ``empty[s]`` — the predicate real
    kernels use (``ModelPipeline(silent=("amax",))``): the math warpgroup releases, an amax warp reads
    the same tile and releases nothing. Its read must still end before the slot is handed back, so it
    arrives on the slot's ``peeked[s]`` barrier, which the math warpgroup waits on before releasing (one
    per slot: the amax warp may run up to a ring ahead). ``sync=False``: no such barrier, so the next TMA
    load may overwrite the slot under the amax warp's read."""
    spec = PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        (Role("mma", ArrivalUnit.WARPGROUP), Role("amax", ArrivalUnit.WARP)),
        Completion.TRANSACTION_BYTES,
        2 * HALF,
    )

    def loads(ctx: Ctx) -> None:
        p = ctx.producer("mainloop")
        for k in range(tiles):
            ctx.load("mainloop", p.acquire(), ("T", k))
            p.commit()
        p.tail()

    def mma(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop", "mma")
        for k in range(tiles):
            slot = c.wait()
            assert ctx.read("mainloop", slot, proxy="async") == ("T", k)
            if sync:
                round_ = k // stages
                ctx.wait(f"peeked[{slot}]", round_ & 1, completion=round_)  # the amax warp is done with it
            c.release()

    def amax(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop", "amax")
        for k in range(tiles):
            slot = c.wait()
            assert ctx.read("mainloop", slot) == ("T", k)
            ctx.fence_proxy_async()  # its generic read, before the TMA load that refills the slot
            if sync:
                ctx.arrive(f"peeked[{slot}]", 1, completion=k // stages)
            c.release()  # a silent role: arrives nowhere

    model = ModelPipeline(spec, fence_reads=False, silent=("amax",))
    agents = [Agent("tma", loads), Agent("mma", mma), Agent("amax", amax)]
    barriers = ModelBarrier.array("peeked", stages, 1, arrivers=("amax",)) if sync else ()
    return Protocol("silent_reader" + ("" if sync else "_unsynchronised"), agents, [model], barriers=barriers)


GOOD = [
    Entry("multicast_mainloop", "2-CTA cluster: multicast TMA halves, releases on both CTAs", multicast_mainloop),
    Entry("dsmem_relay", "a remote arrive at cluster scope orders a peer CTA's write", dsmem_relay),
    Entry("silent_reader", "a declared consumer role that does not arrive, ordered by a named barrier", silent_reader),
]

BAD = [
    Entry(
        "multicast_mainloop_no_tail",
        "the TMA producers skip producer.tail(): a CTA exits before the peer's remote release on its empty[s]",
        lambda: multicast_mainloop(tail=False),
        FindingKind.REMOTE_AFTER_EXIT,
        (
            "mma1 (consumer 'mma' of mainloop), in consumer_release, arrives remotely on mainloop.empty[0]@cta0",
            "in CTA 0 of cluster 0",
            "after every agent of that CTA finished (tma0, mma0)",
            "unspecified launch failure",
            "producer.tail()",
        ),
        twin="multicast_mainloop",
    ),
    Entry(
        "dsmem_relay_cta_scope",
        "a remote arrive released at CTA scope: the peer CTA's reader is not ordered after the write",
        lambda: dsmem_relay(Scope.CTA),
        FindingKind.READ_UNCOMMITTED,
        ("receiver reads global[('dsmem', 1)]", "release has CTA scope (.cta)", "needs CLUSTER scope (.cluster)"),
        twin="dsmem_relay",
    ),
    Entry(
        "dsmem_relay_cta_wait",
        "a peer CTA's data read after a wait at CTA scope: the arrive releases at cluster scope, the wait does not "
        "acquire there",
        lambda: dsmem_relay(acquire=Scope.CTA),
        FindingKind.READ_UNCOMMITTED,
        (
            "receiver reads global[('dsmem', 1)]",
            "receiver's wait on ready came after this write",
            "acquires at CTA scope (acquire.cta)",
            "mbarrier.try_wait.acquire.cluster",
        ),
        twin="dsmem_relay",
    ),
    Entry(
        "silent_reader_unsynchronised",
        "a consumer role that does not arrive reads the slot while the next TMA load refills it",
        lambda: silent_reader(sync=False),
        FindingKind.OVERWRITE_UNRELEASED,
        ("the TMA load issued by tma overwrites mainloop.slot[0]", "amax"),
        (FindingKind.READ_UNCOMMITTED,),
        twin="silent_reader",
    ),
]
