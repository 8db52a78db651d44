"""A model of Blackwell's tensor core for :mod:`pipes.check`: ``tcgen05.mma`` and ``tcgen05.commit`` issued by
one thread, executed later, in order, by the tensor core.

The MMA warp's program is a list of steps (:class:`UmmaStream`): its own waits and arrivals, and the
asynchronous operations it *issues* — MMAs (:class:`Mma`: read operand tiles from shared memory through the
async proxy, read and write an accumulator in tensor memory) and commits (:class:`Commit`: arrive on
mbarriers once every earlier MMA of this thread has completed). Two agents run it:

* the *issuer* (the MMA warp) performs the waits and arrivals itself, and for each MMA or commit rings a
  doorbell — a counter it signals with release semantics, so what it knew when it issued (the stage it
  waited for) is known to the operation;
* the *tensor core* (one per CTA of a ``cta_group::2`` pair) takes the operations in issue order: it waits
  for each one's doorbell, then performs it.
  An MMA's reads and writes thereby happen at any moment after its issue and before the next commit's
  arrival, and a commit arrives only after every earlier MMA has completed — the hardware's guarantee, and
  nothing more (MMAs issued after a commit are not covered by it).

Tensor memory is modelled as cells of its CTA (``tmem['acc'][0]``): the MMA's accumulate is a read and a
write, the epilogue's ``tcgen05.ld`` a read (:func:`tmem_read`). ``tcgen05.fence::before_thread_sync`` /
``after_thread_sync`` are not modelled: the barrier's acquire/release stands for them.

Use::

    stream = UmmaStream("mma", [
        Wait("full[0]", 0, completion=0),
        Mma(reads=(("a0", None), ("b0", None)), acc="acc", stage=0, accumulate=False, label=("t", 0)),
        Commit(("empty[0]",), completion=0),
        ...
    ])
    agents = [*stream.agents(), Agent("tma", ...), Agent("epi", ...)]
    Protocol(..., agents, barriers=..., counters=stream.counters())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError
from .context import Ctx, shared_cell
from .declarations import ModelCounter
from .ops import Read, Write
from .protocol import Agent
from .scope import Scope

__all__ = ["Arrive", "Commit", "Mma", "UmmaStream", "Wait", "tmem_cell", "tmem_read"]


def tmem_cell(name: str, stage: int, cta: int = 0) -> str:
    """The cell of accumulator ``name``'s ``stage`` in the tensor memory of CTA ``cta``."""
    return f"tmem[{name!r}][{stage}]" + ("" if cta == 0 else f"@cta{cta}")


def tmem_read(ctx: Ctx, name: str, stage: int) -> Any:
    """``tcgen05.ld`` of accumulator stage ``stage`` in this agent's CTA (the epilogue's read)."""
    return ctx.emit(Read(tmem_cell(name, stage, ctx.place.cta), ctx.name))


@dataclass(frozen=True)
class Wait:
    """The issuer waits on one of its CTA's mbarriers (``parity``, meant for round ``completion``)."""

    barrier: str
    parity: int
    completion: int | None = None


@dataclass(frozen=True)
class Arrive:
    """The issuer arrives on an mbarrier itself (not through a commit)."""

    barrier: str
    completion: int | None = None
    scope: Scope = Scope.CTA


@dataclass(frozen=True)
class Mma:
    """A ``tcgen05.mma``: reads the operand ``reads`` — ``(buffer, part, cta)`` shared-memory cells, the cta
    defaulting to the issuer's — and accumulates into ``acc[stage]`` of each CTA in ``acc_ctas`` (a 2-CTA MMA
    writes both halves of the pair). ``accumulate=False`` overwrites the accumulator (the first k block).
    ``label`` is what the accumulator holds afterwards (the epilogue checks it)."""

    reads: tuple[tuple[Any, ...], ...]
    acc: str
    stage: int
    accumulate: bool
    label: Any
    acc_ctas: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Commit:
    """A ``tcgen05.commit``: one arrival on each of ``barriers`` (a multicast mask when more than one) once every
    earlier MMA of the issuer has completed. A barrier of another CTA is arrived on at cluster scope."""

    barriers: tuple[str, ...]
    completion: int | None = None


Step = Wait | Arrive | Mma | Commit


