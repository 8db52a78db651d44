"""Models of the all-gather's objects: each rank's chunks of A pushed into its peers' memory
(:func:`chunk_pusher`, :class:`pipes.comm.ChunkPusher`'s order), a GEMM's load warp waiting at its gate
(:class:`ModelChunkGate`, :class:`pipes.cute.comm.ChunkGate`) before the TMA loads that read them, and the
TMA unit as an agent of its own (:func:`tma_unit`), handed the load warp's view with each issue
(:class:`ModelTmaIssue`), fenced or not. The chunk arithmetic is :class:`pipes.chunks.ChunkPlan`'s, the
same the kernel and the host run; the flags and credits are :mod:`pipes.check.comm`'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..chunks import ChunkPlan
from ..epoch import FIRST, FRESH, previous, reached
from ..errors import ProtocolError, invalid
from .comm import ModelReadyFlags, TileReader, check_positive, model_epoch
from .context import Ctx
from .declarations import ModelCounter
from .protocol import Agent
from .scope import HOST, Scope

ChunkReader = Callable[[Ctx, int], Any]
"""``read(ctx, chunk)``: the pusher reads its own chunk ``chunk`` (the source block) and returns it."""
ChunkWriter = Callable[[Ctx, int, int, Any], None]
"""``write(ctx, peer, chunk, value)``: the pusher writes ``value`` as chunk ``chunk`` of ``peer``'s gathered A."""


@dataclass(frozen=True)
class ModelChunkGate:
    """A load warp's :class:`pipes.cute.comm.ChunkGate`: before the first TMA load of tile row ``tm`` it
    waits for the flag of every chunk the tile's rows touch (:meth:`pipes.chunks.ChunkPlan.tile_span`, the
    function the kernel runs) that another rank pushes and that it has not passed in this launch.

    ``flags``: one flag per chunk of ``plan``, in ``rank``'s memory; ``tile_m``: rows per output tile.
    The proxy fence that follows the acquires is the TMA issue's (:class:`ModelTmaIssue`)."""

    flags: ModelReadyFlags
    plan: ChunkPlan
    rank: int
    tile_m: int = 1

    def __post_init__(self) -> None:
        owner = f"ModelChunkGate({self.flags.name!r})"
        if self.flags.count != self.plan.chunks:
            raise ProtocolError(
                f"{owner}: {self.flags.count} flag(s) for the plan's {self.plan.chunks} chunks: one flag per chunk"
            )
        self.plan.check_rank(self.rank)
        check_positive(owner, "tile_m", self.tile_m)

    def wait_tile(
        self, ctx: Ctx, tm: int, epoch: int, passed: frozenset[int] = frozenset(), scope: Scope | None = Scope.SYSTEM
    ) -> frozenset[int]:
        """Acquire (at ``scope``) every chunk tile row ``tm`` needs for launch ``epoch`` that another rank
        pushes and is not in ``passed``; returns ``passed`` with them added (carry it to the next tile)."""
        first, end = self.plan.tile_span(tm, self.tile_m)
        for chunk in range(first, end):
            if self.plan.owner(chunk) != self.rank and chunk not in passed:
                self.flags.wait(ctx, chunk, epoch, scope)
                passed = passed | {chunk}
        return passed


