"""TMA load → UMMA pipeline (Blackwell mainloop): TMA fills a stage, ``tcgen05.mma`` reads it.

Use::

    cluster = UmmaCluster(cluster_m=2, cluster_n=1, cta_group=2)
    spec = PipelineSpec("mainloop", stages=4,
                        producer=Role("tma", ArrivalUnit.ELECTED_PER_WARP),
                        consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARP),
                        completion=Completion.TRANSACTION_BYTES, tx_bytes=pair_a_bytes + pair_b_bytes)
    ab = TmaUmmaPipeline(spec, cluster=cluster)
    ...
    if layout.is_role("tma"):                  # every CTA loads its half of the pair's tiles
        p = ab.producer()
        slot = p.acquire()                     # wait empty[slot]; the leader arms full[slot] with tx_bytes
        cute.copy(tma_a, ..., tma_bar_ptr=p.barrier(slot), mcast_mask=...)
        p.commit()                             # no code: the TMA bytes complete the phase
        p.tail()
    if layout.is_role("mma"):
        if cluster.is_leader():                # the pair's leader issues every MMA
            c = ab.consumer()
            slot = c.wait()
            cute.gemm(tiled_mma, acc, sA[..., slot], sB[..., slot], acc)
            c.release()                        # tcgen05.commit → empty[slot] of every CTA that shares it

The consumer's release is a ``tcgen05.commit``: it arrives on the empty barrier when the MMAs this thread
issued so far have *completed*, i.e. when they have read the stage, not when the thread executes it. Call
it after the stage's last ``cute.gemm``, from the thread that issued them (the same elected lane). With a
cluster the commit is multicast to every CTA whose stage those MMAs read: both CTAs of the pair and, with
multicast loads, every CTA that shares the A or B tile. Each CTA's empty barrier therefore counts
``cluster.mma_peers`` arrivals per stage; the declaration derives the consumer role's ``peers`` from
``cluster`` (leave ``Role.peers`` at 1).

Counts: full barrier = 1 arrival (the leader's ``arrive.expect_tx``; with ``cta_group=2`` the follower's
TMA loads complete their bytes on the leader's barrier, so ``tx_bytes`` is the pair's A + B bytes) + bytes.
Empty barrier = ``cluster.mma_peers`` commits. The consumer role is one elected thread of the MMA warp
(``ELECTED_PER_WARP`` × 1, or ``THREAD`` × 1).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

from ...errors import SpecError
from ...spec import ArrivalUnit, Completion, PipelineSpec
from ..base import BoundPipeline, PipelineBase
from ..debug import DebugConfig, TraceEvent, Tracer
from ..state import CuteState
from ..tma_load import TmaLoadProducer
from .cluster import UmmaCluster
from .commit import check_issuer, umma_commit

__all__ = ["TmaUmmaOps", "TmaUmmaPipeline"]

_ONE_THREAD_UNITS = (ArrivalUnit.THREAD, ArrivalUnit.ELECTED_PER_WARP)


class TmaUmmaPipeline(PipelineBase):
    """Declaration of a TMA-filled, UMMA-consumed pipeline (``cutlass.pipeline.PipelineTmaUmma``)."""

    completion = Completion.TRANSACTION_BYTES
    kind = "TmaUmmaPipeline"

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        cluster: UmmaCluster | None = None,
        extra_tx_bytes: int = 0,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        owner = f"TmaUmmaPipeline({getattr(spec, 'name', '?')!r})"
        cluster = UmmaCluster() if cluster is None else cluster
        if not isinstance(cluster, UmmaCluster):
            raise SpecError(f"{owner}.cluster = {cluster!r} is invalid: allowed None or a pipes.cute.sm100.UmmaCluster")
        if isinstance(spec, PipelineSpec):
            spec = _with_commit_peers(owner, spec, cluster)
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        producer = spec.producer
        if producer.unit not in _ONE_THREAD_UNITS or producer.count != 1 or producer.peers != 1:
            raise SpecError(
                f"{owner}: producer role {producer.name!r} = count={producer.count} × {producer.unit.name} × "
                f"peers={producer.peers} makes {producer.arrivals} arrival(s) per stage: allowed exactly 1 "
                "(count=1 × THREAD or ELECTED_PER_WARP): one thread of the leader arms the full barrier with the bytes"
            )
        check_issuer(owner, self.spec)
        if isinstance(extra_tx_bytes, bool) or not isinstance(extra_tx_bytes, int) or extra_tx_bytes < 0:
            raise SpecError(f"{owner}.extra_tx_bytes = {extra_tx_bytes!r} is invalid: allowed an int >= 0")
        if spec.tx_bytes + extra_tx_bytes >= 1 << 20:
            raise SpecError(
                f"{owner}: tx_bytes + extra_tx_bytes = {spec.tx_bytes} + {extra_tx_bytes} is invalid: "
                "allowed < 2^20 (the mbarrier transaction count)"
            )
        self.cluster = cluster
        self.extra_tx_bytes = extra_tx_bytes

    @property
    def cluster_size(self) -> int:
        return self.cluster.size

    @property
    def stage_tx_bytes(self) -> int:
        return self.spec.tx_bytes + self.extra_tx_bytes

    def bind(self, base: cute.Pointer) -> TmaUmmaOps:
        return TmaUmmaOps(self, base)


def _with_commit_peers(owner: str, spec: PipelineSpec, cluster: UmmaCluster) -> PipelineSpec:
    """``spec`` whose consumer role counts one arrival per MMA issuer that releases this CTA's stage."""
    if len(spec.consumers) != 1:
        raise SpecError(
            f"{owner}: {len(spec.consumers)} consumer roles {[c.name for c in spec.consumers]}: allowed exactly 1 "
            "(the MMA warp; its tcgen05.commit is the only release of a stage)"
        )
    role = spec.consumers[0]
    peers = cluster.mma_peers
    if role.peers not in (1, peers):
        raise SpecError(
            f"{owner}: consumer role {role.name!r} has peers={role.peers}, but {cluster.describe()} has "
            f"{cluster.a_sharers} + {cluster.b_sharers} − 1 = {peers} MMA issuer(s) whose commit releases each stage: "
            "leave Role.peers at 1, the declaration derives it from cluster="
        )
    if role.peers == peers:
        return spec
    return dataclasses.replace(spec, consumers=(dataclasses.replace(role, peers=peers),))


class TmaUmmaOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of a :class:`TmaUmmaPipeline` bound to shared memory."""

    decl: TmaUmmaPipeline
    producer_handle = TmaLoadProducer

    def producer_acquire(self, state: CuteState, token: Any = None, extra_tx_bytes: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire")
        self.record(TraceEvent.ACQUIRE, state.index)
        nbytes = self.decl.stage_tx_bytes
        if extra_tx_bytes is not None:
            nbytes = nbytes + extra_tx_bytes
        elected = self.spec.producer.unit is ArrivalUnit.ELECTED_PER_WARP
        if self.decl.cluster.pair:
            _arm_if_leader(self, state.index, nbytes, elected)
        else:
            _arm(self, state.index, nbytes, elected)

    def producer_commit(self, state: CuteState, *payload: Any) -> None:
        if payload:
            raise SpecError(f"TmaUmmaPipeline {self.spec.name!r}: commit() takes no payload (got {len(payload)})")
        # The TMA engine completes the phase when the armed bytes have landed; nothing to emit.
        self.record(TraceEvent.COMMIT, state.index)

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        cluster = self.decl.cluster
        group = tcgen05.CtaGroup.TWO if cluster.pair else tcgen05.CtaGroup.ONE
        umma_commit(self.empty.ptr(state.index), cluster.commit_mask(), group, self._consumer().unit)


def _arm(ops: TmaUmmaOps, index: Any, nbytes: Any, elected: bool) -> None:
    if elected:
        with cute.arch.elect_one():
            ops.full.arrive_expect_tx(index, nbytes)
    else:
        ops.full.arrive_expect_tx(index, nbytes)


@cute.jit
def _arm_if_leader(ops: cutlass.Constexpr, index: Any, nbytes: Any, elected: cutlass.Constexpr) -> None:
    # The follower's loads complete their bytes on the leader's barrier: only the leader arms.
    if ops.decl.cluster.is_leader():
        _arm(ops, index, nbytes, elected)
