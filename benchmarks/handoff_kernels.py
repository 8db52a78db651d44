"""Kernels of the hand-off benchmark: each kind once with pipes, once hand-written with cutlass.pipeline.

Every factory ``f(stages, blocks)`` returns a host ``@cute.jit`` launcher ``launch(out, aux, iters,
stream)``: ``blocks`` CTAs, each running ``iters`` round trips; ``out`` gets a per-CTA self-check
value (see :data:`EXPECTED`), ``aux`` is the global tensor of the TMA kinds (:func:`aux_shape`).
The two versions of a kind do the same work in the same order; only the synchronization code differs.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import cutlass.pipeline as cpipe  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402
from cutlass.memory import SmemAllocator  # noqa: E402

from pipes import (  # noqa: E402
    CONSUMER_START_PHASE,
    PRODUCER_START_PHASE,
    ArrivalUnit,
    Completion,
    PipelineSpec,
    Role,
)
from pipes.cute import (  # noqa: E402
    AsyncPipeline,
    OrderedBarrier,
    OrderSpec,
    SlotReaders,
    StoreNotifyPipeline,
    TmaLoadPipeline,
    TmaStoreStaging,
    WarpSync,
    init_pipelines,
)

WARP = 32
WARPGROUP = 128
GROUPS = 2  # ordered kind: two math warpgroups
TILE = 32  # TMA kinds: TILE × TILE Int32 tiles (4 KiB)
TILE_BYTES = TILE * TILE * 4
SOURCE_TILES = 8  # TMA-load: each CTA cycles over this many source tiles (L2-resident)


def _warp() -> Int32:
    return cute.arch.make_warp_uniform(cute.arch.warp_idx())


def _block() -> Int32:
    return cute.arch.block_idx()[0]


def _launch(kernel, threads: int, blocks: int):
    @cute.jit
    def launch(out: cute.Tensor, aux: cute.Tensor, iters: Int32, stream):
        kernel(out, aux, iters).launch(grid=(blocks, 1, 1), block=(threads, 1, 1), stream=stream)

    return launch


# --- async: a producer warp writes the slot (all 32 threads arrive), a consumer warp reads it -------
def async_cutlass(stages: int, blocks: int):
    @cute.kernel
    def kernel(out: cute.Tensor, aux: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, 2 * stages)
        data = smem.allocate_tensor(Int32, cute.make_layout(stages))
        group = cpipe.CooperativeGroup(cpipe.Agent.Thread, WARP)
        pipe = cpipe.PipelineAsync.create(
            num_stages=stages, producer_group=group, consumer_group=group, barrier_storage=bars
        )
        warp = _warp()
        if warp == 0:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, stages)
            for i in cutlass.range(iters, unroll=1):
                pipe.producer_acquire(state)
                data[state.index] = i
                pipe.producer_commit(state)
                state.advance()
        if warp == 1:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, stages)
            total = Int32(0)
            for _ in cutlass.range(iters, unroll=1):
                pipe.consumer_wait(state)
                total += data[state.index]
                pipe.consumer_release(state)
                state.advance()
            if cute.arch.lane_idx() == 0:
                out[_block()] = total

    return _launch(kernel, 2 * WARP, blocks)


def async_pipes(stages: int, blocks: int, suspend_waits: bool | None = None):
    spec = PipelineSpec("handoff", stages, Role("producer", ArrivalUnit.WARP), Role("consumer", ArrivalUnit.WARP))
    pipe = AsyncPipeline(spec, suspend_waits=suspend_waits)

    @cute.kernel
    def kernel(out: cute.Tensor, aux: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        data = smem.allocate_tensor(Int32, cute.make_layout(stages))
        warp = _warp()
        if warp == 0:
            producer = ops.producer()
            for i in cutlass.range(iters, unroll=1):
                slot = producer.acquire()
                data[slot] = i
                producer.commit()
        if warp == 1:
            consumer = ops.consumer()
            total = Int32(0)
            for _ in cutlass.range(iters, unroll=1):
                slot = consumer.wait()
                total += data[slot]
                consumer.release()
            if cute.arch.lane_idx() == 0:
                out[_block()] = total

    return _launch(kernel, 2 * WARP, blocks)


def async_pipes_one_cursor(stages: int, blocks: int):
    """Diagnostic: the same pipeline driven through its explicit-state ops with ONE cursor per side
    (the cutlass.pipeline style), instead of the handles' acquire/commit and wait/release cursors."""
    spec = PipelineSpec("handoff", stages, Role("producer", ArrivalUnit.WARP), Role("consumer", ArrivalUnit.WARP))
    pipe = AsyncPipeline(spec)

    @cute.kernel
    def kernel(out: cute.Tensor, aux: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        data = smem.allocate_tensor(Int32, cute.make_layout(stages))
        warp = _warp()
        if warp == 0:
            state = ops.make_state(PRODUCER_START_PHASE)
            for i in cutlass.range(iters, unroll=1):
                ops.producer_acquire(state)
                data[state.index] = i
                ops.producer_commit(state)
                state.advance()
        if warp == 1:
            state = ops.make_state(CONSUMER_START_PHASE)
            total = Int32(0)
            for _ in cutlass.range(iters, unroll=1):
                ops.consumer_wait(state)
                total += data[state.index]
                ops.consumer_release(state)
                state.advance()
            if cute.arch.lane_idx() == 0:
                out[_block()] = total

    return _launch(kernel, 2 * WARP, blocks)


# --- TMA load: warp 0 arms the full barrier and TMA-loads a 4 KiB tile; warp 1 reads, one lane releases
def _tma_load_launch(kernel, blocks: int):
    @cute.jit
    def launch(out: cute.Tensor, aux: cute.Tensor, iters: Int32, stream):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        atom, gtma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), aux, smem_layout, (TILE, TILE))
        kernel(atom, gtma, out, iters).launch(grid=(blocks, 1, 1), block=(2 * WARP, 1, 1), stream=stream)

    return launch


