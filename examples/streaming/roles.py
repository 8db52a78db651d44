"""The pipelines and the role layout every streaming kernel declares (one place, checked on the CPU).

| producer → consumer | object | barrier | arrivals per phase |
|---|---|---|---|
| ``load`` (warp W) → ``math`` (warps 0..W-1) | ``TmaLoadPipeline`` | ``full[s]`` | 1 ``expect_tx`` + TMA bytes |
| ``math`` → ``load`` | (same) | ``empty[s]`` | 32·W: ``WARPGROUP`` × W/4 |
| ``math`` → TMA store (warp 0) | ``TmaStoreStaging`` | named ``epilogue`` | ``bar.sync`` of 32·W |
| ``math`` warps of one row | — | named ``reduce`` | ``bar.sync`` of 32·W |

The ``load`` warp's elected lane arms ``full[s]`` and issues the TMA; the ``reduce`` barrier is used by
rmsnorm only, when a row spans several warps. Every consumer thread releases (``WARPGROUP`` units): each
thread's own ``ld.shared`` reads are fenced (``fence.proxy.async``) and released by its own arrival, with
no barrier between the last read and the release. The producer warp never waits on the consumers except
through ``empty[s]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.cute import RoleLayout, TmaLoadPipeline, TmaStoreStaging, Warps

from .plan import Plan, Store

LOAD_ROLE = "load"
MATH_ROLE = "math"


@dataclass(frozen=True)
class Declarations:
    load: TmaLoadPipeline
    staging: TmaStoreStaging | None
    layout: RoleLayout

    @property
    def pipelines(self) -> tuple[TmaLoadPipeline, ...]:
        return (self.load,)


def declare(plan: Plan, *, debug: bool | None = None) -> Declarations:
    """The load pipeline, the staging ring (TMA store) and the warp → role map of ``plan``'s kernel."""
    warps = plan.consumer_warps
    spec = PipelineSpec(
        "tiles",
        plan.stages,
        Role(LOAD_ROLE, ArrivalUnit.ELECTED_PER_WARP, 1),
        Role(MATH_ROLE, ArrivalUnit.WARPGROUP, warps // 4),
        Completion.TRANSACTION_BYTES,
        plan.stage_tx_bytes,
    )
    load = TmaLoadPipeline(spec, debug=debug)
    staging = TmaStoreStaging(plan.store_stages, name="out") if plan.config.store is Store.TMA else None
    layout = RoleLayout(plan.block_threads, {MATH_ROLE: Warps(0, warps), LOAD_ROLE: Warps(warps)})
    return Declarations(load, staging, layout)
