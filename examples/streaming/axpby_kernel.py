"""``out = alpha * x + beta * y`` on two ``(M, N)`` inputs: the streaming pipeline with nothing but the
pipeline in it, so it runs at the copy limit. Each stage holds one tile of ``x`` and the same tile of
``y`` (two TMA loads on one full barrier); a CTA takes tiles ``b, b + grid, …`` (persistent).

Roles and pipelines (:mod:`.roles`):

| producer role → consumer role | object | barrier | arrivals per phase |
|---|---|---|---|
| ``load`` (1 warp, elected lane) → ``math`` (W warps) | ``TmaLoadPipeline`` | ``full[s]`` | 1 + 2 × tile bytes (TMA) |
| ``math`` → ``load`` | same | ``empty[s]`` | 32·W (``WARPGROUP`` × W/4) |
| ``math`` → TMA store (warp 0) | ``TmaStoreStaging`` | named ``epilogue`` (32·W threads) | ``bar.sync`` ×2 per tile |
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


def build_axpby(plan: Plan, *, debug: bool | None = None) -> tuple[Any, Declarations]:
    """The host launcher ``launch(x, y, out, m, alpha, beta, grid, stream)`` and the declarations."""
    decl = declare(plan, debug=debug)
    load, staging, layout = decl.load, decl.staging, decl.layout
    dtype = tiles.cute_dtype(plan)
    k_chunks, slots, rows_per_warp, vectors = plan.chunks, plan.stages, plan.rows_per_warp, plan.vectors
    tma_store = plan.config.store is Store.TMA
    out_slots = max(plan.store_stages, 1)
    words = storage_words(load)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        x: cute.struct.Align[cute.struct.MemRange[dtype, slots * plan.tile_elements], 128]
        y: cute.struct.Align[cute.struct.MemRange[dtype, slots * plan.tile_elements], 128]
        out: cute.struct.Align[cute.struct.MemRange[dtype, out_slots * plan.tile_elements], 128]

    @cute.kernel
    def kernel(
        x_atom: cute.CopyAtom,
        x_tma: cute.Tensor,
        y_atom: cute.CopyAtom,
        y_tma: cute.Tensor,
        o_atom: cute.CopyAtom,
        o_tma: cute.Tensor,
        o_thr: cute.Tensor,
        m: Int32,
        alpha: Float32,
        beta: Float32,
    ):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines(decl.pipelines, st.pipes.data_ptr(), layout=layout)
        named = NamedBarrierAllocator(block_threads=plan.block_threads)
        epilogue = named.allocate("epilogue", threads=plan.consumer_threads)
        x_box = st.x.get_tensor(tiles.box_layout(plan, slots))
        y_box = st.y.get_tensor(tiles.box_layout(plan, slots))
        xs = st.x.get_tensor(tiles.thread_layout(plan, slots))
        ys = st.y.get_tensor(tiles.thread_layout(plan, slots))
        out_box = st.out.get_tensor(tiles.box_layout(plan, out_slots))
        out = st.out.get_tensor(tiles.thread_layout(plan, out_slots))
        bid, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        items = (m + plan.rows - 1) // plan.rows * k_chunks

        if layout.is_role(LOAD_ROLE):
            sx_part, gx_part = tiles.partition_tiles(plan, x_atom, x_tma, x_box)
            sy_part, gy_part = tiles.partition_tiles(plan, y_atom, y_tma, y_box)
            producer = load.producer()
            for item in cutlass.range(bid, items, grid, unroll=1):
                blk = item // k_chunks
                k = item - blk * k_chunks
                slot = producer.acquire()
                cute.copy(x_atom, gx_part[(None, blk, k, 0)], sx_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                cute.copy(y_atom, gy_part[(None, blk, k, 0)], sy_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                producer.commit()
            producer.tail()

        if layout.is_role(MATH_ROLE):
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            lane = cute.arch.lane_idx()
            first_row, index = tiles.thread_coords(plan, warp, lane)
            so_part, go_part = tiles.partition_tiles(plan, o_atom, o_tma, out_box)
            output = Output(out, o_thr, o_atom, so_part, go_part, m)
            consumer = load.consumer()
            stores = staging.producer(sync=epilogue) if tma_store else None
            for item in cutlass.range(bid, items, grid, unroll=1):
                blk = item // k_chunks
                k = item - blk * k_chunks
                slot = consumer.wait()
                out_slot = stores.acquire() if tma_store else 0
                for r in cutlass.range_constexpr(rows_per_warp):
                    row = tiles.row_of(plan, first_row, r)
                    for j in cutlass.range_constexpr(vectors):
                        x = xs[(None, index, j), row, slot].load().to(Float32)
                        y = ys[(None, index, j), row, slot].load().to(Float32)
                        put(plan, output, (x * alpha + y * beta).to(dtype), out_slot, (blk, k, row, index), j)
                stores, consumer = finish_chunk(plan, output, stores, consumer, warp, out_slot, (blk, k))
            if cutlass.const_expr(tma_store):
                stores.tail()

    @cute.jit
    def launch(
        x: cute.Pointer,
        y: cute.Pointer,
        o: cute.Pointer,
        m: Int32,
        alpha: Float32,
        beta: Float32,
        grid: Int32,
        stream: Any,
    ):
        from cutlass.cute.nvgpu import cpasync

        tile_layout = cute.select(tiles.box_layout(plan, 1), mode=[0, 1, 2])
        x_atom, x_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), tiles.tma_view(plan, x, m), tile_layout, tiles.box_tiler(plan)
        )
        y_atom, y_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), tiles.tma_view(plan, y, m), tile_layout, tiles.box_tiler(plan)
        )
        o_atom, o_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), tiles.tma_view(plan, o, m), tile_layout, tiles.box_tiler(plan)
        )
        o_thr = tiles.global_thread_view(plan, o, m)
        kernel(x_atom, x_tma, y_atom, y_tma, o_atom, o_tma, o_thr, m, alpha, beta).launch(
            grid=(grid, 1, 1),
            block=(plan.block_threads, 1, 1),
            smem=Storage.size_in_bytes(),
            stream=stream,
            min_blocks_per_mp=plan.ctas_per_sm,
            preferred_smem_carveout=100,
        )

    return launch, decl
