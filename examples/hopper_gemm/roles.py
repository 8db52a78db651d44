"""The GEMM kernel's roles and pipes objects, declared once per configuration (no code, no DSL): what the
kernel and the CPU checks (``pipes.check``) share. Warp 0 loads, warps 4–11 are the math warpgroups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.cute import Multicast, OrderSpec, RoleLayout, SlotReaders, TmaLoadPipeline, TmaStoreStaging, Warps

from .config import GemmConfig, Problem, Schedule

BLOCK_THREADS = 384
LOAD_REGISTERS = 40
MMA_REGISTERS = 232
MATH_FIRST_WARP = 4
#: The first push warp of an all-gather (warps 1–3; a comm role would take warp 1, so the two never share a kernel).
PUSH_FIRST_WARP = 1


@dataclass(frozen=True)
class Declarations:
    """The kernel's pipes objects, built once per configuration (Python objects; no code)."""

    mainloop: TmaLoadPipeline
    staging: TmaStoreStaging
    order: OrderSpec | None
    layout: RoleLayout
    notify: Any = None  # comm hook: the ``tiles`` StoreNotifyPipeline (None without comm)

    @property
    def pipelines(self) -> tuple[Any, ...]:
        return (self.mainloop,) if self.notify is None else (self.mainloop, self.notify)


#: Trace ids (pipes.cute.trace) of what a traced GEMM records.
TRACE_NAMES = {1: "mainloop", 2: "pingpong", 3: "epilogue"}


def declare(
    config: GemmConfig,
    problem: Problem,
    tracer: Any = None,
    comm: Any = None,
    push: int = 0,
    own_staging: bool = True,
) -> Declarations:
    """The pipelines, the staging ring, the ping-pong order and the role layout of one configuration.
    ``tracer``: a :class:`pipes.cute.Tracer` (built inside the kernel) recording the mainloop's events;
    ``comm``: a ``CommHook`` (adds its pipeline and roles); ``push``: how many push warps (0: none);
    ``own_staging``: False where the staging buffers borrow the A ring (a mode's), which leaves the shared
    memory budget all to the A/B stages (:meth:`GemmConfig.stages`)."""
    ab_stages, epi_stages = config.stages(problem, own_staging=own_staging)
    math_warps = 4 * config.warpgroups_per_tile  # warps that consume one slot
    a_multicast, b_multicast = config.cluster_n > 1, config.cluster_m > 1
    multicast = (
        Multicast(config.cluster_m, config.cluster_n, a=a_multicast, b=b_multicast)
        if a_multicast or b_multicast
        else None
    )
    peers = multicast.peers if multicast is not None else 1
    spec = PipelineSpec(
        "mainloop",
        ab_stages,
        producer=Role("load", ArrivalUnit.ELECTED_PER_WARP),
        consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARP, count=math_warps, peers=peers),
        completion=Completion.TRANSACTION_BYTES,
        tx_bytes=config.stage_bytes(problem),
    )
    mainloop = TmaLoadPipeline(spec, multicast=multicast, readers=SlotReaders.ASYNC, tracer=tracer, trace_id=1)
    order = None
    if config.schedule is Schedule.PINGPONG:
        order = OrderSpec("pingpong", groups=2, role=Role("math", ArrivalUnit.ELECTED_PER_WARP, count=4), depth=2)
    # Ping-pong: of the 8 math warps, the 4 of one warpgroup consume each slot.
    roles = {"load": Warps(0), "mma": Warps(MATH_FIRST_WARP, 8, threads=math_warps * 32)}
    if push:
        roles["push"] = Warps(PUSH_FIRST_WARP, push)
    notify = None
    if comm is not None:  # comm hook: the store→notify pipeline and the store/comm roles
        notify, roles = comm.declare(roles, storing_warp=MATH_FIRST_WARP)
    layout = RoleLayout(BLOCK_THREADS, roles, cluster_size=config.cluster_size)
    return Declarations(mainloop, TmaStoreStaging(epi_stages, name="epilogue"), order, layout, notify)
