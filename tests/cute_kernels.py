"""Test kernels for the pipes.cute pipelines, shared by the CPU compile tests and the GPU stress tests.

Each ``build_*`` returns a :class:`Built` holding the host ``@cute.jit`` launcher and the pipeline
declaration; :func:`compile_fake` compiles it for sm_90a with fake tensors (no GPU needed).
Patterns: tile ``t`` element ``e`` holds ``t * 4096 + e + 1`` (never 0), so a stale tile (an older
``t``), a lost tile, or unwritten memory all fail the per-element comparison.
"""

import os
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402

from pipes import ArrivalUnit, Completion, PipelineSpec, Role  # noqa: E402
from pipes.cute import (  # noqa: E402
    AsyncPipeline,
    NamedBarrierAllocator,
    RoleLayout,
    StoreNotifyPipeline,
    TmaLoadPipeline,
    TmaStoreStaging,
    Warps,
    WarpSync,
    init_pipelines,
    storage_words,
)

COMPILE_OPTIONS = "--gpu-arch sm_90a --keep-ptx"
LANE_VALUES = 4  # Int32 values per lane per tile in the async kernel


@dataclass
class Built:
    launcher: Any
    pipeline: Any
    example_args: tuple


def pattern(tile: Any, element: Any) -> Any:
    return tile * 4096 + element + 1


@cute.jit
def spin(delay_ns: Int32) -> None:
    """Busy-wait about ``delay_ns`` nanoseconds (the deliberately slow consumer); 0 costs one compare."""
    if delay_ns > 0:
        start = cute.arch.globaltimer()
        while cute.arch.globaltimer() - start < Int64(delay_ns):
            pass


def build_async(
    stages: int,
    *,
    producer_unit: ArrivalUnit = ArrivalUnit.ELECTED_PER_WARP,
    consumer_unit: ArrivalUnit = ArrivalUnit.WARP,
    debug: Any = None,
    layout_threads: dict[str, int] | None = None,
) -> Built:
    spec = PipelineSpec(
        "async_stress",
        stages,
        Role("writer", producer_unit, 1),
        Role("reader", consumer_unit, 1),
        Completion.ARRIVAL,
    )
    pipe = AsyncPipeline(spec, debug=debug)
    layout_threads = layout_threads or {}
    layout = RoleLayout(
        64,
        {
            "writer": Warps(0, 1, threads=layout_threads.get("writer")),
            "reader": Warps(1, 1, threads=layout_threads.get("reader")),
        },
    )
    words = storage_words(pipe)
    elems = 32 * LANE_VALUES

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        data: cute.struct.Align[cute.struct.MemRange[Int32, elems * stages], 16]

    @cute.kernel
    def kernel(out: cute.Tensor, n_tiles: Int32, delay: Int32):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        data = st.data.get_tensor(cute.make_layout((elems, stages)))
        lane = cute.arch.lane_idx()
        bid, _, _ = cute.arch.block_idx()
        if layout.is_role("writer"):
            producer = pipe.producer()
            for t in cutlass.range(n_tiles, unroll=1):
                slot = producer.acquire()
                for j in cutlass.range_constexpr(LANE_VALUES):
                    data[lane * LANE_VALUES + j, slot] = pattern(t, lane * LANE_VALUES + j)
                producer.commit()
            producer.tail()
        if layout.is_role("reader"):
            consumer = pipe.consumer()
            bad = Int32(0)
            seen = Int32(0)
            for t in cutlass.range(n_tiles, unroll=1):
                slot = consumer.wait()
                for j in cutlass.range_constexpr(LANE_VALUES):
                    if data[lane * LANE_VALUES + j, slot] != pattern(t, lane * LANE_VALUES + j):
                        bad = bad + 1
                seen = seen + 1
                spin(delay)
                consumer.release()
            out[bid, 0, lane, 0] = bad
            out[bid, 0, lane, 1] = seen

    @cute.jit
    def launch(out: cute.Tensor, n_tiles: Int32, delay: Int32, stream: Any):
        kernel(out, n_tiles, delay).launch(grid=(out.shape[0], 1, 1), block=(64, 1, 1), stream=stream)

    return Built(launch, pipe, ())


