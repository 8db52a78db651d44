"""The communication role in the GEMM: the storing warp's hand-off calls and the communication warp's loop.

:class:`CommRole` is what ``hopper_gemm.kernel.GemmKernel(config, problem, comm=CommRole(...))`` takes.
The kernel calls it at six places and nowhere else:

* ``declare``: a :class:`~pipes.cute.StoreNotifyPipeline` ``tiles`` (producer ``store`` = the storing
  warp, consumer ``comm`` = warp 1 of the producer warpgroup) and the two roles in the role layout;
* ``begin_tile`` / ``end_tile`` around each tile's epilogue, in the math warps (they act in the storing
  warp only): ``acquire`` a slot before the tile's first TMA store, ``commit(tm, tn)`` after its last
  staging commit;
* ``add_received`` before each tile's epilogue, in every math thread (``CommConfig.adds_received``
  only): for a tile of this rank's row block, wait for its step's flag in the inbox, add the other
  rank's partial to the accumulators;
* ``finish`` after the last tile: ``tail()`` (end-of-stream, then every release);
* ``run``: the communication warp's loop (``wait``, ``meta``, ship, publish, ``release`` until the
  end-of-stream slot).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64
from hopper_gemm.schedule import TileOrder

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.cute import StoreNotifyPipeline, TraceStatic, Warps

from .args import EPI_BEGIN, EPI_END, DeviceArgs
from .await_flags import AWAIT_TIMEOUT_NS, await_flag, inbox_token
from .config import CommConfig
from .ship import count_tile, cta_event, geometry, push_tile, tile_stamp

#: Warp 1 of the producer warpgroup (warp 0 loads A and B; warps 2-3 idle under setmaxnreg 40).
COMM_WARP = 1
PIPELINE = "tiles"


class CommRole(TraceStatic):
    """The communication warp of the cooperative GEMM, for one :class:`~tile_comm.config.CommConfig`."""

    def __init__(self, config: CommConfig | None = None, order: TileOrder | None = None) -> None:
        """``order``: the GEMM's tile order (engine ``copy`` counts tiles into its steps)."""
        self.config = config if config is not None else CommConfig()
        if self.config.counts_steps and order is None:
            raise ValueError("CommRole with engine 'copy' needs the GEMM's TileOrder (order=TileOrder.of(config))")
        self.order = order

    @classmethod
    def for_gemm(cls, config: CommConfig, gemm_config: Any) -> CommRole:
        """The role for one GEMM configuration (its tile order comes along)."""
        return cls(config, shipping_order(config, gemm_config))

    @property
    def registers(self) -> tuple[int, int] | None:
        """setmaxnreg (producer warpgroup, math warpgroups): 8 loads in flight per lane need 56 registers in
        the comm warp (128 × 56 + 256 × 224 = 64,512 ≤ 65,536; the GEMM uses 168); None: the GEMM's own."""
        return (56, 224) if self.config.unroll > 4 else None

    def check(self, gemm_config: Any) -> None:
        """``ValueError`` unless the GEMM configuration can hand tiles to a communication warp."""
        if gemm_config.schedule.value != "cooperative":
            raise ValueError(
                f"the communication warp needs the cooperative schedule, not {gemm_config.schedule.value!r}: "
                "bulk async-groups are per thread, so one warp must issue every TMA store of the CTA and be "
                "the store-notify producer (ping-pong stores from both math warpgroups)"
            )
        if getattr(gemm_config, "stream_k", False) or getattr(gemm_config, "split_k", 1) > 1:
            raise ValueError(
                "the communication warp needs every tile stored once, whole, by its own CTA: stream_k = True "
                "and split_k > 1 split tiles between clusters (use a configuration without either)"
            )
        if getattr(gemm_config, "epi_batch", 1) != 1:
            raise ValueError(
                f"the communication warp needs epi_batch = 1, not {gemm_config.epi_batch}: the fused store/notify "
                "protocol (tile_comm.protocol) is checked with one staging buffer per acquire"
            )
        if self.config.counts_steps and self.order != shipping_order(self.config, gemm_config):
            raise ValueError(
                f"the comm role counts tiles into the steps of {self.order}, "
                f"but the GEMM walks {shipping_order(self.config, gemm_config)}"
            )
        _, _, steps = geometry(gemm_config.tile_m, gemm_config.tile_n)
        if steps % self.config.unroll:
            raise ValueError(f"CommConfig.unroll = {self.config.unroll} must divide the {steps} copy steps per tile")

    def declare(self, roles: dict[str, Warps], storing_warp: int) -> tuple[StoreNotifyPipeline, dict[str, Warps]]:
        """The store→notify pipeline and the role layout with ``store`` and ``comm`` added."""
        spec = PipelineSpec(
            PIPELINE,
            self.config.slots,
            producer=Role("store", ArrivalUnit.ELECTED_PER_WARP),
            consumers=Role("comm", ArrivalUnit.ELECTED_PER_WARP),
            completion=Completion.STORE_COMPLETE,
        )
        notify = StoreNotifyPipeline(spec, lag=self.config.lag, meta_fields=2)
        return notify, {**roles, "comm": Warps(COMM_WARP), "store": Warps(storing_warp)}

    # --- the storing warp (called in every math warp; only the storing warp acts) ---------------
    @cute.jit
    def begin_tile(
        self, producer: Any, is_storer: Any, packed: Any, tm: Any, tn: Any, n: Any, tile_n: cutlass.Constexpr
    ) -> Any:
        """Before the tile's first TMA store: a free slot of the ring (back-pressure from the comm warp)."""
        if is_storer:
            _tile_stamp(DeviceArgs.of(packed), tm, tn, n, tile_n, EPI_BEGIN)
            producer.acquire()
        return producer

    @cute.jit
    def end_tile(
        self, producer: Any, is_storer: Any, packed: Any, tm: Any, tn: Any, n: Any, tile_n: cutlass.Constexpr
    ) -> Any:
        """After the tile's last staging commit: close its bulk groups, wait ``lag``, notify (tm, tn)."""
        if is_storer:
            producer.commit(tm, tn)
            _tile_stamp(DeviceArgs.of(packed), tm, tn, n, tile_n, EPI_END)
        return producer

    # --- every math thread (adds_received only) ---------------------------------------------------
    @property
    def adds_received(self) -> bool:
        return self.config.adds_received

    @cute.jit
    def add_received(
        self,
        acc: cute.Tensor,
        thr_mma: Any,
        packed: Any,
        tm: Any,
        tn: Any,
        clusters: tuple[Any, Any],
        n: Any,
        tile: cutlass.Constexpr,
    ) -> None:
        """The reduce-scatter's owner side: a tile of the second row block (this rank's: ``rotate_rows``
        puts the other rank's first) waits for the flag of its step, which the other GPU's copy engine
        raises in this GPU's inbox after the step's rows land, then adds those rows to the accumulators.

        The other rank walks the same tile order over its own rotated C, whose first block is this
        rank's: tile row ``tm`` here is its tile row ``tm - block``, and ``TileOrder.step`` of that is
        the flag it raised. Lane 0 polls with ``ld.acquire.sys``; the warp sync then orders every lane's
        reads of the inbox after that acquire (CUTLASS's ``GenericBarrier`` does the same with one
        thread and ``__syncthreads``)."""
        clusters_m, clusters_n = clusters
        tile_m, tile_n = tile
        args = DeviceArgs.of(packed)
        block = own_block_start(self.order, clusters_m)
        # A cluster hanging over C's last column computes a tile outside C: TMA clips its store, and it has
        # nothing in the inbox to add (reading it would run past the inbox's rows).
        if (tm >= block) & (tn * tile_n < n):
            step = inbox_step(self.order, tm, tn, clusters_m, clusters_n)
            if cute.arch.lane_idx() == 0:
                now = cute.arch.globaltimer()
                await_flag(args.inbox_flags, step, inbox_token(args.epoch), now, Int64(AWAIT_TIMEOUT_NS), False)
            cute.arch.sync_warp()
            row_stride = cute.assume(n, divby=8)
            inbox = cute.make_tensor(args.inbox, cute.make_layout((block * tile_m, n), stride=(row_stride, 1)))
            received = thr_mma.partition_C(cute.local_tile(inbox, (tile_m, tile_n), (tm - block, tn)))
            acc.store(acc.load() + received.load().to(Float32))

    @cute.jit
    def finish(self, producer: Any, is_storer: Any) -> None:
        """After the last tile: every store complete, the last notifications, end-of-stream, every release."""
        if is_storer:
            producer.tail()

    # --- the communication warp ------------------------------------------------------------------
    @cute.jit
    def run(
        self, notify: Any, c: cute.Tensor, packed: Any, tile_m: cutlass.Constexpr, tile_n: cutlass.Constexpr
    ) -> None:
        """Ship every tile the storing warp notifies until end-of-stream (whole warp 1)."""
        cfg = self.config
        args = DeviceArgs.of(packed)
        cta_event(args, cfg, 0)
        consumer = notify.consumer()
        slot = consumer.wait()
        meta = consumer.meta(slot)
        while meta.valid != 0:
            tm = meta[0]
            tn = meta[1]
            # Few values stay live across this loop (the warp has 40 registers): the rest is recomputed.
            tiles_n = (c.shape[1] + tile_n - 1) // tile_n
            # A cluster hanging over C's edge computes tiles outside C: nothing to ship.
            # Only block 0 of ship_blocks row blocks leaves (the peer's block; see CommConfig.ship_blocks).
            shipped_rows = c.shape[0] // cfg.ship_blocks if cutlass.const_expr(cfg.ship_blocks > 1) else c.shape[0]
            if (tm * tile_m < shipped_rows) & (tn < tiles_n):
                if cutlass.const_expr(cfg.counts_steps):
                    clusters_m, clusters_n = self.order.cluster_grid((c.shape[0] + tile_m - 1) // tile_m, tiles_n)
                    count_tile(args, tm * tiles_n + tn, self.order.step(tm, tn, clusters_m, clusters_n))
                else:
                    push_tile(c, args, tm, tn, tiles_n, cfg, tile_m, tile_n)
            consumer.release()
            slot = consumer.wait()
            meta = consumer.meta(slot)
        consumer.release()  # the end-of-stream slot
        cta_event(args, cfg, 1)


def shipping_order(config: CommConfig, gemm_config: Any) -> TileOrder:
    """The GEMM's tile order with the copy engine's steps: ``config.step_rows`` band rows per step. The comm
    warp counts into these steps, the copy engine ships them, the owner awaits their flags."""
    return dataclasses.replace(TileOrder.of(gemm_config), step_depth=config.step_rows)


def own_block_start(order: TileOrder, clusters_m: Any) -> Any:
    """The first tile row of this rank's row block in its rotated C (the second of two blocks)."""
    return clusters_m * order.cluster_m // 2


def inbox_step(order: TileOrder, tm: Any, tn: Any, clusters_m: Any, clusters_n: Any) -> Any:
    """The inbox flag that covers tile (tm, tn) of this rank's block: the step the other rank's walk
    (the same order over its rotated C, whose first block is this rank's) computes those rows in."""
    return order.step(tm - own_block_start(order, clusters_m), tn, clusters_m, clusters_n)


@cute.jit
def _tile_stamp(args: Any, tm: Any, tn: Any, n: Any, tile_n: cutlass.Constexpr, which: cutlass.Constexpr) -> None:
    """The storing warp's timestamp of tile (tm, tn) (with OPT_STAMPS). Columns past C are skipped; a
    cluster row hanging over C's last row stamps into the spare row :func:`~tile_comm.args.stamp_words`
    allocates (the storing warp does not know M)."""
    tiles_n = (n + tile_n - 1) // tile_n
    if tn < tiles_n:
        tile_stamp(args, tm * tiles_n + tn, which)


__all__ = ["COMM_WARP", "PIPELINE", "CommRole", "inbox_step", "own_block_start", "shipping_order"]