def _tma_load_parts(atom, gtma, tiles):
    g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
    return cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
    )


def tma_load_cutlass(stages: int, blocks: int):
    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, 2 * stages)
        tiles = smem.allocate_tensor(Int32, cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)), 128)
        pipe = cpipe.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),  # one signaling lane per warp
            tx_count=TILE_BYTES,
            barrier_storage=bars,
        )
        warp = _warp()
        if warp == 0:
            s_part, g_part = _tma_load_parts(atom, gtma, tiles)
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, stages)
            for i in cutlass.range(iters, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(
                    atom,
                    g_part[(None, i % SOURCE_TILES, 0)],
                    s_part[(None, state.index)],
                    tma_bar_ptr=pipe.producer_get_barrier(state),
                )
                pipe.producer_commit(state)
                state.advance()
        if warp == 1:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, stages)
            total = Int32(0)
            lane = cute.arch.lane_idx()
            for _ in cutlass.range(iters, unroll=1):
                pipe.consumer_wait(state)
                total += tiles[0, lane, state.index]
                # Equivalent *correct* code: ld.shared reads before the TMA refill (pipes.cute.proxy).
                cute.arch.fence_proxy("async.shared", space="cta")
                pipe.consumer_release(state)
                state.advance()
            if lane == 0:
                out[_block()] = total

    return _tma_load_launch(kernel, blocks)


def tma_load_pipes(stages: int, blocks: int, suspend_waits: bool | None = None):
    spec = PipelineSpec(
        "tiles_in",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("reader", ArrivalUnit.ELECTED_PER_WARP),
        Completion.TRANSACTION_BYTES,
        TILE_BYTES,
    )
    pipe = TmaLoadPipeline(spec, suspend_waits=suspend_waits)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        tiles = smem.allocate_tensor(Int32, cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)), 128)
        warp = _warp()
        if warp == 0:
            s_part, g_part = _tma_load_parts(atom, gtma, tiles)
            producer = ops.producer()
            for i in cutlass.range(iters, unroll=1):
                slot = producer.acquire()
                cute.copy(
                    atom, g_part[(None, i % SOURCE_TILES, 0)], s_part[(None, slot)], tma_bar_ptr=producer.barrier(slot)
                )
                producer.commit()
        if warp == 1:
            consumer = ops.consumer()
            total = Int32(0)
            lane = cute.arch.lane_idx()
            for _ in cutlass.range(iters, unroll=1):
                slot = consumer.wait()
                total += tiles[0, lane, slot]
                consumer.release()
            if lane == 0:
                out[_block()] = total

    return _tma_load_launch(kernel, blocks)


