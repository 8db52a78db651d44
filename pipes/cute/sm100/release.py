"""A release on another CTA's barrier, at cluster scope: the hand-back of a stage read in this CTA.

Both CTAs of a ``cta_group::2`` pair release an accumulator stage on the *leader's* barrier, and every CTA
of a cluster releases a CLC response on CTA 0's. The arrival hands the stage back to a writer in another
CTA (the leader's MMAs rewrite this CTA's half of the accumulator; the next response is written here), so
it must order this CTA's reads before that write: ``mbarrier.arrive.release.cluster.shared::cluster``.
``cute.arch.mbarrier_arrive`` defaults to ``.release.cta`` even for a remote barrier, which the PTX memory
model does not let synchronize with a thread of another CTA. These releases happen once per tile.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute

from ...spec import ArrivalUnit
from ..barriers import MbarrierRing, warp_uniform_index

__all__ = ["release_remote"]


def release_remote(ring: MbarrierRing, index: Any, unit: ArrivalUnit, peer: Any) -> None:
    """The arrival one executing thread owes for a role of ``unit``, on barrier ``index`` of CTA ``peer``."""
    if unit in (ArrivalUnit.THREAD, ArrivalUnit.WARP, ArrivalUnit.WARPGROUP):
        ring.arrive(index, peer=peer, cluster_scope=True)
    elif unit is ArrivalUnit.ELECTED_PER_WARP:
        cute.arch.sync_warp()  # every lane's reads, before the one lane's arrival
        with cute.arch.elect_one():
            ring.arrive(index, peer=peer, cluster_scope=True)
    elif unit is ArrivalUnit.ELECTED_PER_WARPGROUP:
        _first_warp_of_group(ring, index, peer)
    else:  # pragma: no cover - ArrivalUnit is closed
        raise ValueError(f"arrival unit {unit!r} is not supported")


@cute.jit
def _first_warp_of_group(ring: cutlass.Constexpr, index: Any, peer: Any) -> None:
    if warp_uniform_index() % 4 == 0:
        with cute.arch.elect_one():
            ring.arrive(index, peer=peer, cluster_scope=True)
