"""Catalogue protocol of the all-gather GEMM (:class:`pipes.comm.ChunkPusher`,
:class:`pipes.cute.comm.ChunkGate`), correct and with the defects that break it.

* :func:`all_gather_launches` — the all-gather GEMM's load side on every rank over back-to-back
  launches: each rank's row block pushed to its peers in chunks (copy engine or SM copies), each chunk's
  flag at system scope, the load warp's gate acquiring it and fencing before its TMA loads, a credit
  per sender and launch.
"""

from __future__ import annotations

from ...chunks import ChunkPlan
from ...epoch import FIRST, next_epoch
from ..comm import ModelReadyFlags
from ..context import Ctx
from ..declarations import ModelCounter
from ..gather import ModelChunkGate, ModelTmaIssue, chunk_pusher, tma_unit
from ..protocol import Agent, Protocol
from ..report import FindingKind
from ..scope import HOST, Scope
from .entry import Entry

#: Defects :func:`all_gather_launches` can plant: ``tma_before_acquire`` — the load warp issues a tile's TMA
#: load before its chunk's acquire; ``no_proxy_fence`` — acquire, then the TMA load without
#: ``fence.proxy.async.global``; ``no_credit`` — the pushers take no credit (the next launch's push may
#: overwrite a chunk a peer's GEMM still reads); ``gpu_release`` — SM pushes release the flag at GPU scope,
#: which another GPU's acquire is outside; ``credit_before_kernel`` — a rank gives its credits back when
#: its launch begins instead of after its kernel.
AG_BUGS = ("tma_before_acquire", "no_proxy_fence", "no_credit", "gpu_release", "credit_before_kernel")
AG_ENGINES = ("copy", "sm")