def tma_load_pipes_one_cursor(stages: int, blocks: int):
    """Diagnostic: TMA load through the explicit-state ops with one cursor per side."""
    spec = PipelineSpec(
        "tiles_in",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("reader", ArrivalUnit.ELECTED_PER_WARP),
        Completion.TRANSACTION_BYTES,
        TILE_BYTES,
    )
    pipe = TmaLoadPipeline(spec)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        tiles = smem.allocate_tensor(Int32, cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)), 128)
        warp = _warp()
        if warp == 0:
            s_part, g_part = _tma_load_parts(atom, gtma, tiles)
            state = ops.make_state(PRODUCER_START_PHASE)
            for i in cutlass.range(iters, unroll=1):
                ops.producer_acquire(state)
                cute.copy(
                    atom,
                    g_part[(None, i % SOURCE_TILES, 0)],
                    s_part[(None, state.index)],
                    tma_bar_ptr=ops.full_barrier(state.index),
                )
                ops.producer_commit(state)
                state.advance()
        if warp == 1:
            state = ops.make_state(CONSUMER_START_PHASE)
            total = Int32(0)
            lane = cute.arch.lane_idx()
            for _ in cutlass.range(iters, unroll=1):
                ops.consumer_wait(state)
                total += tiles[0, lane, state.index]
                ops.consumer_release(state)
                state.advance()
            if lane == 0:
                out[_block()] = total

    return _tma_load_launch(kernel, blocks)


# --- TMA load, 2-CTA multicast: each CTA of a 2×1 cluster loads half of a 4 KiB tile and multicasts it to
#     both; two consumer warpgroups per CTA read it and release it on BOTH CTAs' empty barriers.
#     The stock release (PipelineTmaAsync with a cluster layout) arrives from one lane per warp per peer
#     CTA: 8 warps × 2 peers = 16 remote arrivals per stage and CTA. pipes does the same with an
#     ELECTED_PER_WARP × 8 consumer role; the diagnostic "pipes WARPGROUP" declares the consumers as
#     2 × WARPGROUP, whose every thread arrives on every peer: 2 × 128 × 2 = 512 per stage.
MC_CTAS = 2
MC_CONSUMER_WARPS = 2 * 4  # two warpgroups, warps 4..11
MC_THREADS = 3 * WARPGROUP  # warpgroup 0: warp 0 loads (warps 1-3 idle); warpgroups 1-2 consume


def _mc_blocks(blocks: int) -> int:
    """Whole clusters: the grid is rounded down to a multiple of the cluster size."""
    return max(MC_CTAS, blocks - blocks % MC_CTAS)


def _mc_launch(kernel, blocks: int):
    @cute.jit
    def launch(out: cute.Tensor, aux: cute.Tensor, iters: Int32, stream):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        op = cpasync.CopyBulkTensorTileG2SMulticastOp()
        atom, gtma = cpasync.make_tiled_tma_atom(op, aux, smem_layout, (TILE, TILE), num_multicast=MC_CTAS)
        kernel(atom, gtma, out, iters).launch(
            grid=(_mc_blocks(blocks), 1, 1), block=(MC_THREADS, 1, 1), cluster=(MC_CTAS, 1, 1), stream=stream
        )

    return launch


def _mc_parts(atom, gtma, tiles):
    """This CTA's slice of every source tile (it loads half, the multicast delivers both halves)."""
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
    return cpasync.tma_partition(
        atom, rank, cute.make_layout(MC_CTAS), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
    )


MC_MASK = (1 << MC_CTAS) - 1


