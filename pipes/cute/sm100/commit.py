"""``tcgen05.commit`` as a pipeline arrival: the barrier is arrived on when the issued MMAs complete.

A ``tcgen05.commit`` makes the mbarrier track every asynchronous ``tcgen05`` operation (MMA, copy) the
executing thread has issued so far; the arrival happens when they have all completed. It is one arrival
per commit, made by the tensor core on behalf of one thread, so the role that commits is one thread: an
elected lane of the MMA warp (``ELECTED_PER_WARP`` × 1, the lane that issued the MMAs — ``elect.sync``
picks the same lane each time) or a single thread (``THREAD`` × 1).
"""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

from ...errors import SpecError
from ...spec import ArrivalUnit, PipelineSpec, Role

__all__ = ["check_issuer", "umma_commit"]


def check_issuer(owner: str, spec: PipelineSpec, role: Role | None = None) -> None:
    """Raise unless ``role`` (default: the only consumer) is one committing thread per CTA."""
    role = role if role is not None else spec.consumers[0]
    if role.unit not in (ArrivalUnit.THREAD, ArrivalUnit.ELECTED_PER_WARP) or role.count != 1:
        raise SpecError(
            f"{owner}: role {role.name!r} = count={role.count} × {role.unit.name} commits with tcgen05.commit, "
            f"which makes one arrival per call (count × {role.unit.arrivals} = {role.count * role.unit.arrivals} "
            "per stage declared): allowed count=1 × ELECTED_PER_WARP (the MMA warp's issuing lane) or 1 × THREAD"
        )


def umma_commit(barrier: cute.Pointer, mask: Any, group: Any, unit: ArrivalUnit) -> None:
    """``tcgen05.commit`` on ``barrier`` (multicast to ``mask`` when not None), from one thread of the warp."""
    if unit is ArrivalUnit.ELECTED_PER_WARP:
        with cute.arch.elect_one():
            _commit(barrier, mask, group)
    else:
        _commit(barrier, mask, group)


def _commit(barrier: cute.Pointer, mask: Any, group: Any) -> None:
    if mask is None:
        tcgen05.commit(barrier, None, group)
    else:
        tcgen05.commit(barrier, mask, group)
