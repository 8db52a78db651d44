"""Async pipeline (Completion.ARRIVAL): producer threads write a stage themselves and arrive.

Use::

    spec = PipelineSpec("tiles", stages=4,
                        producer=Role("writer", ArrivalUnit.ELECTED_PER_WARP, count=2),
                        consumers=Role("reader", ArrivalUnit.WARP, count=1))
    pipe = AsyncPipeline(spec)
    (ops,) = init_pipelines((pipe,), storage_ptr, layout=layout)
    if layout.is_role("writer"):
        p = pipe.producer()
        for k in cutlass.range(n):
            slot = p.acquire()          # wait until the slot is empty
            ...write stage `slot`...
            p.commit()                  # arrive on full[slot] (one elected lane per warp here)
        p.tail()                        # wait until every release has landed
    if layout.is_role("reader"):
        c = pipe.consumer()
        for k in cutlass.range(n):
            slot = c.wait()
            ...read stage `slot`...
            c.release()                 # every thread of the warp arrives on empty[slot]

Barrier counts: full = producer.arrivals, empty = sum of consumer arrivals (``spec.full_arrivals`` /
``spec.empty_arrivals``). ``fence_async_shared=True`` adds ``fence.proxy.async.shared::cta`` in each
producer thread before its arrival, for consumers that read the stage through the async proxy
(wgmma, TMA store).
"""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute

from ..errors import ProtocolError, SpecError
from ..spec import Completion, PipelineSpec
from .barriers import arrive_as_unit
from .base import BoundPipeline, PipelineBase
from .debug import DebugConfig, TraceEvent, Tracer
from .state import CuteState

__all__ = ["AsyncOps", "AsyncPipeline"]


class AsyncPipeline(PipelineBase):
    """Declaration of an arrival-completed pipeline (threads or warps on both sides)."""

    completion = Completion.ARRIVAL
    kind = "AsyncPipeline"

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        fence_async_shared: bool = False,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        for role in (spec.producer, *spec.consumers):
            if role.peers != 1:
                raise SpecError(
                    f"AsyncPipeline({spec.name!r}): role {role.name!r} has peers={role.peers}: allowed 1 "
                    "(remote arrivals across a cluster belong to TmaLoadPipeline's multicast release)"
                )
        self.fence_async_shared = bool(fence_async_shared)

    def bind(self, base: cute.Pointer) -> AsyncOps:
        return AsyncOps(self, base)


class AsyncOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of an :class:`AsyncPipeline` bound to shared memory."""

    decl: AsyncPipeline

    def producer_acquire(self, state: CuteState, token: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire")
        self.record(TraceEvent.ACQUIRE, state.index)

    def producer_commit(self, state: CuteState, *payload: Any) -> None:
        if payload:
            raise ProtocolError(
                f"AsyncPipeline {self.spec.name!r}: commit() takes no payload (got {len(payload)} value(s)); "
                "write data into the stage's buffer before commit"
            )
        self.record(TraceEvent.COMMIT, state.index)
        if self.decl.fence_async_shared:
            cute.arch.fence_proxy("async.shared", space="cta")
        arrive_as_unit(self.full, state.index, self.spec.producer.unit)

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        arrive_as_unit(self.empty, state.index, self._consumer().unit)
