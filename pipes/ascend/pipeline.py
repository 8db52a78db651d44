"""Intra-core pipelines on Ascend flags: the core :class:`~pipes.participants.PipelineOps` over
``set_flag``/``wait_flag`` event ids (or ``pipe_barrier`` when both sides run on one pipe).

Mapping of a k-stage pipeline from pipe P (producer) to pipe C (consumer), ``id[s] = base + s``:

============  ===========================  ==============
operation     emitted                      pipe it blocks
============  ===========================  ==============
prime         k × ``set_flag(C, P, id[s])``  —
acquire       ``wait_flag(C, P, id[s])``     P
commit        ``set_flag(P, C, id[s])``      —
wait          ``wait_flag(P, C, id[s])``     C
release       ``set_flag(C, P, id[s])``      —
drain         k × ``wait_flag(C, P, id[s])`` P
============  ===========================  ==============

Priming pretends every slot was released once, draining consumes the last release of every slot, so the
flags balance for any trip count, 0 and fewer than k included. Stage indices come from the core's
:class:`~pipes.state.PipelineState`; inside a loop traced once (TileLang, AscendC text) call
:meth:`FlagPipeline.seat` — or :func:`serial` — so the index is the expression ``i % k``.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError, SpecError
from ..participants import Consumer, Producer
from ..spec import Completion, PipelineSpec, Role
from ..state import CONSUMER_START_PHASE, PRODUCER_START_PHASE, PipelineState
from .backend import FlagSink
from .events import EventIdAllocator, EventIds
from .pairs import CoreType, Pipe, check_pair, check_pipe_on


@dataclass(frozen=True)
class FlagBinding:
    """Which pipes of which core a pipeline joins."""

    core: CoreType
    producer: Pipe
    consumer: Pipe

    @property
    def same_pipe(self) -> bool:
        return self.producer is self.consumer


class Lifecycle(enum.Enum):
    FRESH = "not primed yet"
    PRIMED = "primed"
    DRAINED = "drained"


class _FlagSignals:
    """The set_flag/wait_flag mapping of a two-pipe pipeline."""

    def __init__(self, sink: FlagSink, binding: FlagBinding, base: Any, ids: EventIds) -> None:
        self.sink, self.p, self.c = sink, binding.producer, binding.consumer
        self.base, self.single = base, len(ids) == 1

    def event_id(self, index: Any) -> Any:
        # A one-slot ring has one id whatever the index expression says.
        return self.base if self.single else self.base + index

    def acquire(self, index: Any) -> None:
        self.sink.wait_flag(self.c, self.p, self.event_id(index))

    def commit(self, index: Any) -> None:
        self.sink.set_flag(self.p, self.c, self.event_id(index))

    def wait(self, index: Any) -> None:
        self.sink.wait_flag(self.p, self.c, self.event_id(index))

    def release(self, index: Any) -> None:
        self.sink.set_flag(self.c, self.p, self.event_id(index))

    def prime(self, stages: int) -> None:
        for stage in range(stages):
            self.sink.set_flag(self.c, self.p, self.event_id(stage))

    def drain(self, stages: int) -> None:
        for stage in range(stages):
            self.sink.wait_flag(self.c, self.p, self.event_id(stage))


class _BarrierSignals:
    """One pipe on both sides: in-order issue, so a ``pipe_barrier`` orders a write before a read (commit)
    and a read before the next write of the slot (release); nothing to prime or drain."""

    def __init__(self, sink: FlagSink, pipe: Pipe) -> None:
        self.sink, self.pipe = sink, pipe

    def acquire(self, index: Any) -> None:
        pass

    def commit(self, index: Any) -> None:
        self.sink.pipe_barrier(self.pipe)

    def wait(self, index: Any) -> None:
        pass

    def release(self, index: Any) -> None:
        self.sink.pipe_barrier(self.pipe)

    def prime(self, stages: int) -> None:
        pass

    def drain(self, stages: int) -> None:
        pass


class SeatedHandles:
    """Hands out core Producer/Consumer handles on ``self`` and re-seats them from a loop variable.

    Used by :class:`FlagPipeline` and the cross-core pipeline sides; needs ``self.spec`` and
    ``self._handles`` (a list).
    """

    spec: PipelineSpec
    _handles: list[Producer | Consumer]

    def producer(self, role: Role | None = None) -> Producer:
        """A core :class:`~pipes.participants.Producer` on this pipeline (re-seated by :meth:`seat`)."""
        handle = Producer(self, role)
        self._handles.append(handle)
        return handle

    def consumer(self, role: Role | None = None) -> Consumer:
        """A core :class:`~pipes.participants.Consumer` on this pipeline (re-seated by :meth:`seat`)."""
        handle = Consumer(self, role)
        self._handles.append(handle)
        return handle

    def seat(self, iteration: Any) -> None:
        """Put every handle's cursors at ``iteration`` (an int or a traced loop variable).

        A loop traced once runs its body once in Python, so cursors advanced there would be wrong on the
        next trip; seating them from the loop variable gives index ``iteration % stages`` instead.
        """
        seat_handles(self._handles, iteration, self.spec.stages)


class FlagPipeline(SeatedHandles):
    """A k-stage producer→consumer pipeline between two pipes of one core, lowered to Ascend flags.

    Implements the core ``PipelineOps``; drive it with the core handles from :meth:`producer` and
    :meth:`consumer`. Ids come from ``ids`` when the pipeline is created and go back when it is drained.
    Use it as a context manager (prime on entry, drain on exit) or call :meth:`prime` / :meth:`drain`.
    """

    def __init__(
        self, spec: PipelineSpec, *, sink: FlagSink, binding: FlagBinding, ids: EventIdAllocator | None = None
    ) -> None:
        owner = f"FlagPipeline({spec.name!r})"
        if not isinstance(spec, PipelineSpec):
            raise SpecError(f"{owner}.spec = {spec!r} is invalid: allowed a PipelineSpec")
        if spec.completion is not Completion.FLAG:
            raise SpecError(f"{owner}: spec.completion = {spec.completion.name} is invalid: allowed FLAG")
        check_pipe_on(binding.core, binding.producer, "producer pipe")
        check_pipe_on(binding.core, binding.consumer, "consumer pipe")
        self.spec = spec
        self.binding = binding
        self.sink = sink
        self.lifecycle = Lifecycle.FRESH
        self._handles: list[Producer | Consumer] = []
        self._allocator = ids
        self.event_ids: EventIds | None = None
        if binding.same_pipe:
            self._signals: _FlagSignals | _BarrierSignals = _BarrierSignals(sink, binding.producer)
            return
        # The allocator's rules carry the target: its pair table decides what exists.
        check_pair(binding.core, binding.producer, binding.consumer, ids.rules.target if ids else None)
        if ids is None:
            raise SpecError(f"{owner}: ids = None is invalid: a two-pipe pipeline needs an EventIdAllocator")
        self.event_ids = ids.allocate(spec.name, binding.core, binding.producer, binding.consumer, spec.stages)
        base = sink.constant(self.constant_name, self.event_ids.base)
        self._signals = _FlagSignals(sink, binding, base, self.event_ids)

    @property
    def constant_name(self) -> str:
        """How printed code names this pipeline's first id (``SIG_L0AB``)."""
        return f"SIG_{self.spec.name.upper()}"

    @property
    def stages(self) -> int:
        return self.spec.stages

    # -- PipelineOps ---------------------------------------------------------------------------------
    def make_state(self, start_phase: int) -> PipelineState:
        return PipelineState(self.spec.stages, 0, start_phase, 0)

    def producer_acquire(self, state: PipelineState, token: Any = None) -> None:
        self._require(Lifecycle.PRIMED, "acquire")
        if not token:
            self._signals.acquire(state.index)

    def producer_try_acquire(self, state: PipelineState) -> Any:
        """Flags cannot be polled: always False, so :meth:`producer_acquire` does the blocking wait."""
        return False

    def producer_commit(self, state: PipelineState, *payload: Any) -> None:
        self._require(Lifecycle.PRIMED, "commit")
        self._signals.commit(state.index)

    def producer_tail(self, state: PipelineState) -> None:
        self.drain()

    def consumer_wait(self, state: PipelineState, token: Any = None) -> None:
        self._require(Lifecycle.PRIMED, "wait")
        if not token:
            self._signals.wait(state.index)

    def consumer_try_wait(self, state: PipelineState) -> Any:
        """Flags cannot be polled: always False, so :meth:`consumer_wait` does the blocking wait."""
        return False

    def consumer_release(self, state: PipelineState) -> None:
        self._require(Lifecycle.PRIMED, "release")
        self._signals.release(state.index)

    # -- priming and draining ------------------------------------------------------------------------
    def prime(self) -> None:
        """Pretend every slot was released once: ``stages`` × ``set_flag(C, P, id[s])``."""
        self._require(Lifecycle.FRESH, "prime")
        self._signals.prime(self.spec.stages)
        self.lifecycle = Lifecycle.PRIMED

    def drain(self) -> None:
        """Consume the last release of every slot (``stages`` × ``wait_flag(C, P, id[s])``), free the ids."""
        self._require(Lifecycle.PRIMED, "drain")
        self._signals.drain(self.spec.stages)
        self._close()

    def _close(self) -> None:
        self.lifecycle = Lifecycle.DRAINED
        if self.event_ids is not None and self._allocator is not None:
            self._allocator.free(self.event_ids)

    def __enter__(self) -> FlagPipeline:
        self.prime()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.drain()
        elif self.lifecycle is not Lifecycle.DRAINED:
            self._close()  # the kernel body failed: emit nothing more, but give the ids back

    def _require(self, wanted: Lifecycle, what: str) -> None:
        if self.lifecycle is not wanted:
            raise ProtocolError(
                f"pipeline {self.spec.name!r}: {what} needs the pipeline {wanted.value}, but it is "
                f"{self.lifecycle.value} (prime() before the loop, drain() after it, or use `with pipeline:`)"
            )

    def __repr__(self) -> str:
        b = self.binding
        ids = list(self.event_ids.ids) if self.event_ids else "pipe_barrier"
        return f"FlagPipeline({self.spec.name!r}, {b.producer.name}→{b.consumer.name} on {b.core.name}, ids={ids})"