def tma_multicast_cutlass(stages: int, blocks: int):
    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, 2 * stages)
        tiles = smem.allocate_tensor(Int32, cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)), 128)
        # The stock GEMM's counts: one arrival per consumer warp per multicast peer.
        pipe = cpipe.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, MC_CONSUMER_WARPS * MC_CTAS),
            tx_count=TILE_BYTES,
            barrier_storage=bars,
            cta_layout_vmnk=cute.make_layout((1, MC_CTAS, 1, 1)),
        )
        warp = _warp()
        if warp == 0:
            s_part, g_part = _mc_parts(atom, gtma, tiles)
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, stages)
            for i in cutlass.range(iters, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(
                    atom,
                    g_part[(None, i % SOURCE_TILES, 0)],
                    s_part[(None, state.index)],
                    tma_bar_ptr=pipe.producer_get_barrier(state),
                    mcast_mask=cutlass.Int16(MC_MASK),
                )
                pipe.producer_commit(state)
                state.advance()
            # The stock code's last step, and the one that keeps a multicast launch alive: wait for every
            # slot's empty barrier, so no peer CTA's remote release can land after this CTA has exited.
            pipe.producer_tail(state)
        if warp >= 4:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, stages)
            total = Int32(0)
            lane = cute.arch.lane_idx()
            for _ in cutlass.range(iters, unroll=1):
                pipe.consumer_wait(state)
                total += tiles[0, lane, state.index]
                # Equivalent *correct* code: ld.shared reads before the TMA refill (pipes.cute.proxy).
                cute.arch.fence_proxy("async.shared", space="cta")
                pipe.consumer_release(state)
                state.advance()
            if warp == 4 and lane == 0:
                out[_block()] = total

    return _mc_launch(kernel, blocks)


def tma_multicast_pipes(stages: int, blocks: int, consumer: Role | None = None):
    import warnings

    from pipes import PipesPerformanceWarning
    from pipes.cute import Multicast

    consumer = consumer or Role("mma", ArrivalUnit.ELECTED_PER_WARP, MC_CONSUMER_WARPS)
    spec = PipelineSpec(
        "mc_in", stages, Role("load", ArrivalUnit.ELECTED_PER_WARP), consumer, Completion.TRANSACTION_BYTES, TILE_BYTES
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PipesPerformanceWarning)  # the WARPGROUP diagnostic is slow on purpose
        pipe = TmaLoadPipeline(spec, multicast=Multicast(MC_CTAS, 1, a=False, b=True))  # 2 peers, derived

    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        tiles = smem.allocate_tensor(Int32, cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)), 128)
        warp = _warp()
        if warp == 0:
            s_part, g_part = _mc_parts(atom, gtma, tiles)
            producer = ops.producer()
            for i in cutlass.range(iters, unroll=1):
                slot = producer.acquire()
                cute.copy(
                    atom,
                    g_part[(None, i % SOURCE_TILES, 0)],
                    s_part[(None, slot)],
                    tma_bar_ptr=producer.barrier(slot),
                    mcast_mask=cutlass.Int16(MC_MASK),
                )
                producer.commit()
            producer.tail()  # every slot released, the peer CTA's remote releases included, before exit
        if warp >= 4:
            consumer_ = ops.consumer()
            total = Int32(0)
            lane = cute.arch.lane_idx()
            for _ in cutlass.range(iters, unroll=1):
                slot = consumer_.wait()
                total += tiles[0, lane, slot]
                consumer_.release()
            if warp == 4 and lane == 0:
                out[_block()] = total

    return _mc_launch(kernel, blocks)


# --- store-notify: warp 0 TMA-stores a tile, waits for its global writes (no .read) and notifies;
#     warp 1 reads the tile from global memory and releases. lag = stages - 1 stores stay in flight.
def _store_launch(kernel, blocks: int):
    @cute.jit
    def launch(out: cute.Tensor, aux: cute.Tensor, iters: Int32, stream):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        atom, gtma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), aux, smem_layout, (TILE, TILE))
        kernel(atom, gtma, aux, out, iters).launch(grid=(blocks, 1, 1), block=(2 * WARP, 1, 1), stream=stream)

    return launch


def _staging(smem: SmemAllocator, buffers: int) -> cute.Tensor:
    layout = cute.make_layout((TILE, TILE, buffers), stride=(TILE, 1, TILE * TILE))
    return smem.allocate_tensor(Int32, layout, 128)


def _store_parts(atom, gtma, staging):
    g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
    return cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(staging, 0, 2), cute.group_modes(g_tiles, 0, 2)
    )


@cute.jit
def _stage_tile(staging: cute.Tensor, buf: Int32, value: Int32) -> None:
    """The epilogue's smem writes (row 0), made visible to the TMA store (async proxy)."""
    staging[0, cute.arch.lane_idx(), buf] = value
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_warp()


