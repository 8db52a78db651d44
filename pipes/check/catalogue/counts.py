"""Catalogue protocols whose arrival counts do not add up: the static count check reports them at the
declaration, before exploring (they would otherwise surface as a deadlock, or a producer a round ahead)."""

from __future__ import annotations

from ..context import Ctx
from ..declarations import ModelCounter
from ..protocol import Agent, Protocol
from ..report import FindingKind
from .cluster import multicast_mainloop
from .entry import Entry
from .pipelines import consumer_warpgroups


def split_k_quorum(producers: int = 3, quorum: int = 3) -> Protocol:
    """Split-K: ``producers`` warps each add their partial tile to the workspace and signal ``done``; the
    reducer waits for a quorum of ``quorum`` (``ctx.wait_counter`` defaults to it) and reads the sum."""

    def partial(part: int):
        def run(ctx: Ctx) -> None:
            ctx.write_global(("partial", part), part + 1)
            ctx.signal("done")

        return run

    def reducer(ctx: Ctx) -> None:
        ctx.wait_counter("done")
        total = sum(ctx.read_global(("partial", p)) for p in range(producers))
        assert total == producers * (producers + 1) // 2

    agents = [*(Agent(f"k{p}", partial(p)) for p in range(producers)), Agent("reducer", reducer)]
    done = ModelCounter("done", quorum=quorum, signallers=[f"k{p}" for p in range(producers)])
    return Protocol(f"split_k_quorum_{producers}_of_{quorum}", agents, counters=[done])


GOOD = [
    Entry("split_k_quorum", "split-K: the reducer waits for a quorum of 3 partials", split_k_quorum),
]

BAD = [
    Entry(
        "two_warpgroups_declared_two_running_one",
        "the spec declares two consumer warpgroups but only one runs: empty[s] never completes",
        lambda: consumer_warpgroups(declared=2, running=1),
        FindingKind.ARRIVAL_COUNT,
        ("mainloop.empty[s] expects 256 arrivals per phase", "expected 256, got 128", "math0", "waiter hangs"),
        (FindingKind.DEADLOCK,),
        twin="two_warpgroups",
    ),
    Entry(
        "multicast_peers_undeclared",
        "a 2-CTA multicast consumer role declared with peers=1: each empty[s] gets both CTAs' releases",
        lambda: multicast_mainloop(peers=1),
        FindingKind.ARRIVAL_COUNT,
        ("mainloop.empty[s]@cta0 expects 128 arrivals per phase", "expected 128, got 256", "mma0", "mma1"),
        twin="multicast_mainloop",
    ),
    Entry(
        "split_k_quorum_unreachable",
        "the reducer waits for 4 partials but 3 warps signal: the quorum is never reached",
        lambda: split_k_quorum(quorum=4),
        FindingKind.ARRIVAL_COUNT,
        ("counter done", "quorum of 4", "expected 4, got 3"),
        (FindingKind.DEADLOCK,),
        twin="split_k_quorum",
    ),
]
