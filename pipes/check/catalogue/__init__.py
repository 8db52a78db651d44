"""A catalogue of protocols: correct ones, and broken variants the checker must catch.

Every entry builds a :class:`~pipes.check.Protocol`. Correct entries must check clean and exhaustively;
each bad entry names the finding it must produce and words its message must contain, and most have a
corrected twin (``Entry.twin``) that checks clean. The tests run them all; the benchmark runs
:func:`handoff` at its full size.

* :mod:`.pipelines` — the model pipelines (ARRIVAL, TMA load, store→notify, FLAG) and ordered barriers
* :mod:`.raw` — hand-written synchronisation: raw mbarriers, counters (Ascend cross-core flags, GPU flags)
* :mod:`.tma` — several TMA loads completing one stage; hand-written mbarrier + TMA code
* :mod:`.cluster` — a CTA per agent: multicast loads, remote arrives and their scope
* :mod:`.comm` — shipping tiles: the ``epilogue_comm`` chain (ready flags released at the scope the receiver
  needs, fenced), the copy engine's steps, back-to-back launches with credits
* :mod:`.all_gather` — the all-gather's chunk pushes and the load warp gated on them
* :mod:`.launch` — memory a previous kernel left; programmatic dependent launch
* :mod:`.counts` — arrival counts and quorums that do not add up, reported before exploring
* :mod:`.blackwell` — sm_100a kernels: tcgen05 commits, TMEM accumulator stages, the 2-CTA pair, CLC
  responses, the GEMM + reduce-scatter flag hand-off
"""

from __future__ import annotations

from ..report import FindingKind
from . import all_gather, blackwell, cluster, comm, counts, launch, raw, tma
from .all_gather import all_gather_launches
from .comm import comm_launches, copy_engine_comm, epilogue_comm
from .entry import Entry
from .pipelines import (
    TILE_BYTES,
    ascend_double_buffer,
    ascend_set_twice,
    async_pipeline,
    consumer_warpgroups,
    consumer_warps,
    fan_out,
    handoff,
    ping_pong,
    producer_at_phase_zero,
    tma_pipeline,
    token_pipeline,
)

__all__ = [
    "BAD",
    "ENTRIES",
    "GOOD",
    "TILE_BYTES",
    "Entry",
    "all_gather_launches",
    "ascend_double_buffer",
    "ascend_set_twice",
    "async_pipeline",
    "comm_launches",
    "consumer_warpgroups",
    "consumer_warps",
    "copy_engine_comm",
    "epilogue_comm",
    "fan_out",
    "handoff",
    "ping_pong",
    "producer_at_phase_zero",
    "tma_pipeline",
    "token_pipeline",
]

GOOD = [
    *(Entry(f"async_s{s}", f"ARRIVAL pipeline, {s} stage(s)", lambda s=s: async_pipeline(s)) for s in range(1, 5)),
    *(Entry(f"tma_s{s}", f"TMA-load pipeline, {s} stage(s)", lambda s=s: tma_pipeline(s)) for s in range(1, 5)),
    Entry("tokens", "try_acquire/try_wait tokens", token_pipeline),
    Entry("two_warpgroups", "two consumer warpgroups, declared count=2", consumer_warpgroups),
    Entry("fan_out", "two consumer warps (roles) read every slot", fan_out),
    Entry("handoff", "epilogue → communication hand-off, 2 stages, lag 1", handoff),
    Entry("handoff_lag0", "hand-off, 3 stages, lag 0", lambda: handoff(stages=3, tiles=4, lag=0)),
    Entry("handoff_two_comm", "hand-off to two communication warps", lambda: handoff(stages=2, tiles=3, consumers=2)),
    Entry("ping_pong", "two math warpgroups alternate tiles (ordered barrier)", ping_pong),
    Entry("ascend_flags", "Ascend set_flag/wait_flag double buffer", ascend_double_buffer),
    *raw.GOOD,
    *tma.GOOD,
    *cluster.GOOD,
    *comm.GOOD,
    *all_gather.GATHER_GOOD,
    *launch.GOOD,
    *counts.GOOD,
    *blackwell.GOOD,
]

