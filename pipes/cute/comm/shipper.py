"""TileShipper: the library's comm role. A storing warp hands each finished tile over; a comm warp ships it.

Roles and pipelines (one CTA; ``S`` = ``ShipSpec.slots``)::

    role (warps)          pipeline / flag            arrives on                     how many
    store (the storing    tiles: StoreNotify,        full[s] after wait_group L     1 (elected) per tile
      epilogue warp)        S slots, meta (tm, tn)     (writes complete in global)
    comm (one warp)       ← tiles: wait, ship,       empty[s]                       1 (elected) per tile
                            release
    comm → receiver       ready flags (per tile)     st.release.<scope> of epoch    1 per tile (engine "sm")
    comm → copy engine    step counters              red.release.sys.add 1          1 per tile (engine "copy")
    receiver → comm       credits (per tile)         the receiver's grant           1 per tile, per launch

Engines: ``sm`` — the comm warp copies each tile into the receiver (:class:`~pipes.cute.comm.TileCopy`),
then publishes its flag; ``copy`` — the comm warp counts each tile into its step of the
:class:`~pipes.tile_order.TileOrder` and the GPU's copy engines ship each complete step
(:class:`pipes.comm.CopyEngineShipper`); ``none`` — the comm warp takes each tile and ships nothing
(what the hand-off alone costs).

The receive buffer of engine ``sm`` is tile-major: tile ``t = tm·tiles_n + tn`` is ``tile_m × tile_n``
contiguous elements at ``dst + t·tile_m·tile_n``; its flag is ``flags[t]``, its credit ``credits[t]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import cutlass
import cutlass.cute as cute

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ...tile_order import TileOrder
from ..roles import Warps
from ..state import TraceStatic
from ..store_notify import StoreNotifyPipeline
from .credits import Credits
from .flags import ReadyFlags, StepCounters
from .scope import check_scope
from .tile_copy import TileCopy

ENGINES = ("sm", "copy", "none")
#: ``ShipArgs.options`` bit: wait for each tile's credit before overwriting it (engine ``sm``).
WAIT_CREDITS = 2


class ShipArgs(NamedTuple):
    """The comm role's run-time arguments: where tiles, flags, credits and step counts go, and the epoch.

    On the host, :func:`pipes.comm.ship_args` builds them from a receiver; inside the kernel the same
    tuple arrives as DSL values. ``options``: :data:`WAIT_CREDITS` or 0.
    """

    dst: Any
    flags: Any
    credits: Any
    counters: Any
    epoch: Any
    options: Any


@dataclass(frozen=True)
class ShipSpec:
    """The static choices of a :class:`TileShipper`.

    ``tile``: (tile_m, tile_n) of the kernel's output tiles. ``engine``: ``sm``, ``copy`` or ``none``.
    ``scope``: the ready flags' release scope (engine ``sm``; :func:`~pipes.cute.comm.needed_scope` of the
    receiver). ``slots``: stages of the store→notify ring (how far the comm warp may fall behind before
    the storing warp waits). ``lag``: notifications the storing warp holds back
    (:class:`~pipes.cute.StoreNotifyPipeline`). ``copy``: the SM copy's unroll and pacing (engine ``sm``).
    ``order``: the kernel's tile order, whose steps the comm warp counts into (engine ``copy``).
    ``comm_warp``: the warp that runs the role.
    """

    tile: tuple[int, int]
    engine: str = "sm"
    scope: str = "sys"
    slots: int = 2
    lag: int = 0
    copy: TileCopy | None = None
    order: TileOrder | None = None
    comm_warp: int = 1
    name: str = "tiles"

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"ShipSpec.engine = {self.engine!r} is invalid: allowed one of {ENGINES}")
        check_scope(self.scope, "ShipSpec.scope")
        if self.engine == "copy" and self.scope != "sys":
            raise ValueError(
                f"ShipSpec.scope = {self.scope!r} is invalid with engine 'copy': the copy engine sits outside "
                "the GPU's threads and synchronizes with system-scope releases only (allowed 'sys')"
            )
        if self.engine == "copy" and self.order is None:
            raise ValueError("ShipSpec.engine = 'copy' needs order: the TileOrder whose steps the copy engine ships")
        for name, low, high in (("slots", 1, 8), ("comm_warp", 0, 63)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"ShipSpec.{name} = {value!r} is invalid: allowed an int in [{low}, {high}]")
        if isinstance(self.lag, bool) or not isinstance(self.lag, int) or not 0 <= self.lag <= self.slots - 1:
            raise ValueError(
                f"ShipSpec.lag = {self.lag!r} is invalid: allowed an int in [0, slots - 1] = [0, {self.slots - 1}]"
            )
        if self.engine == "sm":
            copy = self.copy if self.copy is not None else TileCopy(*self.tile)
            if (copy.tile_m, copy.tile_n) != tuple(self.tile):
                raise ValueError(f"ShipSpec.copy is for {copy.tile_m}×{copy.tile_n} tiles, not {self.tile}")
            object.__setattr__(self, "copy", copy)

    @property
    def moves_data(self) -> bool:
        return self.engine != "none"


class TileShipper(TraceStatic):
    """A :class:`~pipes.cute.comm.CommHook`: the storing warp's hand-off and the comm warp's loop."""

    def __init__(self, spec: ShipSpec) -> None:
        self.spec = spec

    @property
    def registers(self) -> tuple[int, int] | None:
        return None

    def pipeline(self) -> StoreNotifyPipeline:
        """The store→notify pipeline ``spec.name`` (producer ``store``, consumer ``comm``; meta (tm, tn))."""
        spec = PipelineSpec(
            self.spec.name,
            self.spec.slots,
            producer=Role("store", ArrivalUnit.ELECTED_PER_WARP),
            consumers=Role("comm", ArrivalUnit.ELECTED_PER_WARP),
            completion=Completion.STORE_COMPLETE,
        )
        return StoreNotifyPipeline(spec, lag=self.spec.lag, meta_fields=2)

    def declare(self, roles: dict[str, Warps], storing_warp: int) -> tuple[StoreNotifyPipeline, dict[str, Warps]]:
        taken = {name: w for name, w in roles.items() if w.first <= self.spec.comm_warp < w.first + w.count}
        if taken:
            raise ValueError(
                f"ShipSpec.comm_warp = {self.spec.comm_warp} is taken by role(s) {sorted(taken)}: pick a free warp"
            )
        return self.pipeline(), {**roles, "comm": Warps(self.spec.comm_warp), "store": Warps(storing_warp)}

    # --- the storing warp ------------------------------------------------------------------------------
    @cute.jit
    def begin_tile(self, producer: Any, is_storer: Any, args: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """A free slot of the ring before the tile's first TMA store (back-pressure from the comm warp)."""
        if is_storer:
            producer.acquire()
        return producer

    @cute.jit
    def end_tile(self, producer: Any, is_storer: Any, args: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """Close the tile's bulk groups, wait for all but ``lag`` of them to complete, notify (tm, tn)."""
        if is_storer:
            producer.commit(tm, tn)
        return producer

    @cute.jit
    def finish(self, producer: Any, is_storer: Any) -> None:
        """Every store complete, the last notifications, end-of-stream, every release."""
        if is_storer:
            producer.tail()

    # --- the comm warp ---------------------------------------------------------------------------------
    @cute.jit
    def run(self, notify: Any, out: cute.Tensor, args: Any) -> None:
        """Ship every tile the storing warp notifies until end-of-stream (the whole comm warp)."""
        consumer = notify.consumer()
        slot = consumer.wait()
        meta = consumer.meta(slot)
        while meta.valid != 0:
            tm = meta[0]
            tn = meta[1]
            if self.inside(out, tm, tn):
                self.ship(out, ShipArgs(*args), tm, tn)
            consumer.release()
            slot = consumer.wait()
            meta = consumer.meta(slot)
        consumer.release()  # the end-of-stream slot

    @cute.jit
    def inside(self, out: cute.Tensor, tm: Any, tn: Any) -> Any:
        """Whether tile (tm, tn) lies inside ``out``: a cluster hanging over the edge computes tiles TMA
        stores nowhere, and there is nothing to ship."""
        tile_m, tile_n = self.spec.tile
        return (tm * tile_m < out.shape[0]) & (tn * tile_n < out.shape[1])

    @cute.jit
    def ship(self, out: cute.Tensor, args: ShipArgs, tm: Any, tn: Any) -> None:
        """Ship tile (tm, tn) of ``out`` (complete in global memory; inside ``out``): engine ``sm`` copies it
        and publishes its flag, ``copy`` counts it into its step, ``none`` does nothing (whole warp)."""
        spec = self.spec
        tile_m, tile_n = spec.tile
        tiles_n = (out.shape[1] + tile_n - 1) // tile_n
        if cutlass.const_expr(spec.engine == "copy"):
            clusters_m, clusters_n = spec.order.cluster_grid((out.shape[0] + tile_m - 1) // tile_m, tiles_n)
            StepCounters(args.counters).count(spec.order.step(tm, tn, clusters_m, clusters_n))
        elif cutlass.const_expr(spec.engine == "sm"):
            tile = tm * tiles_n + tn
            if (args.options & WAIT_CREDITS) != 0:
                Credits(args.credits, spec.scope).wait(tile, args.epoch)
            spec.copy.copy(out, tm, tn, args.dst + cutlass.Int64(tile) * (tile_m * tile_n))
            ReadyFlags(args.flags, spec.scope, spec.name).publish(tile, args.epoch)


__all__ = ["ENGINES", "WAIT_CREDITS", "ShipArgs", "ShipSpec", "TileShipper"]