def all_gather_launches(
    launches: int = 2,
    world: int = 2,
    chunks_per_rank: int = 1,
    engine: str = "copy",
    bug: str | None = None,
    own_rows: bool = False,
    grant_beside: bool = False,
) -> Protocol:
    """Every rank of an all-gather GEMM over ``launches`` back-to-back launches (:class:`pipes.comm.ChunkPusher`,
    :class:`pipes.cute.comm.ChunkGate`). Per rank ``r`` three agents:

    * ``launch{r}`` — the launching stream and the kernel's load warp, in stream order: the layer before
      writes the rank's row block, ``begin`` puts it in its rows of the gathered A and records the start
      event; the load warp walks the tile rows, own rows first, and per tile waits at its gate (the chunks
      of other ranks, once per launch) and issues the TMA load; the kernel ends once every load landed;
      the stream joins its copy work, then gives every sender its credit back (``credit{r}_{s} = 1``).
    * ``tma{r}`` — the load warp's TMA unit (the async proxy): per issue, the chunk read through the async
      proxy must hold this launch's data.
    * ``push{r}`` — the pusher: after the start event, take each peer's credit, then each chunk to each
      peer and its flag there; the copy engine (``engine="copy"``: off the SMs, parity-token flags, binary
      credits) or a warp of rank ``r`` (``"sm"``: epoch flags, epoch credits).

    With ``grant_beside`` (``ChunkPusher``'s default) a fourth, ``grant{r}``: the stream that gives the
    credits back, after the event the launching stream records behind the kernel (``kernel_done{r}``);
    the launching stream then only joins its copy work. ``credit_before_kernel`` there: the granting
    stream waits for the start event instead.

    One row per chunk and per tile (``chunk_rows = tile_m = 1``): the tile → chunk map is the kernel's
    (:meth:`pipes.chunks.ChunkPlan.tile_span`). The load warp walks the other ranks' rows only; with
    ``own_rows`` it walks its own first (they need no wait: in place before the kernel starts), for ten
    times the states. ``bug`` plants one of :data:`AG_BUGS`.
    """
    if bug is not None and bug not in AG_BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {AG_BUGS}")
    if engine not in AG_ENGINES:
        raise ValueError(f"engine = {engine!r} is invalid: allowed one of {AG_ENGINES}")
    if grant_beside and engine != "copy":
        raise ValueError("grant_beside needs engine 'copy' (SM pushes' credits are granted on the launching stream)")
    if bug == "gpu_release" and engine != "sm":
        raise ValueError("bug = 'gpu_release' needs engine 'sm' (the copy engine's flag writes are system-wide)")
    if launches < 1:
        raise ValueError(f"launches = {launches} is invalid: allowed at least 1")
    plan = ChunkPlan(rows=world * chunks_per_rank, world=world, chunk_rows=1)
    epochs = [FIRST]
    while len(epochs) < launches:
        epochs.append(next_epoch(epochs[-1]))
    sys_scope = Scope.SYSTEM
    release = Scope.GPU if bug == "gpu_release" else sys_scope
    holds = "epoch" if engine == "sm" else "parity_token"
    flags = {r: ModelReadyFlags(f"flag{r}_", plan.chunks, release, holds=holds) for r in range(world)}
    gates = {r: ModelChunkGate(flags[r], plan, r) for r in range(world)}
    issues = {r: ModelTmaIssue(f"issue{r}") for r in range(world)}
    # Tile rows in walk order: the rank's own rows first (the first waves never wait), then the others'.
    first = 0 if own_rows else 1
    order = {r: [c for q in range(first, world) for c in plan.chunks_of((r + q) % world)] for r in range(world)}

    def credit(owner: int, sender: int) -> str:
        """The credit word in ``owner``'s memory that ``sender``'s pusher takes."""
        return f"credit{owner}_{sender}"

    def give_credits(ctx: Ctx, r: int, epoch: int) -> None:
        """pipes.comm.grant_credits: 1 (the copy engine's binary credit) or the epoch (SM pushes)."""
        for sender in range(world):
            if sender != r:
                ctx.store_counter(credit(r, sender), epoch if engine == "sm" else 1, scope=sys_scope)

    def launch(r: int):
        def run(ctx: Ctx) -> None:
            issued = 0
            for epoch in epochs:
                for chunk in plan.chunks_of(r):
                    ctx.write_global(("src", r, chunk), (epoch, chunk))  # the layer before
                    ctx.write_global(("A", r, chunk), (epoch, chunk))  # begin: the own block in place
                ctx.store_counter(f"start{r}", epoch, scope=sys_scope)  # the start event; the kernel starts
                if bug == "credit_before_kernel" and not grant_beside:
                    give_credits(ctx, r, epoch)
                passed: frozenset[int] = frozenset()
                for tm in order[r]:
                    if bug == "tma_before_acquire":
                        issued += 1
                        issues[r].issue(ctx, issued)
                    passed = gates[r].wait_tile(ctx, tm, epoch, passed)  # ChunkGate.wait_tile: ld.acquire.sys
                    if bug != "tma_before_acquire":
                        issued += 1
                        issues[r].issue(ctx, issued, fenced=bug != "no_proxy_fence")  # fence.proxy.async.global
                ctx.wait_counter(f"loaded{r}", at_least=issued)  # the kernel's end: every TMA load landed
                if grant_beside:
                    ctx.store_counter(f"kernel_done{r}", epoch, scope=sys_scope)  # the event behind the kernel
                ctx.wait_counter(f"pushed{r}", at_least=epoch, scope=sys_scope)  # the join with the copy work
                if bug != "credit_before_kernel" and not grant_beside:
                    give_credits(ctx, r, epoch)

        return run

    def granting(r: int):
        """ChunkPusher.grant with grant_beside: its own stream waits for the event behind the kernel."""

        def run(ctx: Ctx) -> None:
            after = "start" if bug == "credit_before_kernel" else "kernel_done"
            for epoch in epochs:
                ctx.wait_counter(f"{after}{r}", at_least=epoch, scope=sys_scope)
                give_credits(ctx, r, epoch)

        return run

    def tma(r: int) -> Agent:
        """The load warp's TMA unit: the kernel starts after the stream's earlier work (the own block is in
        place for every proxy); each load's data must be this launch's chunk."""
        return tma_unit(
            f"tma{r}",
            issues[r],
            [(epoch, chunk) for epoch in epochs for chunk in order[r]],
            lambda ctx, chunk: ctx.read_global(("A", r, chunk), proxy="async"),
            done=f"loaded{r}",
            start=f"start{r}",
            device=r,
        )

    def pusher(r: int) -> Agent:
        return chunk_pusher(
            f"push{r}",
            plan,
            r,
            {p: flags[p] for p in range(world) if p != r},
            lambda ctx, chunk: ctx.read_global(("src", r, chunk)),
            lambda ctx, peer, chunk, value: ctx.write_global(("A", peer, chunk), value),
            epochs=epochs,
            credits=None if bug == "no_credit" else {p: credit(p, r) for p in range(world) if p != r},
            start=f"start{r}",
            pushed=f"pushed{r}",
            device=HOST if engine == "copy" else r,
            epoch_credits=engine == "sm",
        )

    agents = []
    for r in range(world):
        agents += [Agent(f"launch{r}", launch(r), device=r), tma(r), pusher(r)]
        if grant_beside:
            agents.append(Agent(f"grant{r}", granting(r), device=r))
    counters: list[ModelCounter] = []
    for r in range(world):
        counters += [*flags[r].counters(), *issues[r].counters()]
        events = ("start", "loaded", "pushed", "kernel_done") if grant_beside else ("start", "loaded", "pushed")
        counters += [ModelCounter(f"{what}{r}") for what in events]
        # Given when the buffers are made (1; as an epoch credit it has reached the launch before the first).
        counters += [ModelCounter(credit(r, s), initial=1) for s in range(world) if s != r]
    name = f"all_gather_{engine}" + ("_grant_beside" if grant_beside else "") + (f"_{bug}" if bug else "")
    return Protocol(name, agents, counters=tuple(counters))


