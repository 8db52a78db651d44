"""Cluster multicast stress kernel for :class:`pipes.cute.TmaLoadPipeline` (CPU compile + GPU tests).

A cluster of ``cluster_m × cluster_n`` CTAs (rank ``m + n·cluster_m``, the layout pipes assumes)
streams ``n_tiles`` stages per CTA. Each stage holds two 32×32 Int32 tiles, the A and B operands of
a GEMM k-step: A is shared by the CTAs of one cluster row (same ``m``), B by one cluster column
(same ``n``). A multicast operand is split like CUTLASS splits it: each sharing CTA's producer loads
its slice of the tile and multicasts it to all sharers, so every CTA's full barrier completes on
bytes that several CTAs' TMAs wrote, and a producer may refill a slot only when every sharer
released it (the pipeline's remote release). A non-multicast operand is a plain per-CTA TMA load.

Warp 0 loads; warp 1 checks every element right after ``wait``, optionally spins (only in CTA rank
``slow_rank``), checks again (a slot refilled too early by a peer's multicast shows up here) and
releases. Patterns: A tile ``t`` element ``e`` holds ``t·4096 + e + 1``, B holds its negation.
"""

import os
import warnings
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cute_kernels import TILE, Built, pattern, spin  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402

from pipes import ArrivalUnit, Completion, PipelineSpec, PipesPerformanceWarning, Role  # noqa: E402
from pipes.cute import Multicast, RoleLayout, TmaLoadPipeline, Warps, init_pipelines, storage_words  # noqa: E402

TILE_BYTES = TILE * TILE * 4


@dataclass(frozen=True)
class Operand:
    """How one operand reaches the cluster: ``sharers`` CTAs share a tile (1: not multicast)."""

    sharers: int

    @property
    def multicast(self) -> bool:
        return self.sharers > 1

    def copy_op(self) -> Any:
        return cpasync.CopyBulkTensorTileG2SMulticastOp() if self.multicast else cpasync.CopyBulkTensorTileG2SOp()


def operands(mc: Multicast) -> tuple[Operand, Operand]:
    """A is shared along the cluster row (cluster_n CTAs), B along the column (cluster_m CTAs)."""
    return Operand(mc.cluster_n if mc.a else 1), Operand(mc.cluster_m if mc.b else 1)


def row_mask(cm: int, cn: int) -> int:
    """Bits of the CTAs ``(0, n)`` for every n (shift left by ``m`` for row m): A's multicast mask."""
    return sum(1 << (n * cm) for n in range(cn))


