"""Split-K's parallel fix-up across clusters and launches, run through ``pipes.check``.

Each cluster is one agent (its math threads act together through the kernel's named barrier, as in
``stream_k_protocol``). Per launch, the agent of cluster ``c`` takes its (tile, part) from
:meth:`SplitK.unit <gemm_modes.splits.SplitK.unit>`, the kernel's own arithmetic, and then, on its
tile's flag (the counts are :meth:`~gemm_modes.splits.SplitK.posted` and
:meth:`~gemm_modes.splits.SplitK.seen`):

* writes its partial slot and adds 1 (``atom.release.gpu``);
* waits until the flag counts every part's post (``ld.acquire.gpu``); parts 1 … s−1 add 1 more;
* reads every other part's slot (each must be *this* launch's);
* part 0 waits until the flag counts the others' second adds, then puts it back to 0.

Launches are stream-ordered (a counter of ended agents stands for the kernel boundary). ``bug`` plants
a defect (:data:`SPLIT_K_BUGS`): ``no_wait`` — a part reads the others' slots without waiting;
``no_reset`` — the flag is never put back, so the next launch reads the previous launch's partials;
``early_reset`` — part 0 resets once every part has posted, while another part may still be polling.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipes.check import Agent, Ctx, ModelCounter, Protocol, Report, Scope, check

from .splits import SplitK

SPLIT_K_BUGS = ("no_wait", "no_reset", "early_reset")
GPU = Scope.GPU


@dataclass(frozen=True)
class SplitKWalk:
    """``cluster_tiles`` tiles of ``k_tiles`` k-tiles, each cut into ``parts``, over ``launches`` launches."""

    cluster_tiles: int
    parts: int
    k_tiles: int
    launches: int = 2


def split_k_protocol(walk: SplitKWalk, bug: str | None = None) -> Protocol:
    """The fix-up of ``walk``, one agent per cluster of the launch."""
    if bug is not None and bug not in SPLIT_K_BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {SPLIT_K_BUGS}")
    if min(walk.cluster_tiles, walk.k_tiles, walk.launches) < 1 or walk.parts < 2:
        raise ValueError(f"{walk}: tiles, k-tiles and launches must be >= 1 and parts >= 2")
    split = SplitK(walk.parts)
    clusters = split.clusters(walk.cluster_tiles)

    def cluster(c: int):
        def run(ctx: Ctx) -> None:
            tile, part, _, _ = split.unit(c, walk.k_tiles)
            flag = f"flag{tile}"
            for e in range(1, walk.launches + 1):
                if e > 1:  # the kernel boundary: launch e starts after every cluster of launch e − 1 ended
                    ctx.wait_counter("ended", (e - 1) * clusters, scope=GPU)
                ctx.write_global(("partial", tile, part), (e, tile, part))
                ctx.signal(flag, 1, scope=GPU)
                if bug != "no_wait":
                    ctx.wait_counter(flag, split.posted(), scope=GPU)
                if part != 0:
                    ctx.signal(flag, 1, scope=GPU)
                for other in range(walk.parts):
                    if other != part:
                        got = ctx.read_global(("partial", tile, other))
                        assert got == (e, tile, other), f"launch {e}: part {part} of tile {tile} added {got!r}"
                if part == 0 and bug != "no_reset":
                    ctx.wait_counter(flag, split.posted() if bug == "early_reset" else split.seen(), scope=GPU)
                    ctx.store_counter(flag, 0, scope=GPU)
                ctx.signal("ended", 1, scope=GPU)

        return run

    agents = [Agent(f"cluster{c}", cluster(c), device=0, cluster=c) for c in range(clusters)]
    counters = [ModelCounter("ended")] + [ModelCounter(f"flag{t}") for t in range(walk.cluster_tiles)]
    initial = {
        ("partial", t, p): ("before launch 1", t, p) for t in range(walk.cluster_tiles) for p in range(walk.parts)
    }
    label = f"split_k_{walk.parts}" + (f"_{bug}" if bug else "")
    return Protocol(label, agents, [], counters=counters, initial=initial)


def check_split_k(walk: SplitKWalk, bug: str | None = None, **limits: int) -> Report:
    """:func:`split_k_protocol` through the checker (exhaustive within ``max_states``)."""
    return check(split_k_protocol(walk, bug), **limits)