def store_notify_cutlass(stages: int, blocks: int, warp_sync: bool = False):
    lag = stages - 1
    buffers = lag + 1

    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, gplain: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, 2 * stages)
        meta = smem.allocate_tensor(Int32, cute.make_layout((2, stages)))
        staging = _staging(smem, buffers)
        one = cpipe.CooperativeGroup(cpipe.Agent.Thread, 1)
        notify = cpipe.PipelineAsync.create(
            num_stages=stages, producer_group=one, consumer_group=one, barrier_storage=bars
        )
        store = cpipe.PipelineTmaStore.create(
            num_stages=buffers, producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, WARP)
        )
        warp = _warp()
        block = _block()
        if warp == 0:
            s_part, g_part = _store_parts(atom, gtma, staging)
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, stages)
            older = state.clone()  # the commit `lag` commits back, notified now
            for i in cutlass.range(iters, unroll=1):
                notify.producer_acquire(state)
                store.producer_acquire()  # wait_group.read: the staging buffer is free again
                # Equivalent *correct* code: only the storing lane's wait covers the store; the other
                # lanes must not overwrite the buffer before it returned (pipes' staging acquire syncs too).
                cute.arch.sync_warp()
                buf = i % buffers
                _stage_tile(staging, buf, i)
                cute.copy(atom, s_part[(None, buf)], g_part[(None, block * stages + state.index, 0)])
                store.producer_commit()  # commit_group
                cute.arch.cp_async_bulk_wait_group(lag, read=False)
                cute.arch.sync_warp()
                with cute.arch.elect_one():
                    meta[0, state.index] = 1
                    meta[1, state.index] = i
                    if cutlass.const_expr(lag == 0):
                        notify.producer_commit(state)
                    else:
                        if i >= lag:
                            notify.producer_commit(older)
                if cutlass.const_expr(lag > 0):  # noqa: SIM102 - a trace-time test around a run-time one
                    if i >= lag:
                        older.advance()
                state.advance()
            # tail: the last stores complete, their notifies, then an end-of-stream slot
            cute.arch.cp_async_bulk_wait_group(0, read=False)
            cute.arch.sync_warp()
            if cutlass.const_expr(lag > 0):  # noqa: SIM102 - a trace-time test around a run-time one
                if iters >= lag:
                    with cute.arch.elect_one():
                        notify.producer_commit(older)
            notify.producer_acquire(state)
            with cute.arch.elect_one():
                meta[0, state.index] = 0
                notify.producer_commit(state)
            state.advance()
            notify.producer_tail(state)
        if warp == 1:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, stages)
            lane = cute.arch.lane_idx()
            total = Int32(0)
            notify.consumer_wait(state)
            while meta[0, state.index] != 0:
                total += gplain[(block * stages + state.index) * TILE, lane]
                # Equivalent *correct* code: ld.global reads before a later TMA store rewrites the slot.
                cute.arch.fence_proxy("async.global")
                if cutlass.const_expr(warp_sync):
                    cute.arch.sync_warp()
                with cute.arch.elect_one():
                    notify.consumer_release(state)
                state.advance()
                notify.consumer_wait(state)
            with cute.arch.elect_one():
                notify.consumer_release(state)
            if lane == 0:
                out[block] = total

    return _store_launch(kernel, blocks)


