"""The fence that orders a warp's data before a flag at a scope; the scope facts are :mod:`pipes.memory_scope`."""

from __future__ import annotations

import cutlass.cute as cute

from ...memory_scope import RECEIVER_SCOPES, SCOPES, check_reaches, check_scope, needed_scope


def fence(scope: str) -> None:
    """``fence.acq_rel.<scope>`` (trace time: the scope is static)."""
    {
        "cta": cute.arch.fence_acq_rel_cta,
        "cluster": cute.arch.fence_acq_rel_cluster,
        "gpu": cute.arch.fence_acq_rel_gpu,
        "sys": cute.arch.fence_acq_rel_sys,
    }[check_scope(scope)]()


__all__ = ["RECEIVER_SCOPES", "SCOPES", "check_reaches", "check_scope", "fence", "needed_scope"]
