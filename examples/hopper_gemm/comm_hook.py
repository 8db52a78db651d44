"""What the GEMM lets a comm role do: the library's :class:`~pipes.cute.comm.CommHook`, and one extra.

Any :class:`~pipes.cute.comm.CommHook` (the library's :class:`~pipes.cute.comm.TileShipper`, or
``tile_comm.CommRole``) ships this GEMM's tiles; :func:`check_comm` says which configurations can host
one. A hook that is also a :class:`ReceivesPartials` is called once more per tile, in every math thread
before the tile's epilogue, to add what another GPU sent for it (the two-GPU reduce-scatter's owner).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .config import GemmConfig, Schedule


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


def check_gate(config: GemmConfig, gate: Any, comm: Any, modes: Any) -> None:
    """``ValueError`` unless ``config`` can gate its loads on arriving chunks of A (``gate``, a
    ``pipes.cute.comm.GateSpec``): tiles of the gate's ``tile_m``, no comm role, no mode that sums partials
    (the kernel's one extra argument is the gate's), and clusters that never hang over the rows."""
    if gate.tile_m != config.tile_m:
        raise ValueError(f"the gate counts tiles of {gate.tile_m} rows, the configuration {config.tile_m}")
    if comm is not None:
        raise ValueError("a gated GEMM takes no comm role: the kernel's run-time extra is the gate's arguments")
    if modes is not None and modes.partial_sums:
        raise ValueError(
            f"a gated GEMM runs no mode that sums partials ({modes.describe().strip()}): their workspace and the "
            "gate's arguments would both be the kernel's one extra argument"
        )
    rows = config.tile_m * config.cluster_m
    if gate.plan.rows_per_rank % rows:
        raise ValueError(
            f"each rank's {gate.plan.rows_per_rank} rows must be whole cluster rows of tiles ({config.tile_m} × "
            f"cluster_m {config.cluster_m} = {rows}): a cluster hanging over the rows would compute a tile row "
            "that walking the rank's own rows first maps onto a real one"
        )


def check_push(gate: Any, push: Any, comm: Any = None) -> None:
    """``ValueError`` unless the push warps (``push``, a ``pipes.cute.comm.ChunkPushWarp``) can feed ``gate``:
    a gate to wait on its chunks, the same chunks, flags that hold epochs (``GateSpec(exact=False)``), at
    most the three warps beside the load warp, and no comm role (it would take warp 1)."""
    if comm is not None:
        raise ValueError(
            "push and comm in one kernel: the push warps start at warp 1, the comm role's warp; an all-gather "
            "GEMM and a GEMM that ships its tiles are two kernels"
        )
    if push.warps > 3:
        raise ValueError(f"ChunkPushWarp.warps = {push.warps}: the producer warpgroup has 3 warps beside the load warp")
    if gate is None:
        raise ValueError("a push warp needs a gate: the kernel pushes its chunks for peers whose gates wait on them")
    if push.sender.plan != gate.plan:
        raise ValueError(
            f"the push warp sends chunks of {push.sender.plan}, the gate waits on {gate.plan}: allowed one plan"
        )
    if gate.exact:
        raise ValueError(
            "SM pushes raise each flag to the launch's epoch: the gate must wait until a flag has reached it "
            "(GateSpec(exact=False)), not for the copy engine's parity token"
        )
