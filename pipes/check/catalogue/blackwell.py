"""Catalogue protocols of Blackwell (sm_100a) kernels: the tensor core's commits, tensor-memory accumulator
stages, the 2-CTA pair, cluster-launch-control responses and the GEMM + reduce-scatter flag hand-off.

Each is written as the kernel does it — raw mbarrier arrays, TMA loads, and the MMA warp's program run by
:class:`pipes.check.umma.UmmaStream` (the issuing warp plus an in-order tensor core whose ``tcgen05.commit``
arrives once the earlier MMAs have completed) — with the defects that break it and their corrected twins.

* :func:`umma_gemm` — one CTA: TMA → MMA through ``ab`` stages, MMA → epilogue through TMEM accumulator stages;
* :func:`umma_pair` — a ``cta_group::2`` pair: both CTAs' TMA loads complete on the leader's barrier, the
  leader's commits are multicast to both CTAs, both epilogues release on the leader's accumulator barrier;
* :func:`clc_fetch` — the scheduler warp's ``clusterlaunchcontrol.try_cancel`` responses read in every CTA;
* :func:`gemm_reduce_scatter` — NVIDIA's Blackwell GEMM + reduce-scatter hand-off (per tile: TMA store, drain,
  ready flag to the tile's owner on another GPU) and its store→notify form.
"""

from __future__ import annotations

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..context import Ctx
from ..declarations import ModelBarrier, ModelCounter, ModelPipeline
from ..ops import TmaLoad
from ..protocol import Agent, Protocol
from ..report import FindingKind
from ..scope import Scope
from ..umma import Commit, Mma, UmmaStream, Wait, tmem_read
from .entry import Entry

A_BYTES = 16384
B_BYTES = 16384
RESPONSE_BYTES = 16

UMMA_DEFECTS = (None, "commit_before_mma", "no_commit", "acc_commit_first", "early_tmem_read", "early_tmem_release")


def _round(i: int, stages: int) -> tuple[int, int]:
    """(slot, round of that slot) of the ``i``-th use of a ring of ``stages``."""
    return i % stages, i // stages


def _tma_producer(tiles: int, k_blocks: int, stages: int) -> Agent:
    def run(ctx: Ctx) -> None:
        for i in range(tiles * k_blocks):
            s, r = _round(i, stages)
            ctx.wait(f"empty[{s}]", (r & 1) ^ 1, completion=r - 1)
            ctx.arrive(f"full[{s}]", 1, completion=r, tx=A_BYTES + B_BYTES)
            ctx.tma_load(f"a{s}", ("A", i), f"full[{s}]", A_BYTES, completion=r)
            ctx.tma_load(f"b{s}", ("B", i), f"full[{s}]", B_BYTES, completion=r)

    return Agent("tma", run)


