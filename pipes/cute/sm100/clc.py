"""Cluster-launch-control fetch pipeline: a scheduler warp asks for the next tile, every warp reads the answer.

On Blackwell a persistent kernel can take work from clusters that have not started yet:
``clusterlaunchcontrol.try_cancel`` cancels one such cluster and writes a 16-byte *response* (the
cancelled cluster's first CTA id, or "none left") into shared memory of every CTA of the cluster,
completing its bytes on each CTA's mbarrier. This pipeline carries those responses in ``stages`` slots::

    spec = PipelineSpec("sched", stages=2,
                        producer=Role("clc", ArrivalUnit.ELECTED_PER_WARP),      # the scheduler warp, CTA 0
                        consumers=(Role("tma", ArrivalUnit.ELECTED_PER_WARP),
                                   Role("mma", ArrivalUnit.ELECTED_PER_WARP),
                                   Role("epi", ArrivalUnit.ELECTED_PER_WARP, 4)),
                        completion=Completion.TRANSACTION_BYTES, tx_bytes=CLC_RESPONSE_BYTES)
    clc = ClcFetchPipeline(spec, cluster_size=2)
    ...
    if layout.is_role("clc"):                  # only CTA 0's scheduler warp produces
        p = clc.producer()
        slot = p.acquire()     # wait empty[slot] (CTA 0); lane r arms full[slot] of CTA r with 16 bytes
        p.commit()             # one lane: clusterlaunchcontrol.try_cancel (multicast) → response[slot]
    if layout.is_role("epi"):                  # in every CTA
        c = clc.consumer("epi")
        slot = c.wait()
        m, n, l, valid = c.response(slot)      # clusterlaunchcontrol.query_cancel of the 16 bytes
        c.release()            # fence.proxy.async.shared::cta, then arrive (.release.cluster) on CTA 0's empty[slot]

A warp that needs the answer to decide whether to fetch again (the scheduler itself) is a consumer too,
under its own role name.

Counts: full barrier = 1 arrival per CTA (the scheduler's lane for that CTA) + 16 bytes; empty barrier
(only CTA 0's is used) = Σ consumer arrivals × ``cluster_size``: every CTA's consumers release there. The
declaration derives the consumer roles' ``peers`` from ``cluster_size``; leave ``Role.peers`` at 1.
The response is read with ordinary loads and rewritten by the next query through the async proxy, so each
release is preceded by ``fence.proxy.async.shared::cta``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32

from ...errors import SpecError
from ...spec import ArrivalUnit, Completion, PipelineSpec
from ..barriers import arrive_as_unit
from ..base import BoundPipeline, PipelineBase
from ..debug import DebugConfig, TraceEvent, Tracer
from ..state import CuteConsumer, CuteState
from .cluster import MAX_CLUSTER_CTAS
from .release import release_remote

__all__ = ["CLC_RESPONSE_BYTES", "ClcConsumer", "ClcFetchOps", "ClcFetchPipeline"]

#: Bytes ``clusterlaunchcontrol.try_cancel`` writes per response (one b128).
CLC_RESPONSE_BYTES = 16
_RESPONSE_WORDS = CLC_RESPONSE_BYTES // 8


class ClcFetchPipeline(PipelineBase):
    """Declaration of the CLC response pipeline (``cutlass.pipeline.PipelineClcFetchAsync``)."""

    completion = Completion.TRANSACTION_BYTES
    kind = "ClcFetchPipeline"

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        cluster_size: int = 1,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        owner = f"ClcFetchPipeline({getattr(spec, 'name', '?')!r})"
        if (
            isinstance(cluster_size, bool)
            or not isinstance(cluster_size, int)
            or not 1 <= cluster_size <= MAX_CLUSTER_CTAS
        ):
            raise SpecError(
                f"{owner}.cluster_size = {cluster_size!r} is invalid: allowed an int in [1, {MAX_CLUSTER_CTAS}]"
            )
        if isinstance(spec, PipelineSpec):
            spec = _with_cluster_peers(owner, spec, cluster_size)
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        producer = spec.producer
        # One thread can arm only its own CTA's barrier; a warp arms one CTA per lane.
        allowed = (ArrivalUnit.ELECTED_PER_WARP,)
        if cluster_size == 1:
            allowed += (ArrivalUnit.THREAD,)
        if producer.unit not in allowed or producer.count != 1 or producer.peers != 1:
            raise SpecError(
                f"{owner}: producer role {producer.name!r} = count={producer.count} × {producer.unit.name} is invalid: "
                f"allowed count=1 × {' or '.join(u.name for u in allowed)} (one scheduler warp in CTA 0, whose lane r "
                f"arms CTA r's full barrier: {cluster_size} CTA(s) need {cluster_size} lane(s))"
            )
        if spec.tx_bytes != CLC_RESPONSE_BYTES:
            raise SpecError(
                f"{owner}.tx_bytes = {spec.tx_bytes} is invalid: allowed {CLC_RESPONSE_BYTES} (one try_cancel "
                "response per stage)"
            )
        self._cluster_size = cluster_size

    @property
    def cluster_size(self) -> int:
        return self._cluster_size

    def extra_words(self) -> int:
        # One 16-byte response per stage, 16-byte aligned: one spare word to round the start up.
        return _RESPONSE_WORDS * self.stages + 1

    def bind(self, base: cute.Pointer) -> ClcFetchOps:
        return ClcFetchOps(self, base)


def _with_cluster_peers(owner: str, spec: PipelineSpec, cluster_size: int) -> PipelineSpec:
    roles = []
    for role in spec.consumers:
        if role.peers not in (1, cluster_size):
            raise SpecError(
                f"{owner}: consumer role {role.name!r} has peers={role.peers}, but the consumers of all "
                f"{cluster_size} CTA(s) release on CTA 0's empty barrier: leave Role.peers at 1, the declaration "
                "derives it from cluster_size="
            )
        roles.append(dataclasses.replace(role, peers=cluster_size))
    return dataclasses.replace(spec, consumers=tuple(roles))


class ClcConsumer(CuteConsumer):
    """Consumer handle: ``wait()`` → slot, ``response(slot)`` → ``(m, n, l, valid)``, ``release()``."""

    def response(self, slot: Any) -> tuple[Any, Any, Any, Any]:
        return self.ops.response(slot)


class ClcFetchOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of a :class:`ClcFetchPipeline` bound to shared memory."""

    decl: ClcFetchPipeline
    consumer_handle = ClcConsumer

    def response_ptr(self, slot: Any) -> cute.Pointer:
        """The 16-byte response of ``slot`` (shared memory, 16-byte aligned)."""
        first = cute.recast_ptr((self.base + 2 * self.stages).align(min_align=16), dtype=cutlass.Int128)
        return first + slot

    # --- producer (the scheduler warp of CTA 0) ---------------------------------------------------
    def producer_acquire(self, state: CuteState, token: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire")
        self.record(TraceEvent.ACQUIRE, state.index)
        if self.spec.producer.unit is ArrivalUnit.THREAD:
            self.full.arrive_expect_tx(state.index, CLC_RESPONSE_BYTES)
        else:
            _arm_every_cta(self.full, state.index, self.decl.cluster_size)

    def producer_commit(self, state: CuteState, *payload: Any) -> None:
        if payload:
            raise SpecError(f"ClcFetchPipeline {self.spec.name!r}: commit() takes no payload (got {len(payload)})")
        self.record(TraceEvent.COMMIT, state.index)
        if self.spec.producer.unit is ArrivalUnit.THREAD:
            cute.arch.issue_clc_query(self.full.ptr(state.index), self.response_ptr(state.index))
        else:
            with cute.arch.elect_one():
                cute.arch.issue_clc_query(self.full.ptr(state.index), self.response_ptr(state.index))

    # --- consumers (every CTA) ----------------------------------------------------------------------
    def response(self, slot: Any) -> tuple[Any, Any, Any, Any]:
        """``(m, n, l, valid)`` of the response in ``slot`` (the cancelled cluster's first CTA id)."""
        return cute.arch.clc_response(self.response_ptr(slot))

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        # The next try_cancel rewrites the response through the async proxy: order the generic reads first.
        cute.arch.fence_proxy("async.shared", space="cta")
        if self.decl.cluster_size > 1:  # CTA 0's scheduler writes the next response into this CTA too
            release_remote(self.empty, state.index, self._consumer().unit, Int32(0))
        else:
            arrive_as_unit(self.empty, state.index, self._consumer().unit)


@cute.jit
def _arm_every_cta(ring: cutlass.Constexpr, index: Any, cluster_size: cutlass.Constexpr) -> None:
    # Lane r arms CTA r's full barrier: the multicast response completes 16 bytes on each of them.
    lane = cute.arch.lane_idx()
    if lane < cluster_size:
        if cutlass.const_expr(cluster_size > 1):
            ring.arrive_expect_tx(index, CLC_RESPONSE_BYTES, peer=lane)
        else:
            ring.arrive_expect_tx(index, CLC_RESPONSE_BYTES)
