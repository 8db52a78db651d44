"""Catalogue protocols written with hand-written synchronisation: raw mbarriers and counters.

Each bad protocol here has a corrected twin that checks clean (``Entry.twin``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..context import Ctx
from ..protocol import Agent, ModelBarrier, ModelCounter, Protocol
from ..report import FindingKind
from .entry import Entry


def rendezvous(rounds: int = 4, parity_flips: bool = True) -> Protocol:
    """Two warps meet every round on one of two mbarriers (round ``r`` uses ``meet[r % 2]``), each
    publishing its value for the round before it arrives and reading the other's after the wait.

    Arrivals and waits are annotated with the *logical round* ``r`` — the kernel's own numbering, not
    the barrier's phase count (``meet[1]``'s phase #0 is round 1). ``parity_flips=False``: the second
    warp waits with a constant parity, so in round 2 it passes on ``meet[0]``'s stale round-0 phase.
    """

    def warp(me: str, other: str, flips: bool) -> Callable[[Ctx], None]:
        def run(ctx: Ctx) -> None:
            for r in range(rounds):
                barrier = f"meet{r % 2}"
                ctx.write_global((me, r), r)
                ctx.arrive(barrier, 1, completion=r)
                parity = (r // 2) & 1 if flips else 0
                ctx.wait(barrier, parity, completion=r)
                value = ctx.read_global((other, r))
                assert value == r, f"{ctx.name} read {value!r} for round {r}"

        return run

    agents = [Agent("a", warp("a", "b", True)), Agent("b", warp("b", "a", parity_flips))]
    barriers = [ModelBarrier("meet0", 2), ModelBarrier("meet1", 2)]
    return Protocol("rendezvous" + ("" if parity_flips else "_parity_never_flips"), agents, barriers=barriers)


def cross_core_counted(stages: int = 2, tiles: int = 5, capacity: int = 15, drain: bool = True) -> Protocol:
    """An Ascend cube → vector hand-off on cross-core counters, one counter per direction.

    The vector core primes ``stages`` free-slot credits on ``free``; the cube takes a credit, writes a
    workspace slot and signals ``ready``; the vector core takes ``ready``, reads the slot and gives the
    credit back; the cube drains the last credits. Counting hardware holds the primed credits and a
    producer running ahead (up to ``capacity``); ``capacity=1`` is the binary reading, under which the
    second primed credit is lost. ``drain=False``: the cube never takes the last credits back (a warning).
    """

    def cube(ctx: Ctx) -> None:
        for tile in range(tiles):
            ctx.take("free")
            ctx.write_global(("workspace", tile % stages), tile)
            ctx.signal("ready")
        if drain:
            for _ in range(stages):
                ctx.take("free")

    def vector(ctx: Ctx) -> None:
        for _ in range(stages):
            ctx.signal("free")
        for tile in range(tiles):
            ctx.take("ready")
            value = ctx.read_global(("workspace", tile % stages))
            assert value == tile, f"vector read {value!r} for tile {tile}"
            ctx.signal("free")

    counters = [
        ModelCounter("free", capacity=capacity, drain=True),
        ModelCounter("ready", capacity=capacity, drain=True),
    ]
    name = f"cross_core_counted_cap{capacity}" + ("" if drain else "_no_drain")
    return Protocol(name, [Agent("cube", cube), Agent("vector", vector)], counters=counters)


GOOD = [
    Entry("rendezvous", "two warps meet on two mbarriers, annotated with logical rounds", rendezvous),
    Entry("cross_core_counted", "Ascend cube → vector on counting cross-core flags", cross_core_counted),
]

BAD = [
    Entry(
        "rendezvous_parity_never_flips",
        "a rendezvous warp whose wait parity never flips passes on a stale round",
        lambda: rendezvous(parity_flips=False),
        FindingKind.PHASE_ALIASING,
        ("meet0", "b, in wait", "completion #2", "the stale completion #0"),
        twin="rendezvous",
    ),
    Entry(
        "cross_core_binary_reading",
        "primed credits on a cross-core flag read as binary (capacity 1): the second is lost",
        lambda: cross_core_counted(capacity=1),
        FindingKind.COUNTER_OVERFLOW,
        ("counter free", "vector, in signal", "counts at most 1", "binary reading"),
        twin="cross_core_counted",
    ),
    Entry(
        "cross_core_credits_left",
        "the cube never drains its last free-slot credits (harmless at exit: a warning)",
        lambda: cross_core_counted(drain=False),
        FindingKind.CREDITS_LEFT,
        ("counter free holds 2 untaken signal(s) at exit",),
        twin="cross_core_counted",
    ),
]