def umma_gemm(
    tiles: int = 2, k_blocks: int = 2, stages: int = 2, acc_stages: int = 1, defect: str | None = None
) -> Protocol:
    """A persistent Blackwell GEMM's three roles on one CTA, for ``tiles`` output tiles of ``k_blocks`` each.

    ``defect``: ``"commit_before_mma"`` — the mainloop's ``tcgen05.commit`` is issued before the stage's MMA, so
    it releases the stage before the tensor core has read it; ``"no_commit"`` — the mainloop never commits (the
    stage is never released); ``"acc_commit_first"`` — the accumulator's commit is issued before the tile's MMAs;
    ``"early_tmem_read"`` — the epilogue reads the accumulator before waiting for its barrier;
    ``"early_tmem_release"`` — the epilogue releases the accumulator stage before reading it.
    """
    if defect not in UMMA_DEFECTS:
        raise ValueError(f"umma_gemm(defect={defect!r}) is invalid: allowed one of {UMMA_DEFECTS}")
    steps: list = []
    for t in range(tiles):
        a, ra = _round(t, acc_stages)
        steps.append(Wait(f"acc_empty[{a}]", (ra & 1) ^ 1, completion=ra - 1))
        tile_steps: list = []
        for k in range(k_blocks):
            s, r = _round(t * k_blocks + k, stages)
            mma = Mma(((f"a{s}", None), (f"b{s}", None)), "acc", a, accumulate=k > 0, label=("C", t, k))
            release = [] if defect == "no_commit" else [Commit((f"empty[{s}]",), completion=r)]
            body = [*release, mma] if defect == "commit_before_mma" else [mma, *release]
            tile_steps += [Wait(f"full[{s}]", r & 1, completion=r), *body]
        filled = Commit((f"acc_full[{a}]",), completion=ra)
        steps += [filled, *tile_steps] if defect == "acc_commit_first" else [*tile_steps, filled]
    stream = UmmaStream("mma", steps)

    def epilogue(ctx: Ctx) -> None:
        for t in range(tiles):
            a, ra = _round(t, acc_stages)
            if defect == "early_tmem_read":
                value = tmem_read(ctx, "acc", a)
                ctx.wait(f"acc_full[{a}]", ra & 1, completion=ra)
            elif defect == "early_tmem_release":
                ctx.wait(f"acc_full[{a}]", ra & 1, completion=ra)
                ctx.arrive(f"acc_empty[{a}]", 1, completion=ra)
                value = tmem_read(ctx, "acc", a)
            else:
                ctx.wait(f"acc_full[{a}]", ra & 1, completion=ra)
                value = tmem_read(ctx, "acc", a)
            assert value == ("C", t, k_blocks - 1), f"epilogue read {value!r} for tile {t}"
            if defect != "early_tmem_release":
                ctx.arrive(f"acc_empty[{a}]", 1, completion=ra)

    barriers = [
        *ModelBarrier.array("full", stages, 1),
        *ModelBarrier.array("empty", stages, 1),
        *ModelBarrier.array("acc_full", acc_stages, 1),
        *ModelBarrier.array("acc_empty", acc_stages, 1),
    ]
    agents = [_tma_producer(tiles, k_blocks, stages), *stream.agents(), Agent("epilogue", epilogue)]
    name = f"umma_gemm_acc{acc_stages}" + (f"_{defect}" if defect else "")
    return Protocol(name, agents, barriers=barriers, counters=stream.counters())