TILE = 32  # tiles are TILE × TILE Int32 (4 KiB)


def build_store_notify(
    stages: int,
    lag: int,
    *,
    fan_out: bool = False,
    producer_unit: ArrivalUnit = ArrivalUnit.ELECTED_PER_WARP,
    staging: int = 2,
    debug: Any = None,
    plant_deadlock: bool = False,
    slot_readers: Any = None,
) -> Built:
    """Warp 0 stores tiles with TMA into a global ring of ``stages`` tile slots per CTA and commits
    them; warp 1 (and warp 2 with ``fan_out``) waits, checks meta and every element from global
    memory, and releases. Slot reuse in global memory makes a too-early notify show up as stale data.

    ``plant_deadlock``: the first reader never releases its first tile, so the producer's acquire of
    the same slot one lap later waits forever (debug mode must trap there, naming slot 0).
    """
    readers = [Role("reader", ArrivalUnit.WARP, 1)]
    if fan_out:
        readers.append(Role("reader2", ArrivalUnit.ELECTED_PER_WARP, 1))
    spec = PipelineSpec("tiles_out", stages, Role("epi", producer_unit, 1), tuple(readers), Completion.STORE_COMPLETE)
    extra = {"readers": slot_readers} if slot_readers is not None else {}
    pipe = StoreNotifyPipeline(spec, lag=lag, meta_fields=2, debug=debug, **extra)
    staging_ring = TmaStoreStaging(staging, name="stage", committed_by=pipe)  # producer.commit closes groups
    epi_threads = 1 if producer_unit is ArrivalUnit.THREAD else None
    roles = {"epi": Warps(0, 1, threads=epi_threads), "reader": Warps(1)}
    if fan_out:
        roles["reader2"] = Warps(2)
    threads = 32 * (len(readers) + 1)
    layout = RoleLayout(threads, roles)
    words = storage_words(pipe)
    n_readers = len(readers)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        stage: cute.struct.Align[cute.struct.MemRange[Int32, TILE * TILE * staging], 128]

    @cute.jit
    def check_tiles(
        role_name: cutlass.Constexpr, role_index: cutlass.Constexpr, gplain: cute.Tensor, out: cute.Tensor, delay: Int32
    ):
        lane = cute.arch.lane_idx()
        bid, _, _ = cute.arch.block_idx()
        consumer = pipe.consumer(role_name)
        bad = Int32(0)
        expected = Int32(0)
        slot = consumer.wait()
        meta = consumer.meta(slot)
        while meta.valid != 0:
            if meta[0] != expected or meta[1] != bid:
                bad = bad + 1
            row0 = (bid * stages + slot) * TILE
            for i in cutlass.range_constexpr(TILE):
                if gplain[row0 + i, lane] != pattern(expected, i * TILE + lane):
                    bad = bad + 1
            spin(delay)
            if cutlass.const_expr(plant_deadlock and role_index == 0):
                if expected != 0:
                    consumer.release()
            else:
                consumer.release()
            expected = expected + 1
            slot = consumer.wait()
            meta = consumer.meta(slot)
        consumer.release()
        out[bid, role_index, lane, 0] = bad
        out[bid, role_index, lane, 1] = expected

    @cute.kernel
    def kernel(
        tma_atom: cute.CopyAtom, gtma: cute.Tensor, gplain: cute.Tensor, out: cute.Tensor, n_tiles: Int32, delay: Int32
    ):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        stage_tiles = st.stage.get_tensor(cute.make_layout((TILE, TILE, staging), stride=(TILE, 1, TILE * TILE)))
        lane = cute.arch.lane_idx()
        bid, _, _ = cute.arch.block_idx()
        if layout.is_role("epi"):
            g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
            s_part, g_part = cpasync.tma_partition(
                tma_atom, 0, cute.make_layout(1), cute.group_modes(stage_tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
            )
            producer = pipe.producer()
            staged = staging_ring.producer(sync=WarpSync())  # the epilogue is this one warp
            for t in cutlass.range(n_tiles, unroll=1):
                buf = staged.acquire()  # the store that read this buffer `staging` tiles ago is done reading it
                slot = producer.acquire()
                for i in cutlass.range_constexpr(TILE):
                    stage_tiles[i, lane, buf] = pattern(t, i * TILE + lane)
                staged.publish()
                cute.copy(tma_atom, s_part[(None, buf)], g_part[(None, bid * stages + slot, 0)])
                producer.commit(t, bid)  # commit_group, wait_group <lag>, notify
                staged.commit()  # only moves the staging cursor (committed_by=pipe)
            producer.tail()
            staged.tail()
        if layout.is_role("reader"):
            check_tiles("reader", 0, gplain, out, delay)
        if cutlass.const_expr(n_readers > 1):  # noqa: SIM102 - a static branch around a dynamic one
            if layout.is_role("reader2"):
                check_tiles("reader2", 1, gplain, out, delay)

    @cute.jit
    def launch(gout: cute.Tensor, out: cute.Tensor, n_tiles: Int32, delay: Int32, stream: Any):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        tma_atom, gtma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), gout, smem_layout, (TILE, TILE))
        kernel(tma_atom, gtma, gout, out, n_tiles, delay).launch(
            grid=(out.shape[0], 1, 1), block=(threads, 1, 1), stream=stream
        )

    return Built(launch, pipe, ())


