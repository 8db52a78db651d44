"""UMMA → epilogue pipeline through tensor-memory accumulator stages (Blackwell).

The MMA warp accumulates one output tile into accumulator stage ``s`` of tensor memory (TMEM) and
commits it; the epilogue warps read it back (``tcgen05.ld``), store the tile and release the stage, while
the MMA warp already accumulates the next tile into the other stage. Use::

    cluster = UmmaCluster(cluster_m=2, cta_group=2)
    spec = PipelineSpec("acc", stages=2,
                        producer=Role("mma", ArrivalUnit.ELECTED_PER_WARP),
                        consumers=Role("epi", ArrivalUnit.ELECTED_PER_WARP, count=4))   # 4 epilogue warps
    acc = UmmaAccPipeline(spec, cluster=cluster)
    ...
    if layout.is_role("mma"):
        if cluster.is_leader():                     # the pair's leader issues the MMAs
            p = acc.producer()
            for tile in ...:
                stage = p.acquire()                 # wait until the epilogue released the stage
                ...k loop: cute.gemm(tiled_mma, tAcc[..., stage], ...)...
                p.commit()                          # tcgen05.commit → full[stage] (both CTAs of the pair)
            p.tail()
    if layout.is_role("epi"):                       # in both CTAs of the pair
        c = acc.consumer()
        for tile in ...:
            stage = c.wait()                        # the MMAs into the stage have completed
            ...tcgen05.ld the stage, convert, store...
            c.release()                             # every CTA's epilogue releases on the leader's empty[stage]

Completion is ``Completion.ARRIVAL``, and the producer's one arrival per stage is a ``tcgen05.commit``: it
lands when the MMAs issued so far have *completed* (written the accumulator), not when the MMA warp runs
it, so the epilogue's wait also orders its TMEM reads after the MMAs' TMEM writes. With ``cta_group=2``
the commit is multicast to both CTAs of the pair (each holds half of the accumulator), and both CTAs'
epilogue warps release on the *leader's* empty barrier, at cluster scope (:mod:`.release`): the
declaration derives each consumer role's ``peers`` (= ``cta_group``) from ``cluster``; leave
``Role.peers`` at 1.

Counts: full barrier = 1 (the commit); empty barrier = Σ consumer arrivals × ``cta_group``. The producer
role is one committing thread (``ELECTED_PER_WARP`` × 1 or ``THREAD`` × 1). In a pair the follower CTA's
full barrier is arrived on by the leader's commit and its empty barrier is never used; the MMA-side calls
belong in the leader only (``if cluster.is_leader():``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

from ...errors import ProtocolError, SpecError
from ...spec import Completion, PipelineSpec
from ..barriers import arrive_as_unit
from ..base import BoundPipeline, PipelineBase
from ..debug import DebugConfig, TraceEvent, Tracer
from ..state import CuteState
from .cluster import UmmaCluster
from .commit import check_issuer, umma_commit
from .release import release_remote

__all__ = ["UmmaAccOps", "UmmaAccPipeline"]


class UmmaAccPipeline(PipelineBase):
    """Declaration of a UMMA-committed accumulator pipeline (``cutlass.pipeline.PipelineUmmaAsync``)."""

    completion = Completion.ARRIVAL
    kind = "UmmaAccPipeline"

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        cluster: UmmaCluster | None = None,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        owner = f"UmmaAccPipeline({getattr(spec, 'name', '?')!r})"
        cluster = UmmaCluster() if cluster is None else cluster
        if not isinstance(cluster, UmmaCluster):
            raise SpecError(f"{owner}.cluster = {cluster!r} is invalid: allowed None or a pipes.cute.sm100.UmmaCluster")
        if isinstance(spec, PipelineSpec):
            spec = _with_pair_peers(owner, spec, cluster)
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        if spec.producer.peers != 1:
            raise SpecError(
                f"{owner}: producer role {spec.producer.name!r} has peers={spec.producer.peers}: allowed 1 (the "
                "commit's multicast to the pair is one arrival on each CTA's own full barrier)"
            )
        check_issuer(owner, self.spec, self.spec.producer)
        self.cluster = cluster

    @property
    def cluster_size(self) -> int:
        return self.cluster.size

    def bind(self, base: cute.Pointer) -> UmmaAccOps:
        return UmmaAccOps(self, base)


def _with_pair_peers(owner: str, spec: PipelineSpec, cluster: UmmaCluster) -> PipelineSpec:
    """``spec`` whose consumer roles release from every CTA of the pair: ``peers = cta_group``."""
    roles = []
    for role in spec.consumers:
        if role.peers not in (1, cluster.cta_group):
            raise SpecError(
                f"{owner}: consumer role {role.name!r} has peers={role.peers}, but with cta_group="
                f"{cluster.cta_group} the epilogues of {cluster.cta_group} CTA(s) release each accumulator stage: "
                "leave Role.peers at 1, the declaration derives it from cluster="
            )
        roles.append(dataclasses.replace(role, peers=cluster.cta_group))
    return dataclasses.replace(spec, consumers=tuple(roles))


class UmmaAccOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of a :class:`UmmaAccPipeline` bound to shared memory."""

    decl: UmmaAccPipeline

    def producer_acquire(self, state: CuteState, token: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire")
        self.record(TraceEvent.ACQUIRE, state.index)

    def producer_commit(self, state: CuteState, *payload: Any) -> None:
        if payload:
            raise ProtocolError(
                f"UmmaAccPipeline {self.spec.name!r}: commit() takes no payload (got {len(payload)} value(s)); "
                "the MMAs write the accumulator stage"
            )
        self.record(TraceEvent.COMMIT, state.index)
        cluster = self.decl.cluster
        group = tcgen05.CtaGroup.TWO if cluster.pair else tcgen05.CtaGroup.ONE
        umma_commit(self.full.ptr(state.index), cluster.pair_mask(), group, self.spec.producer.unit)

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        cluster = self.decl.cluster
        if cluster.pair:  # hand the stage back to the leader's MMAs, which rewrite this CTA's half too
            release_remote(self.empty, state.index, self._consumer().unit, cluster.leader_rank())
        else:
            arrive_as_unit(self.empty, state.index, self._consumer().unit)
