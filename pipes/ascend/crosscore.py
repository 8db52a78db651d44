"""Cross-core pipelines (cube AIC ↔ vector AIV) on cross-core flags, through a GM workspace.

The attention pattern: the cube core writes a tile into workspace slot s and signals "full"; the vector
cores (two per cube core on A2/A3, mode 2) copy it out and signal "empty" so the cube may overwrite it.
Each slot has its own full id and its own empty id, so a flag's counter only ever holds 0 or 1 — a set
that finds the counter already non-zero means a signal would be lost (merged), and the simulator
reports it.

============  ==========================================  ====================
operation     emitted                                     where
============  ==========================================  ====================
prime         k × ``set_cross_flag(C, empty[s])``         consumer core, pipe C
acquire       ``wait_cross_flag(P, empty[s])``            producer core, pipe P
commit        ``set_cross_flag(P, full[s])``              producer core, pipe P
wait          ``wait_cross_flag(C, full[s])``             consumer core, pipe C
release       ``set_cross_flag(C, empty[s])``             consumer core, pipe C
drain         k × ``wait_cross_flag(P, empty[s])``        producer core, pipe P
============  ==========================================  ====================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError, SpecError
from ..participants import Consumer, Producer
from ..spec import Completion, PipelineSpec, Role
from ..state import PipelineState
from .backend import FlagSink
from .events import EventIdAllocator, EventIds
from .pairs import CoreType, Pipe, check_pipe_on
from .pipeline import Lifecycle, SeatedHandles


@dataclass(frozen=True)
class CrossCoreBinding:
    """The producer's core and pipe, the consumer's core and pipe, and the cross-core flag mode."""

    producer_core: CoreType
    producer_pipe: Pipe
    consumer_core: CoreType
    consumer_pipe: Pipe
    mode: int = 2
    """2: one cube core with its vector cores (a set from the cube reaches each of them; the cube's wait
    completes once every vector core has set)."""


class CrossCorePipeline:
    """A k-stage pipeline whose producer and consumer run on different core types.

    Create it once, then take :meth:`producer_side` on the producer core's builder and
    :meth:`consumer_side` on each consumer core's builder; each side is a core ``PipelineOps``.
    """

    def __init__(self, spec: PipelineSpec, *, binding: CrossCoreBinding, ids: EventIdAllocator) -> None:
        owner = f"CrossCorePipeline({spec.name!r})"
        if spec.completion is not Completion.FLAG:
            raise SpecError(f"{owner}: spec.completion = {spec.completion.name} is invalid: allowed FLAG")
        if binding.producer_core is binding.consumer_core:
            raise SpecError(
                f"{owner}: producer and consumer both on {binding.producer_core.name}: a cross-core pipeline joins "
                "AIC and AIV (use FlagPipeline within one core)"
            )
        check_pipe_on(binding.producer_core, binding.producer_pipe, "producer pipe")
        check_pipe_on(binding.consumer_core, binding.consumer_pipe, "consumer pipe")
        if binding.mode != 2:
            raise SpecError(f"{owner}: mode = {binding.mode} is invalid: allowed 2 (cube core with its vector cores)")
        self.spec = spec
        self.binding = binding
        self._allocator = ids
        self.full_ids: EventIds = ids.allocate_cross(spec.name, spec.stages, "full")
        try:
            self.empty_ids: EventIds = ids.allocate_cross(spec.name, spec.stages, "empty")
        except Exception:
            ids.free(self.full_ids)
            raise
        self.drained = False

    def producer_side(self, sink: FlagSink) -> CrossCoreSide:
        return CrossCoreSide(self, sink, producer=True)

    def consumer_side(self, sink: FlagSink) -> CrossCoreSide:
        return CrossCoreSide(self, sink, producer=False)

    def _free(self) -> None:
        if not self.drained:
            self.drained = True
            self._allocator.free(self.full_ids)
            self._allocator.free(self.empty_ids)

    def __repr__(self) -> str:
        b = self.binding
        return (
            f"CrossCorePipeline({self.spec.name!r}, {b.producer_core.name}/{b.producer_pipe.name}→"
            f"{b.consumer_core.name}/{b.consumer_pipe.name}, full={list(self.full_ids.ids)}, "
            f"empty={list(self.empty_ids.ids)})"
        )


class CrossCoreSide(SeatedHandles):
    """One core's half of a :class:`CrossCorePipeline`, as core ``PipelineOps``.

    The consumer side primes when its ``with`` block opens (or on :meth:`prime`); the producer side
    drains when its ``with`` block closes (or on :meth:`drain`).
    """

    def __init__(self, pipeline: CrossCorePipeline, sink: FlagSink, *, producer: bool) -> None:
        b = pipeline.binding
        core = b.producer_core if producer else b.consumer_core
        if sink.core is not core:
            side = "producer" if producer else "consumer"
            raise SpecError(
                f"{pipeline.spec.name!r} {side} side: builder core = {sink.core.name} is invalid: allowed {core.name}"
            )
        self.pipeline = pipeline
        self.spec = pipeline.spec
        self.sink = sink
        self.is_producer = producer
        self.pipe = b.producer_pipe if producer else b.consumer_pipe
        self.mode = b.mode
        self.lifecycle = Lifecycle.PRIMED if producer else Lifecycle.FRESH
        self._full = sink.constant(f"XSIG_{self.spec.name.upper()}_FULL", pipeline.full_ids.base)
        self._empty = sink.constant(f"XSIG_{self.spec.name.upper()}_EMPTY", pipeline.empty_ids.base)
        self._handles: list[Producer | Consumer] = []

    def _id(self, base: Any, index: Any) -> Any:
        return base if self.spec.stages == 1 else base + index

    def _require(self, producer: bool, what: str) -> None:
        if self.is_producer is not producer:
            side = "producer" if self.is_producer else "consumer"
            raise ProtocolError(f"cross-core pipeline {self.spec.name!r}: {what} on the {side} side")
        if self.lifecycle is not Lifecycle.PRIMED:
            raise ProtocolError(
                f"cross-core pipeline {self.spec.name!r}: {what} needs the side primed, "
                f"but it is {self.lifecycle.value}"
            )

    # -- PipelineOps ---------------------------------------------------------------------------------
    def make_state(self, start_phase: int) -> PipelineState:
        return PipelineState(self.spec.stages, 0, start_phase, 0)

    def producer_acquire(self, state: PipelineState, token: Any = None) -> None:
        self._require(True, "acquire")
        if not token:
            self.sink.wait_cross_flag(self.pipe, self._id(self._empty, state.index))

    def producer_try_acquire(self, state: PipelineState) -> Any:
        return False

    def producer_commit(self, state: PipelineState, *payload: Any) -> None:
        self._require(True, "commit")
        self.sink.set_cross_flag(self.pipe, self._id(self._full, state.index), self.mode)

    def producer_tail(self, state: PipelineState) -> None:
        self.drain()

    def consumer_wait(self, state: PipelineState, token: Any = None) -> None:
        self._require(False, "wait")
        if not token:
            self.sink.wait_cross_flag(self.pipe, self._id(self._full, state.index))

    def consumer_try_wait(self, state: PipelineState) -> Any:
        return False

    def consumer_release(self, state: PipelineState) -> None:
        self._require(False, "release")
        self.sink.set_cross_flag(self.pipe, self._id(self._empty, state.index), self.mode)

    # -- priming, draining ---------------------------------------------------------------------------
    def prime(self) -> None:
        """Consumer side: signal every slot empty once (``stages`` × ``set_cross_flag(C, empty[s])``)."""
        if self.is_producer or self.lifecycle is not Lifecycle.FRESH:
            raise ProtocolError(f"cross-core pipeline {self.spec.name!r}: prime() belongs to a fresh consumer side")
        for stage in range(self.spec.stages):
            self.sink.set_cross_flag(self.pipe, self._id(self._empty, stage), self.mode)
        self.lifecycle = Lifecycle.PRIMED

    def drain(self) -> None:
        """Producer side: take every slot's last empty signal (``stages`` × ``wait_cross_flag(P, empty[s])``)."""
        if not self.is_producer or self.lifecycle is not Lifecycle.PRIMED:
            raise ProtocolError(
                f"cross-core pipeline {self.spec.name!r}: drain() belongs to the producer side, once "
                f"(it is the {'producer' if self.is_producer else 'consumer'} side, {self.lifecycle.value})"
            )
        for stage in range(self.spec.stages):
            self.sink.wait_cross_flag(self.pipe, self._id(self._empty, stage))
        self.lifecycle = Lifecycle.DRAINED
        self.pipeline._free()

    def __enter__(self) -> CrossCoreSide:
        if not self.is_producer:
            self.prime()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.is_producer and exc_type is None:
            self.drain()


def cross_core_pipeline(
    name: str,
    *,
    stages: int,
    producer: tuple[CoreType | str, Pipe | str],
    consumer: tuple[CoreType | str, Pipe | str],
    ids: EventIdAllocator,
    mode: int = 2,
) -> CrossCorePipeline:
    """Build the spec (FLAG completion) and a cross-core pipeline, e.g. ``producer=("AIC", "FIX")``."""
    p_core, p_pipe = CoreType.parse(producer[0]), Pipe.parse(producer[1])
    c_core, c_pipe = CoreType.parse(consumer[0]), Pipe.parse(consumer[1])
    spec = PipelineSpec(
        name,
        stages,
        Role(f"{p_core.name.lower()}_{p_pipe.name.lower()}"),
        Role(f"{c_core.name.lower()}_{c_pipe.name.lower()}"),
        Completion.FLAG,
    )
    return CrossCorePipeline(spec, binding=CrossCoreBinding(p_core, p_pipe, c_core, c_pipe, mode), ids=ids)