class UmmaStream:
    """One MMA warp's program: the steps it runs and the asynchronous operations it issues, in order.

    ``pair``: the CTAs whose tensor cores execute the operations (``cta_group::2``: the leader's CTA first,
    then its peer; default: the issuer's CTA alone). Each CTA's tensor core writes its own half of the
    accumulator, and a commit arrives on a CTA's barrier from that CTA's tensor core once *both* tensor
    cores have completed the earlier operations (they meet on counters), as the pair's commit does.
    """

    def __init__(
        self, issuer: str, steps: Sequence[Step], *, cta: int = 0, cluster: int = 0, pair: tuple[int, ...] | None = None
    ) -> None:
        if not isinstance(issuer, str) or not issuer.isidentifier():
            raise ProtocolError(f"UmmaStream.issuer = {issuer!r} is invalid: allowed an identifier (the agent name)")
        for step in steps:
            if not isinstance(step, (Wait, Arrive, Mma, Commit)):
                raise ProtocolError(
                    f"UmmaStream({issuer!r}): step {step!r} is invalid: allowed Wait, Arrive, Mma, Commit"
                )
        pair = (cta,) if pair is None else tuple(pair)
        if not 1 <= len(pair) <= 2 or pair[0] != cta or len(set(pair)) != len(pair):
            raise ProtocolError(
                f"UmmaStream({issuer!r}).pair = {pair!r} is invalid: allowed (cta,) or (cta, peer) — the issuer's CTA "
                f"{cta} leads its pair"
            )
        self.issuer = issuer
        self.steps = tuple(steps)
        self.cta = cta
        self.cluster = cluster
        self.pair = pair

    def tensor_core(self, cta: int | None = None) -> str:
        """The name of the agent that executes the issued operations in CTA ``cta`` (default: the issuer's)."""
        cta = self.cta if cta is None else cta
        return f"{self.issuer}_tc" if len(self.pair) == 1 else f"{self.issuer}_tc{cta}"

    @property
    def operations(self) -> tuple[Mma | Commit, ...]:
        return tuple(s for s in self.steps if isinstance(s, (Mma, Commit)))

    def doorbell(self) -> ModelCounter:
        """The counter the issuer rings once per issued operation."""
        return ModelCounter(f"{self.issuer}.issued")

    def counters(self) -> list[ModelCounter]:
        """Every counter the stream uses (declare them in the protocol): the doorbell, and for a pair the
        counters on which the two tensor cores meet at each commit."""
        meets = [ModelCounter(f"{self.tensor_core(c)}.done") for c in self.pair] if len(self.pair) > 1 else []
        return [self.doorbell(), *meets]

    def agents(self, barrier_cta: Callable[[str], int] | None = None) -> tuple[Agent, ...]:
        """The issuer and one tensor core per CTA of the pair. ``barrier_cta(name)``: the CTA a barrier lives in
        (default: the issuer's); a commit's arrival on it is made by that CTA's tensor core."""
        where = barrier_cta or (lambda _name: self.cta)
        for op in self.operations:
            if isinstance(op, Commit):
                for barrier in op.barriers:
                    if where(barrier) not in self.pair:
                        raise ProtocolError(
                            f"UmmaStream({self.issuer!r}): a commit to {barrier} (CTA {where(barrier)}) is outside the "
                            f"pair {self.pair}: only the CTAs whose tensor cores run the MMAs are modelled"
                        )
        issuer = Agent(self.issuer, self._issue, cta=self.cta, cluster=self.cluster)
        cores = tuple(
            Agent(self.tensor_core(c), lambda ctx, c=c: self._execute(ctx, c, where), cta=c, cluster=self.cluster)
            for c in self.pair
        )
        return (issuer, *cores)

    def _issue(self, ctx: Ctx) -> None:
        bell = self.doorbell().name
        for step in self.steps:
            if isinstance(step, Wait):
                ctx.wait(step.barrier, step.parity, completion=step.completion)
            elif isinstance(step, Arrive):
                ctx.arrive(step.barrier, 1, completion=step.completion, scope=step.scope)
            else:
                ctx.signal(bell)  # tcgen05.mma / tcgen05.commit: handed to the tensor core, in order

    def _execute(self, ctx: Ctx, cta: int, barrier_cta: Callable[[str], int]) -> None:
        bell = self.doorbell().name
        commits = 0
        for issued, op in enumerate(self.operations, start=1):
            ctx.wait_counter(bell, at_least=issued)
            if isinstance(op, Mma):
                for operand in op.reads:
                    buffer, part, *home = operand
                    cell = shared_cell(buffer, part, home[0] if home else self.cta)
                    ctx.emit(Read(cell, ctx.name, async_proxy=True))
                if cta in op.acc_ctas:
                    cell = tmem_cell(op.acc, op.stage, cta)
                    if op.accumulate:
                        ctx.emit(Read(cell, ctx.name))
                    ctx.emit(Write(cell, op.label, ctx.name))
                continue
            commits += 1
            if len(self.pair) > 1:  # the pair's commit: both tensor cores are done with the earlier operations
                ctx.signal(f"{self.tensor_core(cta)}.done")
                for other in self.pair:
                    if other != cta:
                        ctx.wait_counter(f"{self.tensor_core(other)}.done", at_least=commits)
            for barrier in op.barriers:
                if barrier_cta(barrier) == cta:
                    ctx.arrive(barrier, 1, completion=op.completion)
