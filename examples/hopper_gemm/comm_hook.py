"""What the GEMM lets a comm role or a gate do. Any :class:`~pipes.cute.comm.CommHook` (``TileShipper``,
``tile_comm.CommRole``) ships its tiles where :func:`check_comm` allows; a :class:`ReceivesPartials` hook
also adds, in every math thread before a tile's epilogue, what another GPU sent for it (a reduce-scatter).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .config import GemmConfig, Schedule
from .roles import MATH_FIRST_WARP, PUSH_FIRST_WARP


@runtime_checkable
class ReceivesPartials(Protocol):
    """A comm hook that adds a received partial of tile (tm, tn) to the accumulators before its epilogue
    (when ``adds_received``: the same role may be configured without)."""

    adds_received: bool

    def add_received(
        self, acc: Any, thr_mma: Any, args: Any, tm: Any, tn: Any, clusters: tuple[Any, Any], n: Any, tile: Any
    ) -> None: ...


def adds_partials(comm: Any) -> bool:
    """Whether ``comm`` adds received partials in the epilogue (a :class:`ReceivesPartials` that says so)."""
    return isinstance(comm, ReceivesPartials) and comm.adds_received


def check_comm(config: GemmConfig, modes: Any = None) -> None:
    """``ValueError`` unless ``config`` (with no performance ``modes``) can hand every tile to a comm warp
    through the storing warp."""
    if config.schedule is not Schedule.COOPERATIVE:
        raise ValueError(
            f"the communication warp needs the cooperative schedule, not {config.schedule.value!r}: "
            "bulk async-groups are per thread, so one warp must issue every TMA store of the CTA and be "
            "the store-notify producer (ping-pong stores from both math warpgroups)"
        )
    if modes is not None:
        raise ValueError(
            "the communication warp runs on the plain kernel, without performance modes: split tiles "
            "(stream-K, split-K) are not stored once, whole, by their own CTA, the deferred epilogue stores "
            "from every math warp, and staging in the A/B ring is neither built nor tested with it"
        )
    if config.epi_batch != 1:
        raise ValueError(
            f"the communication warp needs epi_batch = 1, not {config.epi_batch}: the fused store/notify "
            "protocol (tile_comm.protocol) is checked with one staging buffer per acquire"
        )
    if config.pdl:
        raise ValueError(
            "GemmConfig.pdl must be False with a comm role (that pairing is neither built nor tested: "
            "the comm role's flags would be read by a grid that started before the previous one ended)"
        )


def check_gate(config: GemmConfig, gate: Any, push: Any, comm: Any, modes: Any) -> None:
    """``ValueError`` unless ``config`` can gate its loads on ``gate`` (a ``pipes.cute.comm.GateSpec``, or
    None) fed by ``push`` (a ``pipes.cute.comm.ChunkPushWarp``, or None): the kernel's one run-time extra is
    then the gate's, so no comm role (whose warp 1 the push warps take) and no mode that sums partials."""
    if push is not None:
        if comm is not None:
            raise ValueError(
                "push and comm in one kernel: the push warps start at warp 1, the comm role's warp; an all-gather "
                "GEMM and a GEMM that ships its tiles are two kernels"
            )
        push.check_feeds(gate, spare_warps=MATH_FIRST_WARP - PUSH_FIRST_WARP)
    if gate is None:
        return
    if comm is not None:
        raise ValueError("a gated GEMM takes no comm role: the kernel's run-time extra is the gate's arguments")
    if modes is not None and modes.partial_sums:
        raise ValueError(
            f"a gated GEMM runs no mode that sums partials ({modes.describe().strip()}): their workspace and the "
            "gate's arguments would both be the kernel's one extra argument"
        )
    gate.check_tiles(config.tile_m, config.cluster_m)