def store_notify_pipes(
    stages: int, blocks: int, readers: SlotReaders = SlotReaders.GENERIC, suspend_waits: bool = True
):
    lag = stages - 1
    buffers = lag + 1
    spec = PipelineSpec(
        "tiles_out",
        stages,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        Role("reader", ArrivalUnit.ELECTED_PER_WARP),
        Completion.STORE_COMPLETE,
    )
    pipe = StoreNotifyPipeline(spec, lag=lag, meta_fields=1, readers=readers, suspend_waits=suspend_waits)
    ring = TmaStoreStaging(buffers, committed_by=pipe)  # the pipeline's commit closes each bulk group

    @cute.kernel
    def kernel(atom: cute.CopyAtom, gtma: cute.Tensor, gplain: cute.Tensor, out: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        (ops,) = init_pipelines((pipe,), allocator=smem)
        staging = _staging(smem, buffers)
        warp = _warp()
        block = _block()
        if warp == 0:
            s_part, g_part = _store_parts(atom, gtma, staging)
            producer = ops.producer()
            staged = ring.producer(sync=WarpSync())
            for i in cutlass.range(iters, unroll=1):
                slot = producer.acquire()
                buf = staged.acquire()  # wait_group.read: the staging buffer is free again
                staging[0, cute.arch.lane_idx(), buf] = i
                staged.publish()  # fence.proxy.async.shared::cta, bar.warp.sync
                cute.copy(atom, s_part[(None, buf)], g_part[(None, block * stages + slot, 0)])
                producer.commit(i)
                staged.commit()
            producer.tail()
        if warp == 1:
            consumer = ops.consumer()
            lane = cute.arch.lane_idx()
            total = Int32(0)
            slot = consumer.wait()
            while consumer.meta(slot).valid != 0:
                total += gplain[(block * stages + slot) * TILE, lane]
                consumer.release()
                slot = consumer.wait()
            consumer.release()
            if lane == 0:
                out[block] = total

    return _store_launch(kernel, blocks)


# --- ordered: two math warpgroups take turns; each turn, thread 0 of the group bumps a shared counter
@cute.jit
def _turn(counters: cute.Tensor, section: Int32, group: Int32, checks: Int32) -> Int32:
    """One turn's payload: the section's shared turn counter must say it is this group's turn.

    (Sections are independent rings: group 0 may be in section 1 while group 1 is in section 0.)
    """
    seen = counters[section]
    if cute.arch.thread_idx()[0] % WARPGROUP == 0:
        counters[section] = seen + 1
    return checks + Int32(seen % GROUPS == group)


@cute.jit
def _zero(counters: cute.Tensor, n: cutlass.Constexpr) -> None:
    if cute.arch.thread_idx()[0] < n:
        counters[cute.arch.thread_idx()[0]] = 0


def ordered_cutlass(stages: int, blocks: int):
    @cute.kernel
    def kernel(out: cute.Tensor, aux: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, GROUPS * stages)
        counters = smem.allocate_tensor(Int32, cute.make_layout(stages))
        _zero(counters, stages)  # the pipeline's create() syncs the CTA before the first turn
        group = _warp() // 4
        order = cpipe.PipelineOrder.create(
            depth=stages,
            length=GROUPS,
            group_id=group,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, WARPGROUP),
            barrier_storage=bars,
        )
        # The stock object's own state is not loop-carried, and neither is a state that is only passed
        # to it: hand-written code must carry one explicitly, by assigning it in the loop.
        state = cpipe.PipelineState(stages, Int32(0), Int32(0), Int32(group == 0))
        checks = Int32(0)
        for i in cutlass.range(iters, unroll=1):
            order.wait(state)
            checks = _turn(counters, i % stages, group, checks)
            state = order.arrive(state)
        if cute.arch.thread_idx()[0] % WARPGROUP == 0:
            out[_block() * GROUPS + group] = checks

    return _launch(kernel, GROUPS * WARPGROUP, blocks)


def ordered_pipes(stages: int, blocks: int, suspend_waits: bool = False):
    spec = OrderSpec("pingpong", groups=GROUPS, role=Role("math", ArrivalUnit.WARPGROUP), depth=stages)

    @cute.kernel
    def kernel(out: cute.Tensor, aux: cute.Tensor, iters: Int32):
        smem = SmemAllocator()
        bars = smem.allocate_array(Int64, spec.barriers)
        counters = smem.allocate_tensor(Int32, cute.make_layout(stages))
        _zero(counters, stages)  # the pipeline's create() syncs the CTA before the first turn
        group = _warp() // 4
        order = OrderedBarrier.create(spec, bars, group, suspend_waits=suspend_waits)
        checks = Int32(0)
        for i in cutlass.range(iters, unroll=1):
            order.wait()
            checks = _turn(counters, i % stages, group, checks)
            order.arrive()
        if cute.arch.thread_idx()[0] % WARPGROUP == 0:
            out[_block() * GROUPS + group] = checks

    return _launch(kernel, GROUPS * WARPGROUP, blocks)


