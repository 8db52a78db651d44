"""Stream-K's fix-up across clusters and launches, run through ``pipes.check``.

Each cluster is one agent (its CTAs and math threads act together: the kernel's named barrier before
one thread's release, and after one thread's acquire, makes the cluster's 256 threads one party at
GPU scope). Per launch, an agent walks exactly what :class:`~gemm_modes.splits.StreamKSplit` (or,
``aligned``, :class:`~gemm_modes.splits.AlignedSplit`) gives its cluster — the same code the kernel
runs — and per split unit:

* a unit with later k-tiles of a tile (``kb > 0``, part 1 … ``partials``) writes its partial slot (an
  error if the part has none: its slot would be the next tile's) and adds 1 to the tile's flag
  (``atom.release.gpu``);
* the unit with k-tile 0 of a split tile waits until the flag counts the tile's other parts
  (``ld.acquire.gpu``), reads their slots (each must be *this* launch's), and puts the flag back to 0
  for the next launch.

Launches are stream-ordered: every agent of launch ``e`` starts after every agent of launch ``e − 1``
ended (a counter of ended agents stands for the kernel boundary). ``bug`` plants a defect
(:data:`STREAM_K_BUGS`): ``no_wait`` — the storing unit reads the partial without waiting for its
flag; ``no_reset`` — the flag is never put back, so the next launch's storing unit takes the previous
launch's partial.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipes.check import Agent, Ctx, ModelCounter, Protocol, Report, Scope, check

from .modes import STREAM_K_PARTIALS
from .splits import AlignedSplit, StreamKSplit

STREAM_K_BUGS = ("no_wait", "no_reset")
GPU = Scope.GPU


@dataclass(frozen=True)
class StreamKWalk:
    """What the model walks: ``cluster_tiles`` tiles of ``k_tiles`` k-tiles on ``clusters`` clusters over
    ``launches`` launches, split as ``StreamKSplit(remainder=remainder, partials=partials)`` splits them, or
    ``AlignedSplit`` with ``aligned``."""

    cluster_tiles: int
    clusters: int
    k_tiles: int
    launches: int = 2
    remainder: bool = False
    partials: int = STREAM_K_PARTIALS
    aligned: bool = False


def stream_k_protocol(walk: StreamKWalk, bug: str | None = None) -> Protocol:
    """The fix-up of ``walk`` (``remainder``: up to ``partials + 1`` parts per tile)."""
    if bug is not None and bug not in STREAM_K_BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {STREAM_K_BUGS}")
    cluster_tiles, clusters, k_tiles, launches = walk.cluster_tiles, walk.clusters, walk.k_tiles, walk.launches
    if min(cluster_tiles, clusters, k_tiles, launches) < 1:
        raise ValueError(f"tiles, clusters, k-tiles, launches = {cluster_tiles, clusters, k_tiles, launches}: >= 1")
    if walk.aligned and walk.remainder:
        raise ValueError("StreamKWalk: aligned and remainder are two modes: at most one")
    if walk.aligned:
        split = AlignedSplit.of(cluster_tiles, clusters, k_tiles)
        slots = AlignedSplit.slots()
    else:
        split = StreamKSplit.of(cluster_tiles, clusters, k_tiles, remainder=walk.remainder, partials=walk.partials)
        slots = StreamKSplit.slots(walk.remainder, walk.partials)
    if split.sk_tiles == 0:
        raise ValueError(
            f"{cluster_tiles} tiles on {clusters} clusters split nothing (whole waves; in the wave mode, fewer "
            "tiles than clusters; aligned, a lead of every k-tile): nothing to check"
        )

    def cluster(c: int):
        def run(ctx: Ctx) -> None:
            for e in range(1, launches + 1):
                if e > 1:  # the kernel boundary: launch e starts after every cluster of launch e − 1 ended
                    ctx.wait_counter("ended", (e - 1) * clusters, scope=GPU)
                at, end = split.stream(c, k_tiles)
                while at < end:
                    tile, kb, ke = split.unit(at, end, k_tiles)
                    if kb > 0:
                        part = split.part(at, tile, k_tiles)
                        # The kernel writes slot part − 1 of the tile's `slots`: one more would be the next tile's.
                        assert part <= slots, f"cluster {c}: part {part} of tile {tile}, past its {slots} slots"
                        ctx.write_global(("partial", tile, part), (e, tile, part))
                        ctx.signal(f"flag{tile}", 1, scope=GPU)
                    elif (count := split.partials(tile, k_tiles)) > 0:
                        if bug != "no_wait":
                            ctx.wait_counter(f"flag{tile}", count, scope=GPU)
                        for part in range(1, count + 1):
                            got = ctx.read_global(("partial", tile, part))
                            assert got == (e, tile, part), f"launch {e}: cluster {c} added {got!r} to tile {tile}"
                        if bug != "no_reset":
                            ctx.store_counter(f"flag{tile}", 0, scope=GPU)
                    at += ke - kb
                ctx.signal("ended", 1, scope=GPU)

        return run

    if not any(split.partials(t, k_tiles) for t in range(split.sk_tiles)):
        raise ValueError(
            f"{cluster_tiles} tiles on {clusters} clusters with {k_tiles} k-tiles split no tile (each share is "
            f"{split.share} k-tiles, whole tiles): no fix-up to check"
        )
    agents = [Agent(f"cluster{c}", cluster(c), device=0, cluster=c) for c in range(clusters)]
    counters = [ModelCounter("ended")] + [ModelCounter(f"flag{t}") for t in range(split.sk_tiles)]
    initial = {("partial", t, p): ("before launch 1", t, p) for t in range(split.sk_tiles) for p in range(1, slots + 1)}
    deeper = f"_{walk.partials}" if walk.remainder and walk.partials != STREAM_K_PARTIALS else ""
    mode = "_aligned" if walk.aligned else "_remainder" if walk.remainder else ""
    label = "stream_k" + mode + deeper + (f"_{bug}" if bug else "")
    return Protocol(label, agents, [], counters=counters, initial=initial)


def check_stream_k(walk: StreamKWalk, bug: str | None = None, **limits: int) -> Report:
    """:func:`stream_k_protocol` through the checker (exhaustive within ``max_states``)."""
    return check(stream_k_protocol(walk, bug), **limits)