def build_multicast_load(
    multicast: Multicast,
    stages: int,
    *,
    consumer_unit: ArrivalUnit = ArrivalUnit.WARP,
    slow_rank: int = -1,
    remote_release: bool = True,
) -> Built:
    """Launcher ``(src_a, src_b, out, n_tiles, delay, stream)``; grid = ``out.shape[0]`` CTAs.

    ``src_a``: (clusters·cluster_m·n_tiles·32, 32) rows, tile ``(cluster·cluster_m + m)·n_tiles + t``;
    ``src_b``: (clusters·cluster_n·n_tiles·32, 32), tile ``(cluster·cluster_n + n)·n_tiles + t``.
    ``out[cta, 0, lane] = (bad elements, stages seen)``. The consumer of rank ``slow_rank`` spins
    ``delay`` ns per stage; the other CTAs' consumers do not.

    ``remote_release=False`` plants the bug this kernel exists to catch: the copies still multicast,
    but the pipeline is declared without :class:`Multicast`, so each consumer releases only its own
    CTA's empty barrier and a fast CTA's producer may refill a slot a slow peer is still reading.
    """
    cm, cn = multicast.cluster_m, multicast.cluster_n
    csize = multicast.cluster_size
    op_a, op_b = operands(multicast)
    spec = PipelineSpec(
        "mc_tiles",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("reader", consumer_unit, 1),
        Completion.TRANSACTION_BYTES,
        2 * TILE_BYTES,
    )
    with warnings.catch_warnings():
        # A per-thread (WARP) multi-peer release is slow, not wrong: this kernel stresses that path on purpose.
        warnings.simplefilter("ignore", PipesPerformanceWarning)
        # The reader's release peers are derived from the multicast (none for the planted local-only release).
        pipe = TmaLoadPipeline(spec, multicast=multicast if remote_release else None)
    layout = RoleLayout(64, {"load": Warps(0), "reader": Warps(1)}, cluster_size=csize)
    words = storage_words(pipe)
    a_row_bits = row_mask(cm, cn)
    b_col_bits = (1 << cm) - 1

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        a: cute.struct.Align[cute.struct.MemRange[Int32, TILE * TILE * stages], 128]
        b: cute.struct.Align[cute.struct.MemRange[Int32, TILE * TILE * stages], 128]

    @cute.jit
    def check(tiles_a: cute.Tensor, tiles_b: cute.Tensor, slot: Int32, tile_a: Int32, tile_b: Int32) -> Int32:
        lane = cute.arch.lane_idx()
        bad = Int32(0)
        for i in cutlass.range_constexpr(TILE):
            if tiles_a[i, lane, slot] != pattern(tile_a, i * TILE + lane):
                bad = bad + 1
            if tiles_b[i, lane, slot] != -pattern(tile_b, i * TILE + lane):
                bad = bad + 1
        return bad

    def partition(atom: Any, operand: Operand, coord: Any, tiles: cute.Tensor, src: cute.Tensor) -> Any:
        g_tiles = cute.local_tile(src, (TILE, TILE), (None, None))
        return cpasync.tma_partition(
            atom,
            coord if operand.multicast else 0,
            cute.make_layout(operand.sharers),
            cute.group_modes(tiles, 0, 2),
            cute.group_modes(g_tiles, 0, 2),
        )

    @cute.kernel
    def kernel(
        atom_a: cute.CopyAtom,
        ga: cute.Tensor,
        atom_b: cute.CopyAtom,
        gb: cute.Tensor,
        out: cute.Tensor,
        n_tiles: Int32,
        delay: Int32,
    ):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        stage_layout = cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE))
        tiles_a = st.a.get_tensor(stage_layout)
        tiles_b = st.b.get_tensor(stage_layout)
        lane = cute.arch.lane_idx()
        bid, _, _ = cute.arch.block_idx()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster = bid // csize
        my_m = rank % cm
        my_n = rank // cm
        first_a = (cluster * cm + my_m) * n_tiles
        first_b = (cluster * cn + my_n) * n_tiles
        if layout.is_role("load"):
            # Each sharer loads its slice of the tile: tma_partition by its coordinate among the sharers.
            sa, pa = partition(atom_a, op_a, my_n, tiles_a, ga)
            sb, pb = partition(atom_b, op_b, my_m, tiles_b, gb)
            mask_a = cutlass.Int16(Int32(a_row_bits) << my_m)
            mask_b = cutlass.Int16(Int32(b_col_bits) << (my_n * cm))
            producer = pipe.producer()
            for t in cutlass.range(n_tiles, unroll=1):
                slot = producer.acquire()
                bar = producer.barrier(slot)
                if cutlass.const_expr(op_a.multicast):
                    cute.copy(atom_a, pa[(None, first_a + t, 0)], sa[(None, slot)], tma_bar_ptr=bar, mcast_mask=mask_a)
                else:
                    cute.copy(atom_a, pa[(None, first_a + t, 0)], sa[(None, slot)], tma_bar_ptr=bar)
                if cutlass.const_expr(op_b.multicast):
                    cute.copy(atom_b, pb[(None, first_b + t, 0)], sb[(None, slot)], tma_bar_ptr=bar, mcast_mask=mask_b)
                else:
                    cute.copy(atom_b, pb[(None, first_b + t, 0)], sb[(None, slot)], tma_bar_ptr=bar)
                producer.commit()
            producer.tail()
        if layout.is_role("reader"):
            my_delay = Int32(0)
            if rank == slow_rank:
                my_delay = delay
            consumer = pipe.consumer()
            bad = Int32(0)
            seen = Int32(0)
            for t in cutlass.range(n_tiles, unroll=1):
                slot = consumer.wait()
                bad = bad + check(tiles_a, tiles_b, slot, first_a + t, first_b + t)
                seen = seen + 1
                spin(my_delay)
                # Still intact after the (slow) work: no peer's multicast refilled the slot early.
                bad = bad + check(tiles_a, tiles_b, slot, first_a + t, first_b + t)
                consumer.release()
            out[bid, 0, lane, 0] = bad
            out[bid, 0, lane, 1] = seen

    @cute.jit
    def launch(src_a: cute.Tensor, src_b: cute.Tensor, out: cute.Tensor, n_tiles: Int32, delay: Int32, stream: Any):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        atom_a, ga = cpasync.make_tiled_tma_atom(op_a.copy_op(), src_a, smem_layout, (TILE, TILE), op_a.sharers)
        atom_b, gb = cpasync.make_tiled_tma_atom(op_b.copy_op(), src_b, smem_layout, (TILE, TILE), op_b.sharers)
        kernel(atom_a, ga, atom_b, gb, out, n_tiles, delay).launch(
            grid=(out.shape[0], 1, 1), block=(64, 1, 1), cluster=(csize, 1, 1), stream=stream
        )

    return Built(launch, pipe, ())