# --- self-checks and auxiliary tensors ------------------------------------------------------------
def _wrap(value: int) -> int:
    """An Int32 sum as the kernel computes it (two's complement wrap-around)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def source_value(tile: int, row: int, col: int) -> int:
    return tile * 4096 + row * TILE + col + 1


EXPECTED = {
    "async": lambda iters: _wrap(iters * (iters - 1) // 2),
    "TMA load": lambda iters: _wrap(sum(source_value(i % SOURCE_TILES, 0, 0) for i in range(iters))),
    "TMA load multicast": lambda iters: _wrap(sum(source_value(i % SOURCE_TILES, 0, 0) for i in range(iters))),
    "store-notify": lambda iters: _wrap(iters * (iters - 1) // 2),
    "ordered": lambda iters: iters,
}
OUTPUTS_PER_BLOCK = {"async": 1, "TMA load": 1, "TMA load multicast": 1, "store-notify": 1, "ordered": GROUPS}


def launched_blocks(kind: str, blocks: int) -> int:
    """CTAs a kind's launcher really starts for ``blocks`` (the multicast kind launches whole clusters)."""
    return _mc_blocks(blocks) if kind == "TMA load multicast" else blocks


def aux_shape(kind: str, stages: int, blocks: int) -> tuple[int, int]:
    """Rows × columns of the kind's global Int32 tensor (TMA source or destination)."""
    if kind in ("TMA load", "TMA load multicast"):
        return (SOURCE_TILES * TILE, TILE)
    if kind == "store-notify":
        return (blocks * stages * TILE, TILE)
    return (1, 1)


def aux_values(kind: str, rows: int, cols: int):
    """Host contents of the aux tensor (numpy): the TMA-load source pattern, else zeros."""
    import numpy as np

    if kind not in ("TMA load", "TMA load multicast"):
        return np.zeros((rows, cols), dtype=np.int32)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return ((r // TILE) * 4096 + (r % TILE) * TILE + c + 1).astype(np.int32)


#: Extra pipes variants timed next to the two above, to locate a gap (diagnostic columns).
DIAGNOSTICS = {
    # Each kind's other wait flavour next to its default (pipes.cute: suspend_waits), the row that
    # justifies the default: polling for async / TMA load / ordered, suspending for store-notify.
    "async": {
        "pipes 1-cursor": async_pipes_one_cursor,
        "pipes suspending waits": lambda stages, blocks: async_pipes(stages, blocks, suspend_waits=True),
    },
    "TMA load": {
        "pipes 1-cursor": tma_load_pipes_one_cursor,
        "pipes suspending waits": lambda stages, blocks: tma_load_pipes(stages, blocks, suspend_waits=True),
    },
    # The per-thread multi-peer release (2 × WARPGROUP: 512 remote arrivals per stage) next to the
    # elected one the "pipes" column uses (ELECTED_PER_WARP × 8: 16).
    "TMA load multicast": {
        "pipes WARPGROUP": lambda stages, blocks: tma_multicast_pipes(
            stages, blocks, Role("mma", ArrivalUnit.WARPGROUP, MC_CONSUMER_WARPS // 4)
        ),
    },
    "ordered": {"pipes suspending waits": lambda stages, blocks: ordered_pipes(stages, blocks, suspend_waits=True)},
    # The consumer's fence.proxy.async.global (pipes.cute.proxy) left out: what the fence costs.
    "store-notify": {
        "pipes no-fence": lambda stages, blocks: store_notify_pipes(stages, blocks, SlotReaders.ASYNC),
        "pipes polling waits": lambda stages, blocks: store_notify_pipes(stages, blocks, suspend_waits=False),
        # pipes' elected release syncs the warp first, so every lane's reads precede the one arrival.
        "cutlass+warp-sync": lambda stages, blocks: store_notify_cutlass(stages, blocks, warp_sync=True),
    },
}

KINDS = {
    "async": (async_cutlass, async_pipes),
    "TMA load": (tma_load_cutlass, tma_load_pipes),
    "TMA load multicast": (tma_multicast_cutlass, tma_multicast_pipes),
    "store-notify": (store_notify_cutlass, store_notify_pipes),
    "ordered": (ordered_cutlass, ordered_pipes),
}