def seat_handles(handles: list[Producer | Consumer], iteration: Any, stages: int) -> None:
    """Set core handles' cursors to where they stand at ``iteration`` (see :meth:`FlagPipeline.seat`)."""
    for handle in handles:
        if isinstance(handle, Producer):
            handle.acquire_state = PipelineState.at(iteration, stages, PRODUCER_START_PHASE)
            handle.commit_state = PipelineState.at(iteration, stages, PRODUCER_START_PHASE)
        else:
            handle.wait_state = PipelineState.at(iteration, stages, CONSUMER_START_PHASE)
            handle.release_state = PipelineState.at(iteration, stages, CONSUMER_START_PHASE)


def _role_names(producer: Pipe, consumer: Pipe) -> tuple[str, str]:
    if producer is consumer:
        return f"{producer.name.lower()}_producer", f"{consumer.name.lower()}_consumer"
    return producer.name.lower(), consumer.name.lower()


def flag_pipeline(
    sink: FlagSink,
    name: str,
    *,
    stages: int,
    producer: Pipe | str,
    consumer: Pipe | str,
    ids: EventIdAllocator | None,
    core: CoreType | str | None = None,
) -> FlagPipeline:
    """Build the spec (FLAG completion, one role per pipe) and the pipeline on ``sink``'s core."""
    producer, consumer = Pipe.parse(producer), Pipe.parse(consumer)
    core = CoreType.parse(core) if core is not None else sink.core
    producer_role, consumer_role = _role_names(producer, consumer)
    spec = PipelineSpec(name, stages, Role(producer_role), Role(consumer_role), Completion.FLAG)
    return FlagPipeline(spec, sink=sink, binding=FlagBinding(core, producer, consumer), ids=ids)


@contextlib.contextmanager
def primed(*pipelines: Any) -> Iterator[tuple[Any, ...]]:
    """Prime every pipeline on entry (in order) and drain them on exit (in reverse order)."""
    with contextlib.ExitStack() as stack:
        for pipeline in pipelines:
            stack.enter_context(pipeline)
        yield pipelines


def serial(builder: Any, count: Any, body: Callable[[Any], None], *pipelines: Any) -> None:
    """``builder.loop(count, body)`` with ``pipelines`` seated at each iteration before the body runs."""

    def iteration(i: Any) -> None:
        for pipeline in pipelines:
            pipeline.seat(i)
        body(i)

    builder.loop(count, iteration)