def umma_pair(
    tiles: int = 2,
    k_blocks: int = 1,
    stages: int = 1,
    acc_release_count: int = 2,
    multicast: bool = True,
    release_scope: Scope = Scope.CLUSTER,
) -> Protocol:
    """A ``cta_group::2`` pair: CTA 0 leads, CTA 1 follows, each loads half of every stage.

    Both halves complete their bytes on the leader's ``full[s]`` (armed with both halves' bytes); the leader's
    MMA reads both CTAs' halves, and its commit releases ``empty[s]`` in both CTAs (``empty1[s]`` is CTA 1's)
    and fills ``acc_full`` in both; both CTAs' epilogues read their half of the accumulator and release on the
    leader's ``acc_empty``, which therefore expects 2 arrivals. ``acc_release_count=1``: it is declared with 1
    (the pair's second epilogue forgotten); ``multicast=False``: the commit reaches only the leader's barrier;
    ``release_scope=Scope.CTA``: the follower releases on the leader's barrier with the default
    ``.release.cta`` (the stock kernel's form), which does not order its TMEM reads before the leader's next
    MMA. Before exiting each CTA waits for the arrivals other CTAs still owe its barriers (the pipelines' tails).
    """
    steps: list = []
    for t in range(tiles):
        a, ra = _round(t, 1)
        steps.append(Wait("acc_empty[0]", (ra & 1) ^ 1, completion=ra - 1))
        for k in range(k_blocks):
            s, r = _round(t * k_blocks + k, stages)
            reads = ((f"ab{s}", None, 0), (f"ab{s}", None, 1))
            mma = Mma(reads, "acc", a, accumulate=k > 0, label=("C", t, k), acc_ctas=(0, 1))
            targets = (f"empty[{s}]", f"empty1[{s}]") if multicast else (f"empty[{s}]",)
            steps += [Wait(f"full[{s}]", r & 1, completion=r), mma, Commit(targets, completion=r)]
        steps.append(Commit(("acc_full[0]", "acc_full1[0]"), completion=ra))
    last = tiles - 1
    steps.append(Wait("acc_empty[0]", last & 1, completion=last))  # the tail: both epilogues' last release
    stream = UmmaStream("mma", steps, pair=(0, 1))

    def loads(cta: int):
        empty = "empty" if cta == 0 else "empty1"

        def run(ctx: Ctx) -> None:
            total = tiles * k_blocks
            for i in range(total):
                s, r = _round(i, stages)
                ctx.wait(f"{empty}[{s}]", (r & 1) ^ 1, completion=r - 1)
                if cta == 0:
                    ctx.arrive(f"full[{s}]", 1, completion=r, tx=2 * A_BYTES)
                ctx.tma_load(f"ab{s}", ("AB", i, cta), f"full[{s}]", A_BYTES, completion=r)
            for i in range(max(total - stages, 0), total):  # tail: the leader's last commits have landed
                s, r = _round(i, stages)
                ctx.wait(f"{empty}[{s}]", r & 1, completion=r)

        return run

    def epilogue(cta: int):
        full = "acc_full" if cta == 0 else "acc_full1"

        def run(ctx: Ctx) -> None:
            for t in range(tiles):
                ctx.wait(f"{full}[0]", t & 1, completion=t)
                value = tmem_read(ctx, "acc", 0)
                assert value == ("C", t, k_blocks - 1), f"{ctx.name} read {value!r} for tile {t}"
                ctx.arrive("acc_empty[0]", 1, completion=t, scope=Scope.CTA if cta == 0 else release_scope)

        return run

    barriers = [
        *ModelBarrier.array("full", stages, 1),
        *ModelBarrier.array("empty", stages, 1),
        *ModelBarrier.array("empty1", stages, 1, cta=1),
        ModelBarrier("acc_full[0]", 1),
        ModelBarrier("acc_full1[0]", 1, cta=1),
        ModelBarrier("acc_empty[0]", acc_release_count),
    ]
    agents = [
        Agent("tma0", loads(0), cta=0),
        Agent("tma1", loads(1), cta=1),
        *stream.agents(lambda name: 1 if name.startswith(("empty1", "acc_full1")) else 0),
        Agent("epi0", epilogue(0), cta=0),
        Agent("epi1", epilogue(1), cta=1),
    ]
    name = "umma_pair" + ("" if acc_release_count == 2 else f"_acc_empty_counts_{acc_release_count}")
    name += "" if multicast else "_commit_not_multicast"
    name += "" if release_scope is Scope.CLUSTER else f"_{release_scope.name.lower()}_scoped_release"
    return Protocol(name, agents, barriers=barriers, counters=stream.counters())


