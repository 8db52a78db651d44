"""RMSNorm over the rows of an ``(M, N)`` tensor: a TMA producer warp streams row tiles, consumer warps
reduce, normalize and TMA-store. Persistent: CTA ``b`` takes row blocks ``b, b + grid, …``.

Roles and pipelines (:mod:`.roles`):

| producer role → consumer role | object | barrier | arrivals per phase |
|---|---|---|---|
| ``load`` (1 warp, elected lane) → ``math`` (W warps) | ``TmaLoadPipeline`` | ``full[s]`` | 1 + tile bytes (TMA) |
| ``math`` → ``load`` | same | ``empty[s]`` | 32·W (``WARPGROUP`` × W/4) |
| ``math`` → TMA store (warp 0) | ``TmaStoreStaging`` | named ``epilogue`` (32·W threads) | ``bar.sync`` ×2 per tile |
| ``math`` warps of a row | named ``reduce`` (32·W threads) | ``bar.sync`` | once per row block, if a row spans warps |

Rows longer than one stage (``chunks > 1``, e.g. N = 32768 bf16 = 4 chunks of 16 KiB) take two passes
over shared memory: pass 1 waits for every chunk of the row block and accumulates the sum of squares,
pass 2 normalizes each chunk from shared memory again and releases it. The ring is deeper than a row
(``stages >= chunks``, default ``chunks + 4``), so while a row is held the producer is already loading
the next one. Not a cluster reduction: that would add a cross-CTA round trip per row and DSMEM traffic
to save shared memory we have (a 64 KiB row fits three times in 227 KiB), and not registers: holding
``N / 256`` fp32 values per thread across the reduction is 128 registers at N = 32768, on top of the
rest, against ptxas' 168-register budget for a 288-thread block.

Each thread keeps its columns of the weight in registers for the whole kernel (loaded once) when they
take at most 32 registers (N <= 16384 for 16-bit types, 8192 for fp32 with 8 consumer warps); longer
weights stream from L2 through two chunk buffers, one chunk ahead of pass 2 (64 resident registers at
N = 32768 left ptxas at its 168-register cap with spills at some ring depths).
"""

# No `from __future__ import annotations`: cute.struct reads its field annotations as objects.
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from pipes.cute import NamedBarrierAllocator, init_pipelines, storage_words

from . import tiles
from .output import Output, finish_chunk, put
from .plan import Plan, Store
from .roles import LOAD_ROLE, MATH_ROLE, Declarations, declare