@dataclass(frozen=True)
class ModelTmaIssue:
    """A load warp's TMA loads of global memory as the async proxy sees them: the TMA unit is an agent of
    its own (:func:`tma_unit`), and each issue hands it the issuing thread's view (a counter of issues).

    The hand-off carries what the thread acquired (a chunk's flag) only when ``fence.proxy.async.global``
    came between the acquire and the issue — :class:`pipes.cute.comm.ChunkGate` runs it after its waits.
    ``issue(..., fenced=False)`` is the issue without it: a relaxed hand-off, so the TMA unit's read of
    the chunk is ordered after nothing the thread acquired."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise invalid("ModelTmaIssue", "name", self.name, "a non-empty string")

    def counters(self) -> tuple[ModelCounter, ...]:
        """The issue counter, for ``Protocol(counters=...)``."""
        return (ModelCounter(self.name),)

    def issue(self, ctx: Ctx, issued: int, fenced: bool = True) -> None:
        """The load warp issues its ``issued``-th TMA load (counted over the whole agent's life)."""
        ctx.store_counter(self.name, issued, relaxed=not fenced)

    def wait(self, ctx: Ctx, issued: int) -> None:
        """The TMA unit starts the ``issued``-th load."""
        ctx.wait_counter(self.name, at_least=issued)


def tma_unit(
    name: str,
    issues: ModelTmaIssue,
    loads: Sequence[tuple[int, Any]],
    read: TileReader,
    *,
    done: str,
    start: str | None = None,
    device: int = 0,
) -> Agent:
    """The TMA unit of a load warp, as an agent: per ``(epoch, chunk)`` of ``loads`` (in issue order), wait
    for its issue, read the chunk through the async proxy (``read(ctx, chunk)``, e.g. ``ctx.read_global(...,
    proxy="async")``), check it holds ``(epoch, chunk)``, then count it complete on ``done`` (the
    transaction bytes landing on the mbarrier the math warps wait for). ``start``: a counter the launching
    stream raises to each launch's epoch before the kernel; the unit waits for it at a launch's first load
    (the kernel starts after the stream's earlier work, whose writes every proxy then sees)."""

    def run(ctx: Ctx) -> None:
        launch = None
        for issued, (epoch, chunk) in enumerate(loads, start=1):
            if start is not None and epoch != launch:
                ctx.wait_counter(start, at_least=epoch, scope=Scope.SYSTEM)
                launch = epoch
            issues.wait(ctx, issued)
            got = read(ctx, chunk)
            if got != (epoch, chunk):
                raise AssertionError(
                    f"{ctx.name} loaded chunk {chunk} as {got!r} in launch {epoch}, expected {(epoch, chunk)!r}"
                )
            ctx.signal(done, 1)

    return Agent(name, run, device=device)


def chunk_pusher(
    name: str,
    plan: ChunkPlan,
    rank: int,
    flags: Mapping[int, ModelReadyFlags],
    read_chunk: ChunkReader,
    write_chunk: ChunkWriter,
    *,
    epochs: Sequence[int] = (FIRST,),
    credits: Mapping[int, str] | None = None,
    start: str | None = None,
    pushed: str | None = None,
    device: int | str = HOST,
    barrier: bool = True,
    epoch_credits: bool = False,
) -> Agent:
    """Rank ``rank``'s pushes (:class:`pipes.comm.ChunkPusher`), as an agent: per launch of ``epochs``,
    after ``start`` (the launching stream's start event) has reached it, take each peer's credit for this
    rank (``credits[peer]``, a counter name: wait for 1, write 0 — the binary semaphore), then for each
    ``(chunk, peer)`` of :meth:`ChunkPlan.pushes` read the chunk, write it to the peer and raise its flag
    there (``flags[peer]``, one per chunk; a memory barrier first unless ``barrier=False``); then store the
    epoch into ``pushed`` (the join the launching stream waits for).

    The copy engine runs off the SMs (``device=HOST``, reached only at system scope, as :func:`copy_stream`);
    a warp that pushes with stores (SM copies) is ``device=rank``. ``epoch_credits``: the credit words hold
    the last epoch the peer consumed and the pusher waits until one has reached the launch before its own
    (:meth:`pipes.cute.comm.Credits.wait`, SM pushes) instead of taking a binary credit. ``credits=None``:
    the pusher takes no credit (a planted defect: the next launch may overwrite a chunk a peer still reads)."""
    plan.check_rank(rank)
    epochs = tuple(model_epoch(e, f"chunk_pusher {name}: epoch") for e in epochs)
    peers = plan.push_peers(rank)
    for peer in peers:
        if peer not in flags or flags[peer].count != plan.chunks:
            raise ProtocolError(f"chunk_pusher {name}: flags[{peer}] must hold one flag per chunk ({plan.chunks})")

    def run(ctx: Ctx) -> None:
        for epoch in epochs:
            if start is not None:
                ctx.wait_counter(start, at_least=epoch, scope=Scope.SYSTEM)
            for peer in peers:  # every credit before the first push, in push order
                if credits is None:
                    continue
                if not epoch_credits:  # the binary semaphore: wait for 1, write 0
                    ctx.wait_counter(credits[peer], at_least=1, scope=Scope.SYSTEM)
                    ctx.store_counter(credits[peer], 0, scope=Scope.SYSTEM)
                elif not reached(FRESH, previous(epoch)):  # a fresh credit admits the first launch
                    ctx.wait_counter(credits[peer], at_least=previous(epoch), scope=Scope.SYSTEM)
            for chunk, peer in plan.pushes(rank):
                write_chunk(ctx, peer, chunk, read_chunk(ctx, chunk))
                flags[peer].publish(ctx, chunk, epoch, fenced=barrier)
            if pushed is not None:
                ctx.store_counter(pushed, epoch, scope=Scope.SYSTEM)

    return Agent(name, run, device=device)


__all__ = ["ChunkReader", "ChunkWriter", "ModelChunkGate", "ModelTmaIssue", "chunk_pusher", "tma_unit"]
