"""The communication role in our GEMM: the library's comm role plus what this example measures and adds.

:class:`CommRole` is a :class:`pipes.cute.comm.CommHook` (``GemmKernel(config, problem, comm=role)``).
The hand-off itself is the library's :class:`~pipes.cute.comm.TileShipper` (the ``tiles``
StoreNotifyPipeline between the storing warp and warp 1, its acquire/commit/tail); the role adds:

* the storing warp's and the comm warp's ``%globaltimer`` stamps (the ``--trace`` picture) and the
  per-CTA start/end flags the host watches (:mod:`.ship`);
* ``ship_blocks``: every row block but the last leaves (the reduce-scatter: the last is this rank's);
* ``add_received`` before each tile's epilogue, in every math thread (``CommConfig.adds_received``
  only, a :class:`hopper_gemm.comm_hook.ReceivesPartials`): for a tile of this rank's row block, wait
  for its step's flag from every other rank in the inbox, add their partials to the accumulators.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Float32
from hopper_gemm.config import GemmConfig

from pipes.cute import StoreNotifyPipeline, TraceStatic, Warps
from pipes.cute.comm import ReadyFlags, ShipSpec, TileCopy, TileShipper
from pipes.epoch import parity_token
from pipes.tile_order import TileOrder

from .args import EPI_BEGIN, EPI_END, DeviceArgs
from .config import CommConfig
from .ship import count_tile, cta_event, push_tile, tile_stamp

#: Warp 1 of the producer warpgroup (warp 0 loads A and B; warps 2-3 idle under setmaxnreg 40).
COMM_WARP = 1
PIPELINE = "tiles"


class CommRole(TraceStatic):
    """The communication warp of the cooperative GEMM ``gemm``, for one :class:`~tile_comm.config.CommConfig`."""

    def __init__(self, config: CommConfig, gemm: GemmConfig) -> None:
        self.config = config
        self.gemm = gemm
        self.order = shipping_order(config, gemm)
        engine = "copy" if config.counts_steps else ("sm" if config.pushes else "none")
        copy = TileCopy(gemm.tile_m, gemm.tile_n, config.unroll, config.pace_ns) if config.pushes else None
        spec = ShipSpec(
            (gemm.tile_m, gemm.tile_n),
            engine,
            config.scope or "gpu",
            config.slots,
            config.lag,
            copy,
            self.order if config.counts_steps else None,
            COMM_WARP,
            PIPELINE,
        )
        self.shipper = TileShipper(spec)

    @property
    def registers(self) -> tuple[int, int] | None:
        """setmaxnreg (producer warpgroup, math warpgroups): 8 loads in flight per lane need 56 registers in
        the comm warp (128 × 56 + 256 × 224 = 64,512 ≤ 65,536; the GEMM uses 168); None: the GEMM's own."""
        return (56, 224) if self.config.unroll > 4 else None

    def declare(self, roles: dict[str, Warps], storing_warp: int) -> tuple[StoreNotifyPipeline, dict[str, Warps]]:
        """The store→notify pipeline and the role layout with ``store`` and ``comm`` added."""
        return self.shipper.declare(roles, storing_warp)

    # --- the storing warp (called in every math warp; only the storing warp acts) ---------------
    @cute.jit
    def begin_tile(self, producer: Any, is_storer: Any, packed: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """Before the tile's first TMA store: a free slot of the ring (back-pressure from the comm warp)."""
        if is_storer:
            _tile_stamp(DeviceArgs.of(packed), tm, tn, columns, self.gemm.tile_n, EPI_BEGIN)
        return self.shipper.begin_tile(producer, is_storer, packed, tm, tn, columns)

    @cute.jit
    def end_tile(self, producer: Any, is_storer: Any, packed: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """After the tile's last staging commit: close its bulk groups, wait ``lag``, notify (tm, tn)."""
        producer = self.shipper.end_tile(producer, is_storer, packed, tm, tn, columns)
        if is_storer:
            _tile_stamp(DeviceArgs.of(packed), tm, tn, columns, self.gemm.tile_n, EPI_END)
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
        """The reduce-scatter's owner side: a tile of the last row block (this rank's: ``rotate_rows``
        puts the other ranks' first) waits, for each other rank in turn, for the flag of its step, which
        that GPU's copy engine raises in this GPU's inbox after the step's rows land, and adds those rows
        to the accumulators before waiting for the next rank's.

        The inbox holds one slot per other rank, in the order of :func:`inbox_slot`: slot ``p`` comes from
        the rank that computes this rank's block as its block ``p`` (its rotated C's rows at the same place
        as the slot's rows here), and :func:`inbox_step` is the flag it raised. Lane 0 polls with
        ``ld.acquire.sys``; the warp sync then orders every lane's reads of the inbox after that acquire
        (CUTLASS's ``GenericBarrier`` does the same with one thread and ``__syncthreads``)."""
        clusters_m, clusters_n = clusters
        tile_m, tile_n = tile
        blocks = self.config.ship_blocks
        args = DeviceArgs.of(packed)
        own = own_block_start(self.order, clusters_m, blocks)
        # A cluster hanging over C's last column computes a tile outside C: TMA clips its store, and it has
        # nothing in the inbox to add (reading it would run past the inbox's rows).
        if (tm >= own) & (tn * tile_n < n):
            # No printf in a kernel with wgmma (ptxas would serialize every wgmma): trap without a message.
            flags = ReadyFlags(args.inbox_flags, "sys", "inbox")
            row_stride = cute.assume(n, divby=8)
            inbox = cute.make_tensor(args.inbox, cute.make_layout((own * tile_m, n), stride=(row_stride, 1)))
            total = acc.load()
            # Slot by slot in the order they arrive (slot p is its sender's block p, shipped p-th): every add
            # but the last slot's runs while the later slots are still on their way.
            for slot in cutlass.range_constexpr(blocks - 1):
                if cute.arch.lane_idx() == 0:
                    step = inbox_step(self.order, tm, tn, clusters_m, clusters_n, blocks, slot)
                    flags.wait(step, parity_token(args.epoch), exact=True, report=False)
                cute.arch.sync_warp()
                row = inbox_row(tm, own, blocks, slot)
                received = thr_mma.partition_C(cute.local_tile(inbox, (tile_m, tile_n), (row, tn)))
                total = total + received.load().to(Float32)
            acc.store(total)

    @cute.jit
    def finish(self, producer: Any, is_storer: Any) -> None:
        """After the last tile: every store complete, the last notifications, end-of-stream, every release."""
        self.shipper.finish(producer, is_storer)

    # --- the communication warp ------------------------------------------------------------------
    @cute.jit
    def run(self, notify: Any, c: cute.Tensor, packed: Any) -> None:
        """Ship every tile the storing warp notifies until end-of-stream (whole warp 1)."""
        cfg = self.config
        tile_m, tile_n = self.gemm.tile_m, self.gemm.tile_n
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
            # Every row block but the last (this rank's own) leaves; see CommConfig.ship_blocks.
            shipped_rows = cfg.shipped_rows(c.shape[0])
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
    return TileOrder.of(gemm_config, step_depth=config.step_rows)


def own_block_start(order: TileOrder, clusters_m: Any, blocks: int = 2) -> Any:
    """The first tile row of this rank's row block in its rotated C (the last of ``blocks``)."""
    return clusters_m * order.cluster_m // blocks * (blocks - 1)


def inbox_row(tm: Any, own: Any, blocks: int, slot: int) -> Any:
    """The inbox's tile row that holds slot ``slot``'s partial of tile row ``tm`` of this rank's block
    (which starts at tile row ``own``): the row the sending rank computed it at in its rotated C."""
    return tm - own + slot * (own // (blocks - 1))


def inbox_step(
    order: TileOrder, tm: Any, tn: Any, clusters_m: Any, clusters_n: Any, blocks: int = 2, slot: int = 0
) -> Any:
    """The inbox flag that covers tile (tm, tn) of this rank's block in slot ``slot``: the step the sending
    rank's walk (the same order over its rotated C, where this rank's block is its block ``slot``)
    computes those rows in."""
    own = own_block_start(order, clusters_m, blocks)
    return order.step(inbox_row(tm, own, blocks, slot), tn, clusters_m, clusters_n)


def inbox_slot(sender: int, receiver: int, world: int) -> int:
    """Which of ``receiver``'s inbox slots ``sender`` writes: the position of ``receiver``'s block in
    ``sender``'s rotated rows (:func:`tile_comm.peer.block_order`)."""
    if sender == receiver or not (0 <= sender < world and 0 <= receiver < world):
        raise ValueError(f"sender {sender}, receiver {receiver}: allowed two different ranks of {world}")
    return (receiver - sender - 1) % world


@cute.jit
def _tile_stamp(args: Any, tm: Any, tn: Any, n: Any, tile_n: cutlass.Constexpr, which: cutlass.Constexpr) -> None:
    """The storing warp's timestamp of tile (tm, tn) (with OPT_STAMPS). Columns past C are skipped; a
    cluster row hanging over C's last row stamps into the spare row :func:`~tile_comm.args.stamp_words`
    allocates (the storing warp does not know M)."""
    tiles_n = (n + tile_n - 1) // tile_n
    if tn < tiles_n:
        tile_stamp(args, tm * tiles_n + tn, which)


__all__ = [
    "COMM_WARP",
    "PIPELINE",
    "CommRole",
    "inbox_row",
    "inbox_slot",
    "inbox_step",
    "own_block_start",
    "shipping_order",
]