def build_rmsnorm(plan: Plan, *, debug: bool | None = None) -> tuple[Any, Declarations]:
    """The host launcher ``launch(x, w, out, m, eps, grid, stream)`` (pointers, run-time M) and the
    kernel's declarations."""
    decl = declare(plan, debug=debug)
    load, staging, layout = decl.load, decl.staging, decl.layout
    dtype = tiles.cute_dtype(plan)
    n, k_chunks, slots, rows_per_warp, vectors = plan.n, plan.chunks, plan.stages, plan.rows_per_warp, plan.vectors
    warps, per_row = plan.consumer_warps, plan.warps_per_row
    tma_store = plan.config.store is Store.TMA
    out_slots = max(plan.store_stages, 1)
    words = storage_words(load)
    inv_n = 1.0 / n
    resident = plan.weight_resident

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        partial: cute.struct.Align[cute.struct.MemRange[Float32, 2 * warps], 16]
        ring: cute.struct.Align[cute.struct.MemRange[dtype, slots * plan.tile_elements], 128]
        out: cute.struct.Align[cute.struct.MemRange[dtype, out_slots * plan.tile_elements], 128]

    def row_sums(ring: cute.Tensor, consumer: Any, first_row: Int32, index: Int32) -> list:
        """Pass 1: wait for every chunk of the row block; this thread's part of each row's sum of squares."""
        sums = [Float32(0.0)] * rows_per_warp
        for _k in range(k_chunks):
            slot = consumer.wait()
            for r in range(rows_per_warp):
                row = tiles.row_of(plan, first_row, r)
                for j in range(vectors):
                    x = ring[(None, index, j), row, slot].load().to(Float32)
                    sums[r] = sums[r] + (x * x).reduce(cute.ReductionOp.ADD, Float32(0.0), 0)
        return sums

    @cute.jit
    def load_weight(
        w_thr: cute.Tensor, weight: cute.Tensor, k: cutlass.Constexpr, into: cutlass.Constexpr, index: Int32
    ) -> None:
        """This thread's weight vectors of chunk ``k`` into ``weight[..., into]`` (zeros past N)."""
        weight[None, None, into].fill(0.0)
        for j in cutlass.range_constexpr(vectors):
            col = k * plan.chunk + (index + j * plan.threads_per_row) * plan.vec
            if col < n:
                weight[None, j, into].store(w_thr[(None, index, j), k, 0].load())

    @cute.kernel
    def kernel(
        x_atom: cute.CopyAtom,
        x_tma: cute.Tensor,
        o_atom: cute.CopyAtom,
        o_tma: cute.Tensor,
        w_thr: cute.Tensor,
        o_thr: cute.Tensor,
        m: Int32,
        eps: Float32,
    ):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines(decl.pipelines, st.pipes.data_ptr(), layout=layout)
        named = NamedBarrierAllocator(block_threads=plan.block_threads)
        epilogue = named.allocate("epilogue", threads=plan.consumer_threads)
        reduce_bar = named.allocate("reduce", threads=plan.consumer_threads)
        ring_box = st.ring.get_tensor(tiles.box_layout(plan, slots))
        ring = st.ring.get_tensor(tiles.thread_layout(plan, slots))
        out_box = st.out.get_tensor(tiles.box_layout(plan, out_slots))
        out = st.out.get_tensor(tiles.thread_layout(plan, out_slots))
        partial = st.partial.get_tensor(cute.make_layout((warps, 2), stride=(1, warps)))
        bid, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        blocks = (m + plan.rows - 1) // plan.rows

        if layout.is_role(LOAD_ROLE):
            s_part, g_part = tiles.partition_tiles(plan, x_atom, x_tma, ring_box)
            producer = load.producer()
            for blk in cutlass.range(bid, blocks, grid, unroll=1):
                for k in cutlass.range_constexpr(k_chunks):
                    slot = producer.acquire()
                    cute.copy(
                        x_atom, g_part[(None, blk, k, 0)], s_part[(None, slot)], tma_bar_ptr=producer.barrier(slot)
                    )
                    producer.commit()
            producer.tail()

        if layout.is_role(MATH_ROLE):
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            lane = cute.arch.lane_idx()
            first_row, index = tiles.thread_coords(plan, warp, lane)
            so_part, go_part = tiles.partition_tiles(plan, o_atom, o_tma, out_box)
            # This thread's columns of the weight, for every chunk: registers for the whole kernel.
            # Resident: every chunk's weight, loaded once. Streamed: two chunk buffers, chunk k + 1 loading
            # (from L2) while chunk k is normalized, chunk 0 of a block while pass 1 waits for its rows.
            weight = cute.make_rmem_tensor((plan.vec, vectors, k_chunks if resident else 2), dtype)
            if cutlass.const_expr(resident):
                for k in cutlass.range_constexpr(k_chunks):
                    load_weight(w_thr, weight, k, k, index)
            output = Output(out, o_thr, o_atom, so_part, go_part, m)
            consumer = load.consumer()
            stores = staging.producer(sync=epilogue) if tma_store else None
            parity = Int32(0)
            for blk in cutlass.range(bid, blocks, grid, unroll=1):
                if cutlass.const_expr(not resident):
                    load_weight(w_thr, weight, 0, 0, index)
                sums = row_sums(ring, consumer, first_row, index)
                rstd = [Float32(0.0)] * rows_per_warp
                for r in cutlass.range_constexpr(rows_per_warp):
                    total = sums[r]
                    for offset in cutlass.range_constexpr(5):
                        total = total + cute.arch.shuffle_sync_bfly(total, offset=1 << offset)
                    if cutlass.const_expr(per_row > 1):
                        # The row spans warps: combine the warps' sums through shared memory.
                        if lane == 0:
                            partial[warp, parity] = total
                        reduce_bar.sync()
                        total = Float32(0.0)
                        for q in cutlass.range_constexpr(per_row):
                            total = total + partial[first_row * per_row + q, parity]
                    rstd[r] = cute.math.rsqrt(total * inv_n + eps, fastmath=True)
                for k in cutlass.range_constexpr(k_chunks):
                    slot = consumer.release_state.index
                    if cutlass.const_expr(not resident and k + 1 < k_chunks):
                        load_weight(w_thr, weight, k + 1, (k + 1) % 2, index)
                    out_slot = stores.acquire() if tma_store else 0
                    for r in cutlass.range_constexpr(rows_per_warp):
                        row = tiles.row_of(plan, first_row, r)
                        for j in cutlass.range_constexpr(vectors):
                            x = ring[(None, index, j), row, slot].load().to(Float32)
                            y = (x * rstd[r]) * weight[None, j, k if resident else k % 2].load().to(Float32)
                            put(plan, output, y.to(dtype), out_slot, (blk, k, row, index), j)
                    stores, consumer = finish_chunk(plan, output, stores, consumer, warp, out_slot, (blk, k))
                parity = parity ^ 1
            if cutlass.const_expr(tma_store):
                stores.tail()

    @cute.jit
    def launch(x: cute.Pointer, w: cute.Pointer, o: cute.Pointer, m: Int32, eps: Float32, grid: Int32, stream: Any):
        from cutlass.cute.nvgpu import cpasync

        x_view = tiles.tma_view(plan, x, m)
        o_view = tiles.tma_view(plan, o, m)
        smem_tile = tiles.box_layout(plan, 1)
        tile_layout = cute.select(smem_tile, mode=[0, 1, 2])
        x_atom, x_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), x_view, tile_layout, tiles.box_tiler(plan)
        )
        o_atom, o_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), o_view, tile_layout, tiles.box_tiler(plan)
        )
        w_thr = tiles.global_thread_view(plan, w, 1)
        o_thr = tiles.global_thread_view(plan, o, m)
        kernel(x_atom, x_tma, o_atom, o_tma, w_thr, o_thr, m, eps).launch(
            grid=(grid, 1, 1),
            block=(plan.block_threads, 1, 1),
            smem=Storage.size_in_bytes(),
            stream=stream,
            min_blocks_per_mp=plan.ctas_per_sm,
            preferred_smem_carveout=100,
        )

    return launch, decl