def build_tma_load(
    stages: int, *, consumer_unit: ArrivalUnit = ArrivalUnit.WARP, debug: Any = None, readers: Any = None
) -> Built:
    """Warp 0 TMA-loads tile ``t`` of this CTA (rows ``(bid·n + t)·32 …`` of the source, filled by the
    host with ``pattern``) into stage ``slot``; warp 1 waits, checks every element, releases."""
    tile_bytes = TILE * TILE * 4
    spec = PipelineSpec(
        "tiles_in",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("reader", consumer_unit, 1),
        Completion.TRANSACTION_BYTES,
        tile_bytes,
    )
    pipe = TmaLoadPipeline(spec, debug=debug, **({"readers": readers} if readers is not None else {}))
    layout = RoleLayout(64, {"load": Warps(0), "reader": Warps(1)})
    words = storage_words(pipe)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        stage: cute.struct.Align[cute.struct.MemRange[Int32, TILE * TILE * stages], 128]

    @cute.kernel
    def kernel(tma_atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, n_tiles: Int32, delay: Int32):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        tiles = st.stage.get_tensor(cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)))
        lane = cute.arch.lane_idx()
        bid, _, _ = cute.arch.block_idx()
        if layout.is_role("load"):
            g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
            s_part, g_part = cpasync.tma_partition(
                tma_atom, 0, cute.make_layout(1), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
            )
            producer = pipe.producer()
            for _t in cutlass.range(n_tiles, unroll=1):
                k = Int32(producer.count)  # the tile index from the handle (cutlass' state.count), = _t
                slot = producer.acquire()
                cute.copy(
                    tma_atom,
                    g_part[(None, bid * n_tiles + k, 0)],
                    s_part[(None, slot)],
                    tma_bar_ptr=producer.barrier(slot),
                )
                producer.commit()
            producer.tail()
        if layout.is_role("reader"):
            consumer = pipe.consumer()
            bad = Int32(0)
            seen = Int32(0)
            for t in cutlass.range(n_tiles, unroll=1):
                slot = consumer.wait()
                for i in cutlass.range_constexpr(TILE):
                    if tiles[i, lane, slot] != pattern(bid * n_tiles + t, i * TILE + lane):
                        bad = bad + 1
                seen = seen + 1
                spin(delay)
                consumer.release()
            out[bid, 0, lane, 0] = bad
            out[bid, 0, lane, 1] = seen

    @cute.jit
    def launch(gsrc: cute.Tensor, out: cute.Tensor, n_tiles: Int32, delay: Int32, stream: Any):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        tma_atom, gtma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gsrc, smem_layout, (TILE, TILE))
        kernel(tma_atom, gtma, out, n_tiles, delay).launch(grid=(out.shape[0], 1, 1), block=(64, 1, 1), stream=stream)

    return Built(launch, pipe, ())


