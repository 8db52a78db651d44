"""A persistent, warp-specialized Blackwell (sm_100a) dense GEMM written with pipes objects.

| role        | warps | pipelines and objects                                                            |
|-------------|-------|----------------------------------------------------------------------------------|
| epilogue    | 0-3   | ``acc`` consumer; ``TmaStoreStaging`` producer (warp 0 stores); TMEM allocator   |
| mma         | 4     | ``ab`` consumer (tcgen05.commit releases), ``acc`` producer (tcgen05.commit)     |
| tma         | 5     | ``ab`` producer (TMA loads, multicast in a cluster)                              |

| pipeline | kind                | stages | producer → consumer                 | full / empty arrivals per stage |
|----------|---------------------|--------|-------------------------------------|---------------------------------|
| ``ab``   | ``TmaUmmaPipeline`` | fill   | tma (1 elected) → mma (1 elected)   | 1 + bytes / ``mma_peers``       |
| ``acc``  | ``UmmaAccPipeline`` | 2      | mma (1 commit) → epilogue (4 warps) | 1 / 4 × ``cta_group``           |
| staging  | ``TmaStoreStaging`` | fill   | epilogue → TMA store (bulk groups)  | none: ``wait_group.read``       |

The port of NVIDIA's CuTe DSL example ``blackwell/kernel/dense_gemm/dense_gemm_persistent.py`` (TMA-store
epilogue): the same roles, tiles, MMA and copies; every synchronization is a pipes object instead of a
``cutlass.pipeline`` call. ``C = A · B`` with fp16/bf16 A and B (K-major), fp32 accumulation in tensor
memory, C stored with TMA; ``cta_group=2`` runs each MMA over a CTA pair.

Also: ``TmemAllocation`` (warp 0 allocates the accumulator columns; the MMA and epilogue warps meet on a
named barrier before reading the address), ``NamedBarrierAllocator`` (epilogue barrier, TMEM barrier) and
``init_pipelines_arrive`` / ``wait`` (barrier init, then one cluster barrier before the TMEM allocation).

No Blackwell GPU is needed to build it: :func:`compile_gemm` compiles it for sm_100a on a CPU with fake
tensors (tests/test_blackwell_gemm_census.py compares its synchronization with the stock kernel's: equal
in every loop but the epilogue's release, which adds a ``bar.warp.sync`` and, in a pair, is cluster-scoped).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import cutlass.memory  # noqa: E402
import cutlass.utils as utils  # noqa: E402
from cutlass.cute.nvgpu import cpasync, tcgen05  # noqa: E402
from cutlass.utils.gemm.sm100 import (  # noqa: E402
    epilogue_smem_copy_and_partition,
    epilogue_tmem_copy_and_partition,
    transform_partitioned_tensor_layout,
)

from pipes import ArrivalUnit, Completion, PipelineSpec, Role  # noqa: E402
from pipes.cute import (  # noqa: E402
    NamedBarrierAllocator,
    RoleLayout,
    TmaStoreStaging,
    Warps,
    init_pipelines_arrive,
    storage_words,
)
from pipes.cute.sm100 import TmaUmmaPipeline, TmemAllocation, UmmaAccPipeline, UmmaCluster  # noqa: E402

EPI_WARPS = 4
MMA_WARP = 4
TMA_WARP = 5
BLOCK_THREADS = 32 * (EPI_WARPS + 2)
ACC_STAGES = 2
C_STAGES_MIN = 2
BARRIER_BYTES = 1024  # what the stage heuristic keeps aside for barriers and the TMEM address


@dataclass(frozen=True)
class GemmConfig:
    """Tile and cluster: ``mma_tiler_mn`` is the MMA tile (the pair's, with ``cta_group=2``)."""

    mma_tiler_mn: tuple[int, int] = (128, 128)
    cluster_mn: tuple[int, int] = (1, 1)
    cta_group: int = 1

    @property
    def cluster(self) -> UmmaCluster:
        return UmmaCluster(self.cluster_mn[0], self.cluster_mn[1], self.cta_group)


class BlackwellGemm:
    """The host side: layouts, TMA atoms, stage counts, the grid; ``__call__`` launches :meth:`kernel`."""

    def __init__(self, config: GemmConfig = GemmConfig()) -> None:
        self.config = config
        self.cluster = config.cluster
        self.cta_group = tcgen05.CtaGroup.TWO if config.cta_group == 2 else tcgen05.CtaGroup.ONE
        self.layout = RoleLayout(
            BLOCK_THREADS,
            {"epi": Warps(0, EPI_WARPS), "mma": Warps(MMA_WARP), "tma": Warps(TMA_WARP)},
            cluster_size=self.cluster.size,
        )

    # --- host-side setup ----------------------------------------------------------------------------
    def _setup(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor) -> None:
        self.a_dtype, self.b_dtype, self.c_dtype = a.element_type, b.element_type, c.element_type
        self.acc_dtype = cutlass.Float32
        self.c_layout = utils.LayoutEnum.from_tensor(c)
        a_major = utils.LayoutEnum.from_tensor(a).mma_major_mode()
        b_major = utils.LayoutEnum.from_tensor(b).mma_major_mode()
        self.tiled_mma = utils.sm100.make_trivial_tiled_mma(
            self.a_dtype, a_major, b_major, self.acc_dtype, self.cta_group, self.config.mma_tiler_mn
        )
        k_inst = cute.size(self.tiled_mma.shape_mnk, mode=[2])
        self.mma_tiler = (*self.config.mma_tiler_mn, k_inst * 4)
        pair = cute.size(self.tiled_mma.thr_id.shape)
        self.cta_tile = (self.mma_tiler[0] // pair, self.mma_tiler[1], self.mma_tiler[2])
        self.cluster_vmnk = cute.tiled_divide(
            cute.make_layout((*self.config.cluster_mn, 1)), (self.tiled_mma.thr_id.shape,)
        )
        self.epi_tile = utils.sm100.compute_epilogue_tile_shape(
            self.cta_tile, self.config.cta_group == 2, self.c_layout, self.c_dtype
        )
        self.ab_stages, self.c_stages = self._stages()
        self.a_smem = utils.sm100.make_smem_layout_a(self.tiled_mma, self.mma_tiler, self.a_dtype, self.ab_stages)
        self.b_smem = utils.sm100.make_smem_layout_b(self.tiled_mma, self.mma_tiler, self.b_dtype, self.ab_stages)
        self.c_smem = utils.sm100.make_smem_layout_epi(self.c_dtype, self.c_layout, self.epi_tile, self.c_stages)
        acc_shape = self.tiled_mma.partition_shape_C(self.mma_tiler[:2])
        acc_fake = self.tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES))
        self.tmem_columns = cutlass.memory.get_num_tmem_alloc_cols(acc_fake, arch="sm_100")

    def _stages(self) -> tuple[int, int]:
        """A/B stages fill shared memory after two C stages; C stages take what is left (the stock heuristic)."""
        one_a = utils.sm100.make_smem_layout_a(self.tiled_mma, self.mma_tiler, self.a_dtype, 1)
        one_b = utils.sm100.make_smem_layout_b(self.tiled_mma, self.mma_tiler, self.b_dtype, 1)
        ab_bytes = cute.size_in_bytes(self.a_dtype, one_a) + cute.size_in_bytes(self.b_dtype, one_b)
        one_c = utils.sm100.make_smem_layout_epi(self.c_dtype, self.c_layout, self.epi_tile, 1)
        c_bytes = cute.size_in_bytes(self.c_dtype, one_c)
        capacity = utils.get_smem_capacity_in_bytes("sm_100")
        ab_stages = (capacity - BARRIER_BYTES - C_STAGES_MIN * c_bytes) // ab_bytes
        c_stages = C_STAGES_MIN + (capacity - ab_stages * ab_bytes - BARRIER_BYTES - C_STAGES_MIN * c_bytes) // c_bytes
        return ab_stages, c_stages

    def pipelines(self, tx_bytes: int) -> tuple[TmaUmmaPipeline, UmmaAccPipeline, TmaStoreStaging, TmemAllocation]:
        """The kernel's synchronization objects (pure declarations; they emit no code)."""
        elected = ArrivalUnit.ELECTED_PER_WARP
        ab = TmaUmmaPipeline(
            PipelineSpec(
                "ab", self.ab_stages, Role("tma", elected), Role("mma", elected), Completion.TRANSACTION_BYTES, tx_bytes
            ),
            cluster=self.cluster,
            suspend_waits=True,
        )
        acc = UmmaAccPipeline(
            PipelineSpec("acc", ACC_STAGES, Role("mma", elected), Role("epi", elected, EPI_WARPS)),
            cluster=self.cluster,
            suspend_waits=True,
        )
        staging = TmaStoreStaging(self.c_stages, name="c_staging")
        tmem = TmemAllocation(self.tmem_columns, allocator="epi", users=("mma", "epi"), cluster=self.cluster)
        return ab, acc, staging, tmem

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, max_active_clusters: cutlass.Constexpr, stream):
        self._setup(a, b, c)
        pair = cute.size(self.tiled_mma.thr_id.shape)
        a_one = cute.slice_(self.a_smem, (None, None, None, 0))
        b_one = cute.slice_(self.b_smem, (None, None, None, 0))
        tma_a, gA = cute.nvgpu.make_tiled_tma_atom_A(
            utils.sm100.cluster_shape_to_tma_atom_A(self.config.cluster_mn, self.tiled_mma.thr_id),
            a,
            a_one,
            self.mma_tiler,
            self.tiled_mma,
            self.cluster_vmnk.shape,
        )
        tma_b, gB = cute.nvgpu.make_tiled_tma_atom_B(
            utils.sm100.cluster_shape_to_tma_atom_B(self.config.cluster_mn, self.tiled_mma.thr_id),
            b,
            b_one,
            self.mma_tiler,
            self.tiled_mma,
            self.cluster_vmnk.shape,
        )
        # The pair's A and B bytes land on the leader's full barrier.
        tx_bytes = (cute.size_in_bytes(self.a_dtype, a_one) + cute.size_in_bytes(self.b_dtype, b_one)) * pair
        tma_c, gC = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.select(self.c_smem, mode=[0, 1]), self.epi_tile
        )
        c_tile = cute.slice_(self.cta_tile, (None, None, 0))
        tiles_mnl = cute.zipped_divide(c, tiler=c_tile)[(0, (None, None, None))].shape
        sched_params = utils.PersistentTileSchedulerParams(tiles_mnl, (*self.config.cluster_mn, 1))
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, max_active_clusters)
        objects = self.pipelines(tx_bytes)
        operands = (tma_a, gA, tma_b, gB, tma_c, gC)
        layouts = (self.cluster_vmnk, self.a_smem, self.b_smem, self.c_smem, self.epi_tile)
        self.kernel(self.tiled_mma, *operands, *layouts, sched_params, objects).launch(
            grid=grid, block=[BLOCK_THREADS, 1, 1], cluster=(*self.config.cluster_mn, 1), stream=stream
        )

    # --- the kernel ---------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_c: cute.CopyAtom,
        mC: cute.Tensor,
        cluster_vmnk: cute.Layout,
        a_smem: cute.ComposedLayout,
        b_smem: cute.ComposedLayout,
        c_smem: cute.ComposedLayout,
        epi_tile: cute.Tile,
        sched_params: utils.PersistentTileSchedulerParams,
        objects: cutlass.Constexpr,
    ):
        ab, acc, staging, tmem_alloc = objects
        cluster, layout = self.cluster, self.layout
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)
        pair = cute.size(tiled_mma.thr_id.shape)
        bidx, _, _ = cute.arch.block_idx()
        mma_v = bidx % pair
        is_leader = cluster.is_leader()
        coord_vmnk = cluster_vmnk.get_flat_coord(cluster.rank())
        tidx, _, _ = cute.arch.thread_idx()

        words = storage_words(ab, acc)

        @cute.struct
        class Storage:
            pipes: cute.struct.MemRange[cutlass.Int64, words]
            tmem_dealloc: cutlass.Int64
            tmem_addr: cutlass.Int32

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(Storage)
        barriers = NamedBarrierAllocator(BLOCK_THREADS)
        epi_barrier = barriers.allocate("epilogue", 32 * EPI_WARPS)
        tmem = tmem_alloc.make(layout, barriers, storage.tmem_addr.ptr, storage.tmem_dealloc.ptr)
        pending = init_pipelines_arrive((ab, acc), storage.pipes.data_ptr(), layout=layout)

        sA = smem.allocate_tensor(self.a_dtype, a_smem.outer, byte_alignment=128, swizzle=a_smem.inner)
        sB = smem.allocate_tensor(self.b_dtype, b_smem.outer, byte_alignment=128, swizzle=b_smem.inner)
        a_mask = None
        b_mask = None
        if cutlass.const_expr(cluster.size > 1):
            a_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, coord_vmnk, mcast_mode=2)
            b_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, coord_vmnk, mcast_mode=1)

        gA_mkl = cute.local_tile(mA, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))
        gB_nkl = cute.local_tile(mB, cute.slice_(self.mma_tiler, (0, None, None)), (None, None, None))
        gC_mnl = cute.local_tile(mC, cute.slice_(self.mma_tiler, (None, None, 0)), (None, None, None))
        k_tiles = cute.size(gA_mkl, mode=[3])
        thr_mma = tiled_mma.get_slice(mma_v)
        tCgA = thr_mma.partition_A(gA_mkl)
        tCgB = thr_mma.partition_B(gB_nkl)
        tCgC = thr_mma.partition_C(gC_mnl)
        tAsA, tAgA = cpasync.tma_partition(
            tma_a,
            coord_vmnk[2],
            cute.make_layout(cute.slice_(cluster_vmnk, (0, 0, None, 0)).shape),
            cute.group_modes(sA, 0, 3),
            cute.group_modes(tCgA, 0, 3),
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            coord_vmnk[1],
            cute.make_layout(cute.slice_(cluster_vmnk, (0, None, 0, 0)).shape),
            cute.group_modes(sB, 0, 3),
            cute.group_modes(tCgB, 0, 3),
        )
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_shape = tiled_mma.partition_shape_C(self.mma_tiler[:2])
        tCtAcc_fake = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES))

        pending.wait()  # every CTA of the cluster has initialized its barriers

        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
        work = sched.initial_work_tile_info()

        if layout.is_role("tma"):
            loads = ab.producer()
            while work.is_valid_tile:
                tile = work.tile_idx
                mma_tile = (tile[0] // pair, tile[1], tile[2])
                tAgA_k = tAgA[(None, mma_tile[0], None, mma_tile[2])]
                tBgB_k = tBgB[(None, mma_tile[1], None, mma_tile[2])]
                first = loads.count
                peek = loads.try_acquire()
                for _ in cutlass.range(0, k_tiles, 1, unroll=1):
                    k = loads.count - first
                    slot = loads.acquire(peek)
                    bar = loads.barrier(slot)
                    cute.copy(tma_a, tAgA_k[(None, k)], tAsA[(None, slot)], tma_bar_ptr=bar, mcast_mask=a_mask)
                    cute.copy(tma_b, tBgB_k[(None, k)], tBsB[(None, slot)], tma_bar_ptr=bar, mcast_mask=b_mask)
                    peek = cutlass.Boolean(1)
                    if k + 1 < k_tiles:
                        peek = loads.try_acquire()
                    loads.commit()
                sched.advance_to_next_work()
                work = sched.get_current_work()
            loads.tail()

        if layout.is_role("mma"):
            tmem.wait_for_alloc()
            tCtAcc_base = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), tCtAcc_fake.layout)
            stages = ab.consumer()
            accs = acc.producer()
            while work.is_valid_tile:
                tCtAcc = tCtAcc_base[(None, None, None, accs.count % ACC_STAGES)]
                first = stages.count
                peek = cutlass.Boolean(1)
                if is_leader:
                    peek = stages.try_wait()
                    accs.acquire()
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                for _ in range(k_tiles):
                    if is_leader:
                        k = stages.count - first
                        slot = stages.wait(peek)
                        for kblock in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                            crd = (None, None, kblock, slot)
                            cute.gemm(tiled_mma, tCtAcc, tCrA[crd], tCrB[crd], tCtAcc)
                            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                        stages.release()  # tcgen05.commit: empty[slot] when these MMAs have read it
                        peek = cutlass.Boolean(1)
                        if k + 1 < k_tiles:
                            peek = stages.try_wait()
                if is_leader:
                    accs.commit()  # tcgen05.commit: full[stage] when the tile's MMAs are complete
                sched.advance_to_next_work()
                work = sched.get_current_work()
            if is_leader:
                accs.tail()

        sC = smem.allocate_tensor(self.c_dtype, c_smem.outer, byte_alignment=128, swizzle=c_smem.inner)

        if layout.is_role("epi"):
            tmem.allocate(tmem_alloc.columns)
            tmem.wait_for_alloc()
            tmem_ptr = tmem.retrieve_ptr(self.acc_dtype)
            tCtAcc_base = cute.make_tensor(tmem_ptr, tCtAcc_fake.layout)
            tCgC_t = transform_partitioned_tensor_layout(tCgC)
            tCtAcc_t = transform_partitioned_tensor_layout(tCtAcc_base)
            t2r, tTR_tAcc_base, tTR_rAcc = epilogue_tmem_copy_and_partition(
                self, tidx, tCtAcc_t, tCgC_t, epi_tile, cluster.pair
            )
            tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, self.c_dtype)
            r2s, tRS_rC, tRS_sC = epilogue_smem_copy_and_partition(self, t2r, tTR_rC, tidx, sC)
            bSG_sC, bSG_gC_all = cpasync.tma_partition(
                tma_c,
                0,
                cute.make_layout(1),
                cute.group_modes(sC, 0, 2),
                cute.group_modes(cute.flat_divide(tCgC_t, epi_tile), 0, 2),
            )
            accs = acc.consumer()
            out = staging.producer(sync=epi_barrier)
            while work.is_valid_tile:
                tile = work.tile_idx
                mma_tile = (tile[0] // pair, tile[1], tile[2])
                sched.advance_to_next_work()
                work = sched.get_current_work()
                bSG_gC = bSG_gC_all[(None, None, None, *mma_tile)]
                bSG_gC = cute.group_modes(bSG_gC, 1, cute.rank(bSG_gC))
                stage = accs.wait()
                tTR_tAcc = tTR_tAcc_base[(None, None, None, None, None, stage)]
                tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
                for sub in cutlass.range_constexpr(cute.size(tTR_tAcc.shape, mode=[3])):
                    cute.copy(t2r, tTR_tAcc[(None, None, None, sub)], tTR_rAcc)
                    tRS_rC.store(r2s.retile(tTR_rAcc).load().to(self.c_dtype))
                    slot = out.acquire()  # the store that used this buffer has read it
                    cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, slot)])
                    out.publish()  # fence.proxy.async.shared::cta + epilogue barrier
                    if warp_idx == 0:
                        cute.copy(tma_c, bSG_sC[(None, slot)], bSG_gC[(None, sub)])
                    out.commit()
                epi_barrier.sync()  # every epilogue warp is done with the stage's TMEM
                accs.release()
            out.tail()
            tmem.relinquish_alloc_permit()
            tmem.free(tmem_ptr)

    # Read by cutlass.utils.gemm.sm100's epilogue partition helpers.
    @property
    def use_2cta_instrs(self) -> bool:
        return self.config.cta_group == 2

    @property
    def cta_tile_shape_mnk(self) -> tuple[int, int, int]:
        return self.cta_tile


def compile_gemm(config: GemmConfig = GemmConfig(), mnkl: tuple[int, int, int, int] = (1024, 1024, 512, 1)) -> Any:
    """Compile for sm_100a with fake fp16 tensors (K-major A and B, N-major C); no GPU needed."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k, batch = mnkl
    a = make_fake_compact_tensor(cutlass.Float16, (m, k, batch), stride_order=(1, 0, 2), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float16, (n, k, batch), stride_order=(1, 0, 2), assumed_align=16)
    c = make_fake_compact_tensor(cutlass.Float16, (m, n, batch), stride_order=(1, 0, 2), assumed_align=16)
    gemm = BlackwellGemm(config)
    return cute.compile(gemm, a, b, c, 148, make_fake_stream(), options="--gpu-arch sm_100a --keep-ptx")