def clc_fetch(responses: int = 3, stages: int = 2, fenced: bool = True, empty_expects: int = 2) -> Protocol:
    """Cluster launch control on a 2-CTA cluster: CTA 0's scheduler arms ``full[s]`` of both CTAs with the
    16 response bytes and issues ``clusterlaunchcontrol.try_cancel``, whose response lands in both CTAs'
    shared memory; each CTA's consumer reads it (``ld.shared``) and releases CTA 0's ``empty[s]`` (CTA 1's at
    cluster scope). The last response says "no work left". ``fenced=False``: the consumers release without
    ``fence.proxy.async.shared::cta``, so the next response (an async-proxy write) may overtake their read;
    ``empty_expects=1``: CTA 0's ``empty[s]`` counts only one consumer."""

    def schedule(ctx: Ctx) -> None:
        for i in range(responses):
            s, r = _round(i, stages)
            ctx.wait(f"empty[{s}]", (r & 1) ^ 1, completion=r - 1)
            ctx.arrive(f"full[{s}]", 1, completion=r, tx=RESPONSE_BYTES)
            ctx.arrive(f"full1[{s}]", 1, completion=r, tx=RESPONSE_BYTES, scope=Scope.CLUSTER)
            answer = ("tile", i) if i < responses - 1 else "none"
            also = ((f"smem['clc'].{s}@cta1", ctx._barrier(f"full1[{s}]"), f"full1[{s}]"),)
            ctx.emit(
                TmaLoad(
                    f"smem['clc'].{s}",
                    answer,
                    ctx._barrier(f"full[{s}]"),
                    f"full[{s}]",
                    RESPONSE_BYTES,
                    r,
                    ctx.name,
                    also,
                )
            )
        for i in range(max(responses - stages, 0), responses):  # tail: CTA 1's remote releases have landed
            s, r = _round(i, stages)
            ctx.wait(f"empty[{s}]", r & 1, completion=r)

    def consumer(cta: int):
        full = "full" if cta == 0 else "full1"

        def run(ctx: Ctx) -> None:
            for i in range(responses):
                s, r = _round(i, stages)
                ctx.wait(f"{full}[{s}]", r & 1, completion=r)
                answer = ctx.read_shared("clc", part=s)
                expected = ("tile", i) if i < responses - 1 else "none"
                assert answer == expected, f"{ctx.name} read response {answer!r} for request {i}"
                if fenced:
                    ctx.fence_proxy_async()
                ctx.arrive(f"empty[{s}]", 1, completion=r, scope=Scope.CTA if cta == 0 else Scope.CLUSTER)

        return run

    barriers = [
        *ModelBarrier.array("full", stages, 1),
        *ModelBarrier.array("full1", stages, 1, cta=1),
        *ModelBarrier.array("empty", stages, empty_expects),
    ]
    agents = [Agent("sched", schedule), Agent("use0", consumer(0), cta=0), Agent("use1", consumer(1), cta=1)]
    name = "clc_fetch" + ("" if fenced else "_no_fence") + ("" if empty_expects == 2 else "_one_consumer_counted")
    return Protocol(name, agents, barriers=barriers)


def gemm_reduce_scatter(tiles: int = 2, drain: str = "read", scope: Scope = Scope.GPU) -> Protocol:
    """NVIDIA's Blackwell GEMM + reduce-scatter hand-off (the LDMC mode), one producer rank and one owner rank.

    Per tile the producer's epilogue stages it in shared memory, fences, TMA-stores it to its own global
    memory, commits the bulk group, drains the store pipeline (``drain="read"``: ``wait_group.read 0``, the
    stock ``producer_tail``; ``"complete"``: ``wait_group 0``) and adds 1 to the owner's ready flag with release
    semantics at ``scope`` (``Scope.GPU`` in the stock kernel). The owner, on another GPU, acquires the flag
    and reads the tile (its ``multimem.ld_reduce``).
    """
    if drain not in ("read", "complete"):
        raise ValueError(f"gemm_reduce_scatter(drain={drain!r}) is invalid: allowed 'read' or 'complete'")

    def epilogue(ctx: Ctx) -> None:
        for t in range(tiles):
            ctx.write_shared("c", ("C", t))
            ctx.fence_proxy_async()
            ctx.tma_store("c", ("C", 0, t))
            ctx.bulk_commit_group()
            ctx.bulk_wait_group(0, read=drain == "read")
            ctx.signal("ready", scope=scope)

    def owner(ctx: Ctx) -> None:
        for t in range(tiles):
            ctx.wait_counter("ready", at_least=t + 1, scope=scope)
            value = ctx.read_global(("C", 0, t))
            assert value == ("C", t), f"owner read {value!r} for tile {t}"

    agents = [Agent("epilogue", epilogue, device=0), Agent("owner", owner, device=1)]
    name = f"gemm_rs_drain_{drain}_{scope.name.lower()}"
    return Protocol(name, agents, counters=[ModelCounter("ready")])