BAD = [
    Entry(
        "missing_release",
        "the consumer never releases a slot",
        lambda: async_pipeline(2, bug="no_release"),
        FindingKind.DEADLOCK,
        ("data.empty[", "producer 'load'", "consumer 'math'"),
    ),
    Entry(
        "release_before_read",
        "the consumer releases a slot before reading it",
        lambda: async_pipeline(2, bug="release_before_read"),
        FindingKind.OVERWRITE_UNRELEASED,
        ("data.slot[", "math"),
    ),
    Entry(
        "read_after_release",
        "the consumer reads a slot, releases it, then reads it again (a second pass after handing it back)",
        lambda: async_pipeline(2, bug="read_after_release"),
        FindingKind.OVERWRITE_UNRELEASED,
        ("data.slot[", "math (after its release)"),
        (FindingKind.READ_UNCOMMITTED,),
        twin="async_s2",
    ),
    Entry(
        "keeps_last_slot",
        "the consumer exits without releasing its last slot",
        lambda: async_pipeline(2, bug="keep_last"),
        FindingKind.UNBALANCED_EXIT,
        ("consumer 'math' of data", "waited for 6 slot(s) but released 5"),
    ),
    Entry(
        "two_warpgroups_declared_as_one",
        "two consumer warpgroups, spec declares count=1",
        lambda: consumer_warpgroups(declared=1),
        FindingKind.ARRIVAL_COUNT,
        (
            "mainloop.empty[s] expects 128 arrivals per phase",
            "expected 128, got 256",
            "consumer 'math'",
            "math0, math1",
        ),
        (FindingKind.OVER_ARRIVAL,),
        twin="two_warpgroups",
    ),
    Entry(
        "producer_phase_0",
        "the producer's state starts at phase 0",
        producer_at_phase_zero,
        FindingKind.DEADLOCK,
        ("data.empty[0]", "producer 'load'", "parity 0", "start phase"),
    ),
    Entry(
        "notify_on_smem_read",
        "store→notify that notifies after wait_group.read (smem read) instead of store completion",
        lambda: handoff(notify_on="smem_read"),
        FindingKind.READ_UNCOMMITTED,
        ("global[('C', 0)]", "comm0"),
    ),
    Entry(
        "order_phase_never_flips",
        "ordered barrier whose phase is a loop-invariant constant",
        lambda: ping_pong(phase_flips=False),
        FindingKind.PHASE_ALIASING,
        ("order[", "group"),
        (FindingKind.DEADLOCK,),
    ),
    Entry(
        "tx_bytes_short",
        "a TMA load delivers fewer bytes than the producer armed",
        lambda: tma_pipeline(2, items=2, load_bytes=TILE_BYTES // 2),
        FindingKind.DEADLOCK,
        ("smem.full[0]", "transaction bytes outstanding"),
    ),
    Entry(
        "tma_no_proxy_fence",
        "TMA-load consumer releases without the proxy fence",
        lambda: tma_pipeline(2, items=4, fence_reads=False),
        FindingKind.OVERWRITE_UNRELEASED,
        ("the TMA load issued by tma overwrites smem.slot[", "math's read of write #", "fence.proxy.async"),
    ),
    Entry(
        "store_no_proxy_fence",
        "epilogue stores a staged tile without the proxy fence",
        lambda: handoff(fence_writes=False),
        FindingKind.READ_UNCOMMITTED,
        (
            "epilogue's TMA store reads out.slot[0] (write #1 by epilogue) through the async proxy",
            "not fenced (fence.proxy.async) before the store was issued",
        ),
    ),
    Entry(
        "ascend_set_twice",
        "a second set_flag before the wait_flag",
        ascend_set_twice,
        FindingKind.DOUBLE_SET,
        ("MTE2_MTE1_0",),
    ),
    *raw.BAD,
    *tma.BAD,
    *cluster.BAD,
    *comm.BAD,
    *all_gather.GATHER_BAD,
    *launch.BAD,
    *counts.BAD,
    *blackwell.BAD,
]

ENTRIES = {entry.name: entry for entry in (*GOOD, *BAD)}
assert len(ENTRIES) == len(GOOD) + len(BAD), "catalogue entry names must be distinct"
