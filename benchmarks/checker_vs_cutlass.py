"""pipes.check head to head with CUTLASS's Task Scheduling checker (``cutlass.experimental.task_scheduling``).

Every case is a planted defect, written once for each checker that can express it:

* the behaviours the Task Scheduling (TS) checker documents (its ``exhaustive_checker`` module docstring:
  credit deadlocks, aliasing races between resources that share shared memory, a PDL launch before any
  PDL wait), each also written as a ``pipes.check`` protocol;
* ``pipes.check.catalogue.BAD``, each written as a TS schedule where TS's model has the concepts it needs,
  and otherwise listed with the reason it cannot be (phase parity, TMA-store completion, proxy fences,
  scopes, multicast, counters, ...).

TS is run as a kernel author meets it: constructing ``TaskManager`` runs its structural checks (bracketing,
credit balance, arrival counts, PDL wiring, a credit simulation) and then the exhaustive interleaving BFS
(``check_all_interleavings``); the first error it raises is what it found. ``pipes.check`` is run with
``check(protocol)``. Times are the median of ``--repeat`` runs in this process, on one CPU core; no GPU.

    python benchmarks/checker_vs_cutlass.py [--repeat 3] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipes import ArrivalUnit, PipelineSpec, Role
from pipes.check import Agent, Ctx, ModelPipeline, Protocol, check
from pipes.check.catalogue import BAD, ENTRIES

ITEMS = 6  # as the catalogue's ARRIVAL pipeline (async_pipeline)


# ---------------------------------------------------------------------------------------------------------
# CUTLASS Task Scheduling side
# ---------------------------------------------------------------------------------------------------------


def cutlass_available() -> str | None:
    """None when ``cutlass.experimental.task_scheduling`` imports; otherwise why not."""
    try:
        import cutlass.experimental.task_scheduling  # noqa: F401
        from cutlass.experimental.task_scheduling.task_manager import TaskManager  # noqa: F401
    except Exception as error:  # ImportError, or the DSL failing to load its libraries
        return f"cutlass.experimental.task_scheduling cannot be imported: {type(error).__name__}: {error}"
    return None


def _ts():
    """The TS names the builders use (imported late: the module is optional)."""
    from cutlass import pipeline
    from cutlass.experimental.task_scheduling import domain_loop, schedule
    from cutlass.experimental.task_scheduling.memory import SmemAllocation
    from cutlass.experimental.task_scheduling.resources import (
        MemoryResource,
        PdlLaunchBarrier,
        PdlWaitBarrier,
        PipelineConfig,
    )
    from cutlass.experimental.task_scheduling.task import Task

    class Res(MemoryResource):
        """A resource with no shared-memory ranges (global memory, or a pipeline whose storage is not aliased)."""

    class Buf(MemoryResource):
        """A resource with one shared-memory allocation at a fixed offset (what the allocator would place)."""

        def get_smem_requirements(self):
            return [self.alloc]

    def buf(name: str, offset: int, size: int, cfg=None):
        resource = Buf(name=name, pipeline_config=cfg)
        resource.alloc = SmemAllocation(name, size_bytes=size)
        resource.alloc.offset = offset
        return resource

    def aa(stages: int, producer_threads: int = 32, consumer_threads: int = 32):
        """An AsyncAsync (mbarrier arrival) pipeline config: one CTA, thread groups of the given sizes."""
        group = pipeline.CooperativeGroup
        return PipelineConfig.create_async_async_pipeline_cfg(
            stages,
            group(pipeline.Agent.Thread, producer_threads),
            group(pipeline.Agent.Thread, consumer_threads),
            (1, 1, 1, 1),
        )

    return dict(
        Task=Task,
        schedule=schedule,
        domain_loop=domain_loop,
        Res=Res,
        buf=buf,
        aa=aa,
        PdlWaitBarrier=PdlWaitBarrier,
        PdlLaunchBarrier=PdlLaunchBarrier,
    )


def ts_stream(bug: str = "", consumer_warps: tuple[int, ...] = (1,), consumer_threads: int = 32):
    """The catalogue's ARRIVAL pipeline as TS tasks: ``load`` writes ITEMS slots of a 2-stage ``data``
    pipeline, each consumer task waits, reads and releases them. ``bug`` as the catalogue's
    ``async_pipeline``: "no_release", "release_before_read", "read_after_release", "keep_last"."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    data = ts["Res"](name="data", pipeline_config=ts["aa"](2, 32, consumer_threads))
    gmem = ts["Res"](name="gmem")
    waits = ITEMS - 1 if bug == "keep_last" else ITEMS

    @schedule
    def load(g, s):
        with domain_loop(0, ITEMS, 1):
            g.consumer_work()
            s.acquire()
            s.producer_work()
            s.commit()

    @schedule
    def math(s):
        with domain_loop(0, waits, 1):
            s.wait()
            if bug == "release_before_read":
                s.release()
                s.consumer_work()
            elif bug == "no_release":
                s.consumer_work()
            elif bug == "read_after_release":
                s.consumer_work()
                s.release()
                s.consumer_work()
            else:
                s.consumer_work()
                s.release()
        if bug == "keep_last":  # the last slot: waited for and read, never released
            s.wait()
            s.consumer_work()

    tasks = [Task([gmem], [data], 0, 1, schedule=load(gmem, data), name="load")]
    warp = 1
    for i, warps in enumerate(consumer_warps):
        name = "math" if len(consumer_warps) == 1 else f"math{i}"
        tasks.append(Task([data], [], warp, warps, schedule=math(data), name=name))
        warp += warps
    return tasks, {data: [gmem]}