def gemm_reduce_scatter_store_notify(tiles: int = 2, lag: int = 1) -> Protocol:
    """The same hand-off in pipes' store→notify form: the epilogue commits each tile to a
    :class:`~pipes.cute.StoreNotifyPipeline` (``wait_group`` without ``.read``, ``lag`` stores left in flight),
    a communication warp waits for the tile and raises the owner's flag at system scope, the owner reads."""
    spec = PipelineSpec(
        "out",
        2,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        Role("comm", ArrivalUnit.ELECTED_PER_WARP),
        Completion.STORE_COMPLETE,
    )

    def epilogue(ctx: Ctx) -> None:
        out = ctx.producer("out")
        for t in range(tiles):
            slot = out.acquire()
            ctx.write("out", slot, ("C", t))
            ctx.fence_proxy_async()
            ctx.store("out", slot, ("C", 0, t))
            out.commit(t)
        out.tail()

    def comm(ctx: Ctx) -> None:
        inbox = ctx.consumer("out")
        for _ in range(tiles):
            inbox.wait()
            ctx.signal("ready", scope=Scope.SYSTEM)
            inbox.release()
        inbox.wait()  # end of stream
        inbox.release()

    def owner(ctx: Ctx) -> None:
        for t in range(tiles):
            ctx.wait_counter("ready", at_least=t + 1, scope=Scope.SYSTEM)
            value = ctx.read_global(("C", 0, t))
            assert value == ("C", t), f"owner read {value!r} for tile {t}"

    agents = [Agent("epilogue", epilogue), Agent("comm", comm), Agent("owner", owner, device=1)]
    model = ModelPipeline(spec, lag=lag)
    return Protocol(f"gemm_rs_store_notify_lag{lag}", agents, [model], counters=[ModelCounter("ready")])


GOOD = [
    Entry("umma_gemm", "TMA → tcgen05.mma → TMEM → epilogue, one accumulator stage", umma_gemm),
    Entry(
        "umma_gemm_acc2", "the same with two accumulator stages", lambda: umma_gemm(tiles=3, k_blocks=1, acc_stages=2)
    ),
    Entry("umma_pair", "a cta_group::2 pair: leader's commits multicast, both epilogues release the leader", umma_pair),
    Entry("clc_fetch", "cluster-launch-control responses read in both CTAs of a cluster", clc_fetch),
    Entry(
        "gemm_rs_store_notify",
        "GEMM + reduce-scatter hand-off through a store→notify pipeline, flag at system scope",
        gemm_reduce_scatter_store_notify,
    ),
    Entry(
        "gemm_rs_drain_complete_system",
        "GEMM + reduce-scatter: wait_group 0 (not .read), flag released at system scope",
        lambda: gemm_reduce_scatter(drain="complete", scope=Scope.SYSTEM),
    ),
]