# The all-gather's protocols are larger (six or eight agents over two launches: up to ~14,000 states): kept apart
# from the small shipping protocols above, in the catalogue's GOOD and BAD all the same.
GATHER_GOOD = [
    Entry(
        "all_gather_copy",
        "all-gather, two ranks, two launches: copy-engine chunk pushes with parity-token flags and per-sender "
        "credits; the load warp acquires each peer chunk's flag (.sys) and fences before its TMA loads",
        all_gather_launches,
    ),
    Entry(
        "all_gather_sm",
        "all-gather, two ranks, two launches: SM chunk pushes released .sys with epoch flags",
        lambda: all_gather_launches(engine="sm"),
    ),
    Entry(
        "all_gather_copy_grant_beside",
        "all-gather as all_gather_copy, the credits given back from a stream of their own after the event "
        "behind the kernel (ChunkPusher's default)",
        lambda: all_gather_launches(grant_beside=True),
    ),
]

GATHER_BAD = [
    Entry(
        "all_gather_tma_before_acquire",
        "the load warp issues a tile's TMA load before its chunk's flag acquire: the TMA reads the rows before "
        "the peer's push is ordered before it",
        lambda: all_gather_launches(launches=1, bug="tma_before_acquire"),
        FindingKind.READ_UNCOMMITTED,
        ("tma0 reads global[('A', 0, 1)]",),
        twin="all_gather_copy",
    ),
    Entry(
        "all_gather_no_proxy_fence",
        "the load warp acquires the chunk's flag but issues the TMA load without fence.proxy.async.global: the "
        "async proxy is ordered after nothing the generic acquire saw",
        lambda: all_gather_launches(launches=1, bug="no_proxy_fence"),
        FindingKind.READ_UNCOMMITTED,
        ("tma0 reads global[('A', 0, 1)]", "issue0", "relaxed"),
        twin="all_gather_copy",
    ),
    Entry(
        "all_gather_no_credit",
        "the pushers take no credit: the next launch's push overwrites a chunk the peer's GEMM still reads",
        lambda: all_gather_launches(bug="no_credit"),
        FindingKind.OVERWRITE_UNRELEASED,
        ("global[('A', 1, 0)]", "a credit handing the buffer back"),
        twin="all_gather_copy",
    ),
    Entry(
        "all_gather_sm_gpu_release",
        "SM pushes release the chunk's flag at GPU scope: the other GPU's load warp is outside it",
        lambda: all_gather_launches(launches=1, engine="sm", bug="gpu_release"),
        FindingKind.READ_UNCOMMITTED,
        ("tma0 reads global[('A', 0, 1)]", "release has GPU scope (.gpu)", "needs SYSTEM scope (.sys)"),
        twin="all_gather_sm",
    ),
    Entry(
        "all_gather_credit_before_kernel",
        "a rank gives its credits back when its launch begins, not after its kernel: the sender's take (write 0) "
        "and the give (write 1) race, and a chunk may be overwritten while read",
        lambda: all_gather_launches(bug="credit_before_kernel"),
        FindingKind.FLAG_RACE,
        ("credit1_0",),
        alternatives=(FindingKind.OVERWRITE_UNRELEASED,),
        twin="all_gather_copy",
    ),
]