def ts_silent_reader():
    """A TMA-style mainloop (tma → mma) plus an ``amax`` task that reads every slot without waiting or
    releasing (the catalogue's ``silent_reader_unsynchronised``)."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    mainloop = ts["Res"](name="mainloop", pipeline_config=ts["aa"](2))
    gmem = ts["Res"](name="gmem")

    @schedule
    def tma(g, s):
        with domain_loop(0, 4, 1):
            g.consumer_work()
            s.acquire()
            s.producer_work()
            s.commit()

    @schedule
    def mma(s):
        with domain_loop(0, 4, 1):
            s.wait()
            s.consumer_work()
            s.release()

    @schedule
    def amax(s):
        with domain_loop(0, 4, 1):
            s.consumer_work()

    tasks = [
        Task([gmem], [mainloop], 0, 1, schedule=tma(gmem, mainloop), name="tma"),
        Task([mainloop], [], 1, 1, schedule=mma(mainloop), name="mma"),
        Task([mainloop], [], 2, 1, schedule=amax(mainloop), name="amax"),
    ]
    return tasks, {mainloop: [gmem]}


def ts_pdl_reads_early(bug: bool = True):
    """The dependent kernel produces ``act`` from the previous grid's output; ``bug``: before its
    ``griddepcontrol.wait`` (the catalogue's ``dependent_launch_reads_early``)."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    act = ts["Res"](name="act", pipeline_config=ts["aa"](2))
    gmem = ts["Res"](name="gmem")
    pdl_wait = ts["PdlWaitBarrier"](name="pdl_wait")

    @schedule
    def dependent(g, s, w):
        if not bug:
            w.wait_griddep()
        with domain_loop(0, 2, 1):
            g.consumer_work()
            s.acquire()
            s.producer_work()
            s.commit()
        if bug:
            w.wait_griddep()

    @schedule
    def math(s):
        with domain_loop(0, 2, 1):
            s.wait()
            s.consumer_work()
            s.release()

    tasks = [
        Task([gmem, pdl_wait], [act], 0, 1, schedule=dependent(gmem, act, pdl_wait), name="dependent"),
        Task([act], [], 1, 1, schedule=math(act), name="math"),
    ]
    return tasks, {act: [gmem, pdl_wait]}


def ts_pdl_launch_before_wait(bug: bool = True):
    """TS's PDL order rule: ``launch_griddep`` (griddepcontrol.launch_dependents) before any
    ``wait_griddep`` (griddepcontrol.wait) has executed."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    act = ts["Res"](name="act", pipeline_config=ts["aa"](2))
    gmem = ts["Res"](name="gmem")
    pdl_wait = ts["PdlWaitBarrier"](name="pdl_wait")
    pdl_launch = ts["PdlLaunchBarrier"](name="pdl_launch")

    @schedule
    def producer(g, s, w, launch):
        if bug:
            launch.launch_griddep()
        w.wait_griddep()
        if not bug:
            launch.launch_griddep()
        with domain_loop(0, 2, 1):
            g.consumer_work()
            s.acquire()
            s.producer_work()
            s.commit()

    @schedule
    def math(s):
        with domain_loop(0, 2, 1):
            s.wait()
            s.consumer_work()
            s.release()

    tasks = [
        Task(
            [gmem, pdl_wait],
            [act, pdl_launch],
            0,
            1,
            schedule=producer(gmem, act, pdl_wait, pdl_launch),
            name="producer",
        ),
        Task([act], [], 1, 1, schedule=math(act), name="math"),
    ]
    return tasks, {act: [gmem, pdl_wait], pdl_launch: []}


def ts_cyclic(bug: bool = True):
    """Two 1-stage pipelines in a ring: ``x`` fills ``a`` and drains ``b``, ``y`` drains ``a`` and fills
    ``b``. ``bug``: ``x`` waits for ``b`` before it fills ``a`` — each waits for the other's commit."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    a = ts["Res"](name="a", pipeline_config=ts["aa"](1))
    b = ts["Res"](name="b", pipeline_config=ts["aa"](1))
    gmem = ts["Res"](name="gmem")

    @schedule
    def x(g, a, b):
        with domain_loop(0, 2, 1):
            if bug:
                b.wait()
                b.consumer_work()
                b.release()
            g.consumer_work()
            a.acquire()
            a.producer_work()
            a.commit()
            if not bug:
                b.wait()
                b.consumer_work()
                b.release()

    @schedule
    def y(a, b):
        with domain_loop(0, 2, 1):
            a.wait()
            a.consumer_work()
            a.release()
            b.acquire()
            b.producer_work()
            b.commit()

    tasks = [
        Task([gmem, b], [a], 0, 1, schedule=x(gmem, a, b), name="x"),
        Task([a], [b], 1, 1, schedule=y(a, b), name="y"),
    ]
    return tasks, {a: [gmem], b: [a]}


def ts_alias(bug: bool = True):
    """TS's aliasing example (``SmemAllocator``: "epilogue scratch reuses A+B SMEM"): a 1-stage mainloop
    ``smem_ab`` (load → mma), an accumulator pipeline ``acc`` (mma → epilogue), and an epilogue scratch
    buffer at the same shared-memory offset as ``smem_ab``. ``bug``: the epilogue writes its scratch
    before waiting for ``acc``, while the mainloop may still be loading or reading A/B."""
    ts = _ts()
    schedule, domain_loop, Task = ts["schedule"], ts["domain_loop"], ts["Task"]
    smem_ab = ts["buf"]("smem_ab", 0, 4096, ts["aa"](1))
    scratch = ts["buf"]("epi_scratch", 0, 2048)
    acc = ts["Res"](name="acc", pipeline_config=ts["aa"](1))
    gmem = ts["Res"](name="gmem")

    @schedule
    def load(g, ab):
        with domain_loop(0, 2, 1):
            g.consumer_work()
            ab.acquire()
            ab.producer_work()
            ab.commit()

    @schedule
    def mma(ab, acc):
        with domain_loop(0, 1, 1):
            acc.acquire()
            for _ in range(2):
                ab.wait()
                ab.consumer_work()
                ab.release()
            acc.producer_work()
            acc.commit()

    @schedule
    def epilogue(acc, sc):
        with domain_loop(0, 1, 1):
            if not bug:
                acc.wait()
            sc.producer_work()
            if bug:
                acc.wait()
            acc.consumer_work()
            acc.release()

    tasks = [
        Task([gmem], [smem_ab], 0, 1, schedule=load(gmem, smem_ab), name="load"),
        Task([smem_ab], [acc], 1, 1, schedule=mma(smem_ab, acc), name="mma"),
        Task([acc], [scratch], 2, 1, schedule=epilogue(acc, scratch), name="epilogue"),
    ]
    return tasks, {smem_ab: [gmem], acc: [smem_ab], scratch: [acc]}


def _cutlass_label(message: str) -> str:
    """What a TaskManager error says, in a few words, and which of its passes said it."""
    if message.startswith("Exhaustive checker found"):
        what = message.split(" after ", 1)[0].split("found ", 1)[1]
        kind = "deadlock" if "deadlock" in what else "race" if "race" in what else "PDL order"
        return f"{kind} [BFS]"
    if message.startswith("Schedule is blocked"):
        return "deadlock [credit sim]"
    for needle, label in (
        ("ConsumerRelease after ConsumerWork", "bracketing"),
        ("ConsumerWork group before ConsumerWait", "bracketing"),
        ("no ConsumerWait/ConsumerRelease", "bracketing"),
        ("not matched by", "unmatched credit"),
        ("consumer_group.size", "arrival count"),
        ("PDL-dependent resource", "PDL wiring"),
    ):
        if needle in message:
            return f"{label} [structural]"
    return f"{message.splitlines()[0][:40]} [structural]"


@dataclass
class Outcome:
    found: bool
    label: str  # the finding kind (pipes) or what TS said and which pass (CUTLASS)
    seconds: float
    message: str = ""


def run_cutlass(build: Callable[[], tuple[list, dict]]) -> Outcome:
    """Construct a ``TaskManager`` (structural checks, then the exhaustive BFS) and say what it raised."""
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    tasks, graph = build()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TaskManager(tasks, graph, verbose=False)
    except (ValueError, RuntimeError) as error:
        return Outcome(True, _cutlass_label(str(error)), time.perf_counter() - start, str(error))
    return Outcome(False, "", time.perf_counter() - start)


def run_pipes(build: Callable[[], Protocol]) -> Outcome:
    protocol = build()
    start = time.perf_counter()
    report = check(protocol)
    seconds = time.perf_counter() - start
    if not report.findings:
        return Outcome(False, "", seconds)
    kinds = list(dict.fromkeys(f.kind.name for f in report.findings))  # distinct, in the order reported
    label = ", ".join(kinds[:2]) + (", ..." if len(kinds) > 2 else "")
    return Outcome(True, label, seconds, report.findings[0].message)


# ---------------------------------------------------------------------------------------------------------
# pipes.check side of TS's documented cases
# ---------------------------------------------------------------------------------------------------------


def pipes_cyclic(bug: bool = True) -> Protocol:
    """``ts_cyclic`` as a protocol: pipelines ``a`` (x → y) and ``b`` (y → x), one stage each."""
    specs = [
        PipelineSpec("a", 1, Role("x", ArrivalUnit.WARP), Role("y", ArrivalUnit.WARP)),
        PipelineSpec("b", 1, Role("y", ArrivalUnit.WARP), Role("x", ArrivalUnit.WARP)),
    ]

    def drain(ctx: Ctx, inbox, item: int) -> None:
        slot = inbox.wait()
        assert ctx.read("b", slot) == item
        inbox.release()

    def x(ctx: Ctx) -> None:
        out, inbox = ctx.producer("a"), ctx.consumer("b")
        for item in range(2):
            if bug:
                drain(ctx, inbox, item)
            slot = out.acquire()
            ctx.write("a", slot, item)
            out.commit()
            if not bug:
                drain(ctx, inbox, item)
        out.tail()

    def y(ctx: Ctx) -> None:
        inbox, out = ctx.consumer("a"), ctx.producer("b")
        for _ in range(2):
            slot = inbox.wait()
            item = ctx.read("a", slot)
            inbox.release()
            slot = out.acquire()
            ctx.write("b", slot, item)
            out.commit()
        out.tail()

    return Protocol(
        "cyclic" + ("_bug" if bug else ""), [Agent("x", x), Agent("y", y)], [ModelPipeline(s) for s in specs]
    )


def pipes_alias(bug: bool = True) -> Protocol:
    """``ts_alias`` as a protocol: the epilogue's scratch *is* slot 0 of the 1-stage ``ab`` pipeline (the
    aliasing written as a write to the same storage)."""
    specs = [
        PipelineSpec("ab", 1, Role("load", ArrivalUnit.WARP), Role("mma", ArrivalUnit.WARP)),
        PipelineSpec("acc", 1, Role("mma", ArrivalUnit.WARP), Role("epilogue", ArrivalUnit.WARP)),
    ]

    def load(ctx: Ctx) -> None:
        ab = ctx.producer("ab")
        for k in range(2):
            slot = ab.acquire()
            ctx.write("ab", slot, ("AB", k))
            ab.commit()
        ab.tail()

    def mma(ctx: Ctx) -> None:
        ab, acc = ctx.consumer("ab"), ctx.producer("acc")
        out = acc.acquire()
        for k in range(2):
            slot = ab.wait()
            assert ctx.read("ab", slot) == ("AB", k)
            ab.release()
        ctx.write("acc", out, "C")
        acc.commit()
        acc.tail()

    def epilogue(ctx: Ctx) -> None:
        acc = ctx.consumer("acc")
        if bug:
            ctx.write("ab", 0, "scratch")  # the scratch aliases smem_ab
        slot = acc.wait()
        if not bug:
            ctx.write("ab", 0, "scratch")
        assert ctx.read("acc", slot) == "C"
        acc.release()

    agents = [Agent("load", load), Agent("mma", mma), Agent("epilogue", epilogue)]
    return Protocol("alias" + ("_bug" if bug else ""), agents, [ModelPipeline(s) for s in specs])


def pipes_pdl_launch_before_wait(bug: bool = True) -> Protocol:
    """``ts_pdl_launch_before_wait`` as three launches: ``kernel`` (grid 1) reads what ``previous``
    (grid 0) wrote and writes what ``next_kernel`` (grid 2) reads. ``bug``: ``kernel`` triggers its
    dependents (``griddepcontrol.launch_dependents``) before its own ``griddepcontrol.wait``."""

    def previous(ctx: Ctx) -> None:
        ctx.write_global("x", 1)

    def kernel(ctx: Ctx) -> None:
        if bug:
            ctx.launch_dependents()
        ctx.grid_dependency_wait()
        if not bug:
            ctx.launch_dependents()
        ctx.write_global("y", ctx.read_global("x") + 1)

    def next_kernel(ctx: Ctx) -> None:
        ctx.grid_dependency_wait()
        assert ctx.read_global("y") == 2

    agents = [Agent("previous", previous), Agent("kernel", kernel, grid=1), Agent("next_kernel", next_kernel, grid=2)]
    return Protocol("pdl_launch" + ("_early" if bug else ""), agents)


# ---------------------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    defect: str
    origin: str  # "TS docs" or "pipes catalogue"
    cutlass: Callable[[], tuple[list, dict]] | None  # None: TS cannot express it
    pipes: Callable[[], Protocol] | None
    note: str
    cutlass_twin: Callable[[], tuple[list, dict]] | None = None  # the corrected schedule, must pass
    pipes_twin: Callable[[], Protocol] | None = None
    phase_or_store: bool = False  # a phase-parity or TMA-store-completion defect (outside TS's model)


TS_CASES = [
    Case(
        "ts_cyclic_deadlock",
        "two tasks each wait for the other's commit first",
        "TS docs",
        lambda: ts_cyclic(True),
        lambda: pipes_cyclic(True),
        "credit deadlock",
        lambda: ts_cyclic(False),
        lambda: pipes_cyclic(False),
    ),
    Case(
        "ts_alias_race",
        "epilogue writes scratch aliasing smem_ab before the mainloop is done",
        "TS docs",
        lambda: ts_alias(True),
        lambda: pipes_alias(True),
        "TS: two resources at one SMEM offset; pipes: a write to the same slot",
        lambda: ts_alias(False),
        lambda: pipes_alias(False),
    ),
    Case(
        "ts_pdl_launch_before_wait",
        "launch_dependents before this kernel's griddepcontrol.wait",
        "TS docs",
        lambda: ts_pdl_launch_before_wait(True),
        lambda: pipes_pdl_launch_before_wait(True),
        "a TS policy, no hazard: the next grid's wait still waits for this grid",
        lambda: ts_pdl_launch_before_wait(False),
        lambda: pipes_pdl_launch_before_wait(False),
    ),
]

#: Catalogue entries TS can express: its schedule builder and corrected twin.
TS_OF_CATALOGUE: dict[str, tuple[Callable, Callable, str]] = {
    "missing_release": (lambda: ts_stream("no_release"), ts_stream, ""),
    "release_before_read": (lambda: ts_stream("release_before_read"), ts_stream, "BFS alone: silent"),
    "read_after_release": (lambda: ts_stream("read_after_release"), ts_stream, "BFS alone: silent"),
    "keeps_last_slot": (lambda: ts_stream("keep_last"), ts_stream, "BFS alone: silent"),
    "two_warpgroups_declared_as_one": (
        lambda: ts_stream(consumer_warps=(4, 4), consumer_threads=128),
        lambda: ts_stream(consumer_warps=(4, 4), consumer_threads=256),
        "TS: group size vs Σ task warps",
    ),
    "two_warpgroups_declared_two_running_one": (
        lambda: ts_stream(consumer_warps=(4,), consumer_threads=256),
        lambda: ts_stream(consumer_warps=(4,), consumer_threads=128),
        "TS: group size vs Σ task warps",
    ),
    "silent_reader_unsynchronised": (
        ts_silent_reader,
        lambda: ts_stream(),
        "TS: every reader of a pipelined resource must wait/release",
    ),
    "dependent_launch_reads_early": (
        lambda: ts_pdl_reads_early(True),
        lambda: ts_pdl_reads_early(False),
        "TS: PDL-dependent resource produced before wait_griddep",
    ),
    # Blackwell: the MMA warp (or the epilogue on a TMEM stage) written as the stream's consumer task.
    "umma_no_commit": (lambda: ts_stream("no_release"), ts_stream, "the MMA warp as a consumer that never releases"),
    "umma_commit_before_mma": (
        lambda: ts_stream("release_before_read"),
        ts_stream,
        "the early commit as a release before the consumer's work",
    ),
    "umma_early_tmem_release": (
        lambda: ts_stream("release_before_read"),
        ts_stream,
        "the epilogue's early release as a release before the consumer's work",
    ),
}

#: Why TS cannot express the other catalogue entries (its model: per-resource credits, task schedules of
#: acquire/work/commit/wait/release, SMEM/TMEM aliasing ranges, PDL wait/launch; one CTA's schedule).
CANNOT = {
    "producer_phase_0": "phase parity (TS counts credits; a pipeline state's start phase is not modelled)",
    "notify_on_smem_read": "TMA-store completion (wait_group.read vs the global write) is not modelled",
    "order_phase_never_flips": "phase parity of an ordered barrier is not modelled",
    "tx_bytes_short": "the bytes a TMA load delivers happen inside producer_work; TS checks only declared bytes",
    "tma_no_proxy_fence": "proxy fences (generic vs async proxy) are not modelled",
    "store_no_proxy_fence": "proxy fences (generic vs async proxy) are not modelled",
    "ascend_set_twice": "Ascend set_flag/wait_flag: TS schedules CUDA pipelines only",
    "rendezvous_parity_never_flips": "phase parity of a raw mbarrier is not modelled",
    "cross_core_binary_reading": "counter capacity: TS credits are unbounded counts",
    "cross_core_credits_left": "Ascend cross-core counters; no at-exit credit warning",
    "two_operand_loads_short_expect": "transaction bytes per operand are not modelled",
    "peeking_mainloop_dangling": "a non-blocking poll (try_wait) and its cost are not modelled; a wait is a wait",
    "hand_written_tma_store_not_waited": "TMA-store completion at exit is not modelled",
    "multicast_mainloop_no_tail": "multicast / a peer CTA's exit: TS checks one CTA's schedule",
    "dsmem_relay_cta_scope": "release scopes (.cta/.cluster) are not modelled",
    "dsmem_relay_cta_wait": "acquire scopes of an mbarrier wait (.cta/.cluster) are not modelled",
    "epilogue_comm_host_cta_release": "release scopes and host readers are not modelled",
    "epilogue_comm_host_gpu_release": "release scopes and host readers are not modelled",
    "epilogue_comm_peer_gpu_release": "release scopes and peer devices are not modelled",
    "epilogue_comm_notify_on_read": "TMA-store completion (wait_group.read vs the global write) is not modelled",
    "epilogue_comm_no_fence": "memory order (a relaxed flag store) is not modelled",
    "copy_engine_comm_no_barrier": "the copy engine and memory order are not modelled",
    "copy_engine_comm_relaxed_count": "memory order (a relaxed counter add) is not modelled",
    "comm_launches_no_credit": "successive launches and a host reader are not modelled",
    "comm_launches_epoch_bit": "flag values across launches (0/1 parity) are not modelled",
    "previous_kernel_values_racy": "races are tracked only between aliased SMEM/TMEM ranges, not global memory",
    "multicast_peers_undeclared": "multicast arrivals from a peer CTA are not modelled in the schedule",
    "split_k_quorum_unreachable": "counters with a quorum are not modelled",
    "umma_acc_commit_first": "asynchronous MMA completion (a tcgen05.commit arrives when the MMAs issued before it "
    "finish) is not modelled",
    "umma_early_tmem_read": "a read before its wait: TS schedules bracket every consumer access with wait/release",
    "umma_pair_acc_empty_counts_one": "the 2-CTA pair (a peer CTA's remote release): TS checks one CTA's schedule",
    "umma_pair_commit_not_multicast": "the 2-CTA pair (a commit multicast to both CTAs): TS checks one CTA's schedule",
    "umma_pair_cta_scoped_release": "release scopes (.cta/.cluster) are not modelled",
    "clc_fetch_no_fence": "proxy fences (generic vs async proxy) are not modelled",
    "clc_fetch_one_consumer_counted": "arrivals from every CTA of a cluster on CTA 0's barrier: TS checks one CTA",
    "gemm_rs_drain_read_gpu": "TMA-store completion and release scopes across GPUs are not modelled",
    "gemm_rs_drain_read_system": "TMA-store completion (wait_group.read vs the global write) is not modelled",
    "gemm_rs_drain_complete_gpu": "release scopes and peer devices are not modelled",
    "all_gather_tma_before_acquire": "flags in global memory raised by another GPU's pushes are not modelled",
    "all_gather_no_proxy_fence": "proxy fences (generic vs async proxy) are not modelled",
    "all_gather_no_credit": "successive launches and a credit per launch across GPUs are not modelled",
    "all_gather_sm_gpu_release": "release scopes and peer devices are not modelled",
    "all_gather_credit_before_kernel": "a flag word stored by two agents (a credit given back early) is not modelled",
}

#: Catalogue defects of phase parity or TMA-store completion (the two things the brief singles out).
PHASE_OR_STORE = {
    "producer_phase_0",
    "order_phase_never_flips",
    "rendezvous_parity_never_flips",
    "comm_launches_epoch_bit",
    "notify_on_smem_read",
    "hand_written_tma_store_not_waited",
    "epilogue_comm_notify_on_read",
}


#: The corrected protocol for catalogue entries that name no twin of their own.
DEFAULT_TWIN = {"missing_release": "async_s2", "release_before_read": "async_s2", "keeps_last_slot": "async_s2"}


def catalogue_cases() -> list[Case]:
    cases = []
    for entry in BAD:
        twin_name = entry.twin or DEFAULT_TWIN.get(entry.name)
        twin = ENTRIES[twin_name].build if twin_name else None
        if entry.name in TS_OF_CATALOGUE:
            build, ts_twin, note = TS_OF_CATALOGUE[entry.name]
            cases.append(Case(entry.name, entry.summary, "pipes catalogue", build, entry.build, note, ts_twin, twin))
        else:
            note = CANNOT.get(entry.name, "not written for TS")
            cases.append(
                Case(
                    entry.name,
                    entry.summary,
                    "pipes catalogue",
                    None,
                    entry.build,
                    "TS cannot: " + note,
                    None,
                    twin,
                    entry.name in PHASE_OR_STORE,
                )
            )
    return cases


def all_cases() -> list[Case]:
    return [*TS_CASES, *catalogue_cases()]


# ---------------------------------------------------------------------------------------------------------
# Running and printing
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    case: Case
    cutlass: Outcome | None  # None: not expressible in TS (or TS not importable)
    pipes: Outcome | None


def _median(run: Callable[[Callable], Outcome], build: Callable, repeat: int) -> Outcome:
    outcomes = [run(build) for _ in range(max(1, repeat))]
    first = outcomes[0]
    first.seconds = statistics.median(o.seconds for o in outcomes)
    return first


def compare(cases: list[Case], repeat: int = 3, with_cutlass: bool = True) -> list[Row]:
    rows = []
    for case in cases:
        ts = _median(run_cutlass, case.cutlass, repeat) if with_cutlass and case.cutlass else None
        ours = _median(run_pipes, case.pipes, repeat) if case.pipes else None
        rows.append(Row(case, ts, ours))
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _cell(outcome: Outcome | None, expressible: bool) -> str:
    if outcome is None:
        return "cannot express" if not expressible else "not run"
    if not outcome.found:
        return f"no ({_ms(outcome.seconds)})"
    return f"yes: {outcome.label} ({_ms(outcome.seconds)})"


HEADER = (
    "case",
    "defect planted",
    "CUTLASS task_scheduling finds it? (time)",
    "pipes.check finds it? (time, kind)",
    "note",
)


def table(rows: list[Row], markdown: bool) -> str:
    lines = [
        (
            r.case.name,
            r.case.defect,
            _cell(r.cutlass, r.case.cutlass is not None),
            _cell(r.pipes, r.case.pipes is not None),
            r.case.note,
        )
        for r in rows
    ]
    if markdown:
        out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(x[i]) for x in (HEADER, *lines)) for i in range(len(HEADER))]
    widths[1] = min(widths[1], 48)
    out = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    out += ["  ".join(c[:w].ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def summary(rows: list[Row]) -> str:
    shared = [r for r in rows if r.cutlass is not None and r.pipes is not None]
    ts_found = [r for r in shared if r.cutlass.found]
    both = [r for r in ts_found if r.pipes.found]
    pipes_only = [r for r in rows if r.cutlass is None and r.pipes is not None and r.pipes.found]
    total_ts = sum(r.cutlass.seconds for r in rows if r.cutlass)
    total_pipes = sum(r.pipes.seconds for r in rows if r.pipes)
    return (
        f"{len(rows)} cases; {len(shared)} written for both checkers: TS finds {len(ts_found)}, "
        f"pipes.check finds {len(both)} of those; {len(pipes_only)} more found by pipes.check alone "
        f"(outside TS's model). Checking time: TS {_ms(total_ts)}, pipes.check {_ms(total_pipes)} (medians, summed)."
    )


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case and checker; the median is shown")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    why_not = cutlass_available()
    if why_not:
        print(f"{why_not}: showing pipes.check alone", file=sys.stderr)
    rows = compare(all_cases(), args.repeat, with_cutlass=why_not is None)
    print(table(rows, args.markdown))
    print()
    print(summary(rows))
    print(f"CPU: {cpu_name()}; Python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