BAD = [
    Entry(
        "umma_commit_before_mma",
        "the mainloop's tcgen05.commit is issued before the stage's MMA: the stage is released unread",
        lambda: umma_gemm(defect="commit_before_mma"),
        FindingKind.OVERWRITE_UNRELEASED,
        ("the TMA load issued by tma overwrites smem['a0']", "read of write #1 by mma_tc"),
        (FindingKind.READ_UNCOMMITTED,),
        twin="umma_gemm",
    ),
    Entry(
        "umma_no_commit",
        "the MMA warp never commits the mainloop stage: the TMA producer waits forever",
        lambda: umma_gemm(defect="no_commit"),
        FindingKind.DEADLOCK,
        ("tma: blocked in wait on empty[0]",),
        twin="umma_gemm",
    ),
    Entry(
        "umma_acc_commit_first",
        "the accumulator's commit is issued before the tile's MMAs: the epilogue reads an unfinished tile",
        lambda: umma_gemm(defect="acc_commit_first"),
        FindingKind.READ_UNCOMMITTED,
        ("tmem['acc'][0]", "epilogue"),
        twin="umma_gemm",
    ),
    Entry(
        "umma_early_tmem_read",
        "the epilogue reads the accumulator before waiting for its barrier",
        lambda: umma_gemm(defect="early_tmem_read"),
        FindingKind.READ_UNCOMMITTED,
        ("tmem['acc'][0]", "epilogue"),
        twin="umma_gemm",
    ),
    Entry(
        "umma_early_tmem_release",
        "the epilogue releases the accumulator stage before reading it: the next tile's MMA overwrites it",
        lambda: umma_gemm(defect="early_tmem_release"),
        FindingKind.OVERWRITE_UNRELEASED,
        ("mma_tc overwrites tmem['acc'][0]", "read of write #2 by epilogue"),
        (FindingKind.READ_UNCOMMITTED,),
        twin="umma_gemm",
    ),
    Entry(
        "umma_pair_acc_empty_counts_one",
        "the leader's accumulator barrier counts one epilogue: the follower's is forgotten",
        lambda: umma_pair(acc_release_count=1),
        FindingKind.OVER_ARRIVAL,
        ("acc_empty[0]", "expected 1, got 2", "epi1"),
        (FindingKind.OVERWRITE_UNRELEASED, FindingKind.READ_UNCOMMITTED, FindingKind.PHASE_ALIASING),
        twin="umma_pair",
    ),
    Entry(
        "umma_pair_commit_not_multicast",
        "the leader's mainloop commit reaches only its own barrier: the follower's loads wait forever",
        lambda: umma_pair(multicast=False),
        FindingKind.DEADLOCK,
        ("tma1: blocked in wait on empty1[0]",),
        twin="umma_pair",
    ),
    Entry(
        "umma_pair_cta_scoped_release",
        "the follower releases the leader's accumulator stage with the default .release.cta (the stock form)",
        lambda: umma_pair(release_scope=Scope.CTA),
        FindingKind.OVERWRITE_UNRELEASED,
        ("mma_tc1 overwrites tmem['acc'][0]@cta1", "read of write #1 by epi1"),
        twin="umma_pair",
    ),
    Entry(
        "clc_fetch_no_fence",
        "CLC consumers release the response without fence.proxy.async: the next response overtakes the read",
        lambda: clc_fetch(fenced=False),
        FindingKind.OVERWRITE_UNRELEASED,
        ("smem['clc']", "fence.proxy.async"),
        twin="clc_fetch",
    ),
    Entry(
        "clc_fetch_one_consumer_counted",
        "CTA 0's empty barrier counts one consumer, but both CTAs' consumers release it",
        lambda: clc_fetch(empty_expects=1),
        FindingKind.OVER_ARRIVAL,
        ("empty[0]", "expected 1, got 2"),
        (FindingKind.OVERWRITE_UNRELEASED, FindingKind.READ_UNCOMMITTED, FindingKind.PHASE_ALIASING),
        twin="clc_fetch",
    ),
    Entry(
        "gemm_rs_drain_read_gpu",
        "NVIDIA's GEMM + reduce-scatter: wait_group.read 0, then the owner's flag (.release.gpu)",
        lambda: gemm_reduce_scatter(drain="read", scope=Scope.GPU),
        FindingKind.READ_UNCOMMITTED,
        ("owner reads global[('C', 0, 0)]", "GPU scope (.gpu) and does not reach owner", "SYSTEM scope"),
        twin="gemm_rs_drain_complete_system",
    ),
    Entry(
        "gemm_rs_drain_read_system",
        "the same at system scope: the .read drain alone still publishes a tile whose global write may be in flight",
        lambda: gemm_reduce_scatter(drain="read", scope=Scope.SYSTEM),
        FindingKind.READ_UNCOMMITTED,
        ("owner reads global[('C', 0, 0)], which nothing has written yet", "no release → acquire chain"),
        twin="gemm_rs_drain_complete_system",
    ),
    Entry(
        "gemm_rs_drain_complete_gpu",
        "the complete drain with the stock .gpu flag: the release does not reach a reader on another GPU",
        lambda: gemm_reduce_scatter(drain="complete", scope=Scope.GPU),
        FindingKind.READ_UNCOMMITTED,
        ("GPU scope (.gpu) and does not reach owner", "on device 1", "SYSTEM scope (.sys)"),
        twin="gemm_rs_drain_complete_system",
    ),
]