def build_gemm_smoke(
    stages: int = 3, lag: int = 1, store_stages: int = 2, debug: Any = None, staging_buffers: int = 2
) -> Built:
    """GEMM-shaped smoke kernel: C = A · Bᵀ (fp32, 32×32 tiles, 32-wide k-steps), persistent CTAs.

    warp 0 "load": TMA-loads A and B k-tiles through a TmaLoadPipeline (one stream of (tile, k));
    warps 4-7 "mma" (one warpgroup): consume the k-tiles, FMA from shared memory, stage C in one of
    ``staging_buffers`` shared-memory buffers (a TmaStoreStaging ring); warp 4 "store" TMA-stores it and
    commits (m, n) to a StoreNotifyPipeline;
    warp 1 "comm": waits for each finished tile, reads it from global memory, writes its sum to
    ``sums[m, n]``, releases; ends on end-of-stream.
    """
    k_step = TILE
    load_spec = PipelineSpec(
        "mainloop",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, 4),  # one elected lane per math warp releases (as CUTLASS)
        Completion.TRANSACTION_BYTES,
        2 * TILE * k_step * 4,
    )
    store_spec = PipelineSpec(
        "epilogue",
        store_stages,
        Role("store", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("comm", ArrivalUnit.WARP, 1),
        Completion.STORE_COMPLETE,
    )
    load = TmaLoadPipeline(load_spec, debug=debug)
    out_pipe = StoreNotifyPipeline(store_spec, lag=lag, meta_fields=2, debug=debug)
    c_staging = TmaStoreStaging(staging_buffers, name="c_staging", committed_by=out_pipe)
    layout = RoleLayout(256, {"load": Warps(0), "comm": Warps(1), "mma": Warps(4, 4), "store": Warps(4)})
    words = storage_words(load, out_pipe)
    per_thread = TILE * TILE // 128  # outputs per math thread

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        a: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE * k_step * stages], 128]
        b: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE * k_step * stages], 128]
        c: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE * TILE * staging_buffers], 128]

    @cute.kernel
    def kernel(
        atom_a: cute.CopyAtom,
        ta: cute.Tensor,
        atom_b: cute.CopyAtom,
        tb: cute.Tensor,
        atom_c: cute.CopyAtom,
        tc: cute.Tensor,
        cplain: cute.Tensor,
        sums: cute.Tensor,
        tiles_m: Int32,
        tiles_n: Int32,
        k_tiles: Int32,
    ):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((load, out_pipe), st.pipes.data_ptr(), layout=layout)
        named = NamedBarrierAllocator(block_threads=256)
        epilogue_bar = named.allocate("epilogue", threads=128)
        stage_layout = cute.make_layout((TILE, k_step, stages), stride=(k_step, 1, TILE * k_step))
        sa = st.a.get_tensor(stage_layout)
        sb = st.b.get_tensor(stage_layout)
        sc = st.c.get_tensor(cute.make_layout((TILE, TILE, staging_buffers), stride=(TILE, 1, TILE * TILE)))
        bid, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        n_tiles = tiles_m * tiles_n
        tidx, _, _ = cute.arch.thread_idx()
        lane = cute.arch.lane_idx()

        if layout.is_role("load"):
            ga = cute.local_tile(ta, (TILE, k_step), (None, None))
            gb = cute.local_tile(tb, (TILE, k_step), (None, None))
            sa_part, ga_part = cpasync.tma_partition(
                atom_a, 0, cute.make_layout(1), cute.group_modes(sa, 0, 2), cute.group_modes(ga, 0, 2)
            )
            sb_part, gb_part = cpasync.tma_partition(
                atom_b, 0, cute.make_layout(1), cute.group_modes(sb, 0, 2), cute.group_modes(gb, 0, 2)
            )
            producer = load.producer()
            for tile in cutlass.range(bid, n_tiles, grid, unroll=1):
                tm = tile % tiles_m
                tn = tile // tiles_m
                for k in cutlass.range(k_tiles, unroll=1):
                    slot = producer.acquire()
                    cute.copy(atom_a, ga_part[(None, tm, k)], sa_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                    cute.copy(atom_b, gb_part[(None, tn, k)], sb_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                    producer.commit()
            producer.tail()

        if layout.is_role("mma"):
            gc = cute.local_tile(tc, (TILE, TILE), (None, None))
            sc_part, gc_part = cpasync.tma_partition(
                atom_c, 0, cute.make_layout(1), cute.group_modes(sc, 0, 2), cute.group_modes(gc, 0, 2)
            )
            consumer = load.consumer()
            storer = out_pipe.producer()
            staged = c_staging.producer(sync=epilogue_bar)  # all 128 threads write the staging buffers
            t = tidx - 128
            row = t // 4
            col0 = (t % 4) * per_thread
            for tile in cutlass.range(bid, n_tiles, grid, unroll=1):
                tm = tile % tiles_m
                tn = tile // tiles_m
                acc = cute.make_rmem_tensor((per_thread,), cutlass.Float32)
                acc.fill(0.0)
                for _k in cutlass.range(k_tiles, unroll=1):
                    slot = consumer.wait()
                    for kk in cutlass.range_constexpr(k_step):
                        a_val = sa[row, kk, slot]
                        for j in cutlass.range_constexpr(per_thread):
                            acc[j] = acc[j] + a_val * sb[col0 + j, kk, slot]
                    consumer.release()
                buf = staged.acquire()  # the store that read this buffer before is done reading it
                for j in cutlass.range_constexpr(per_thread):
                    sc[row, col0 + j, buf] = acc[j]
                staged.publish()  # fence.proxy.async in every writer, then the epilogue barrier
                if layout.is_role("store"):
                    storer.acquire()
                    cute.copy(atom_c, sc_part[(None, buf)], gc_part[(None, tm, tn)])
                    storer.commit(tm, tn)  # closes the bulk group, waits for `lag`, notifies
                staged.commit()
            if layout.is_role("store"):
                storer.tail()
            staged.tail()

        if layout.is_role("comm"):
            comm = out_pipe.consumer()
            slot = comm.wait()
            meta = comm.meta(slot)
            while meta.valid != 0:
                total = cutlass.Float32(0.0)
                for i in cutlass.range_constexpr(TILE):
                    total = total + cplain[meta[0] * TILE + i, meta[1] * TILE + lane]
                for offset in cutlass.range_constexpr(5):
                    total = total + cute.arch.shuffle_sync_bfly(total, offset=1 << offset)
                if lane == 0:
                    sums[meta[0], meta[1]] = total
                comm.release()
                slot = comm.wait()
                meta = comm.meta(slot)
            comm.release()

    @cute.jit
    def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, sums: cute.Tensor, grid: Int32, stream: Any):
        ab_layout = cute.make_layout((TILE, k_step), stride=(k_step, 1))
        atom_a, ta = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, ab_layout, (TILE, k_step))
        atom_b, tb = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, ab_layout, (TILE, k_step))
        c_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        atom_c, tc = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, c_layout, (TILE, TILE))
        tiles_m = c.shape[0] // TILE
        tiles_n = c.shape[1] // TILE
        k_tiles = a.shape[1] // k_step
        kernel(atom_a, ta, atom_b, tb, atom_c, tc, c, sums, tiles_m, tiles_n, k_tiles).launch(
            grid=(grid, 1, 1), block=(256, 1, 1), stream=stream
        )

    return Built(launch, (load, out_pipe), ())


def fake_f32(*shape: int) -> Any:
    from cutlass.cute.runtime import make_fake_compact_tensor

    order = tuple(range(len(shape) - 1, -1, -1))
    return make_fake_compact_tensor(cutlass.Float32, shape, stride_order=order, assumed_align=16)


def fake_out(*shape: int) -> Any:
    """A fake row-major Int32 tensor (what torch allocates on the GPU runner)."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    order = tuple(range(len(shape) - 1, -1, -1))
    return make_fake_compact_tensor(Int32, shape, stride_order=order, assumed_align=16)


def compile_fake(launcher: Any, *args: Any, options: str = COMPILE_OPTIONS) -> Any:
    from cutlass.cute.runtime import make_fake_stream

    return cute.compile(launcher, *args, make_fake_stream(), options=options)


def ptx_of(compiled: Any) -> str:
    return compiled.artifacts.PTX
