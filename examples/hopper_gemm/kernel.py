"""The persistent warp-specialized Hopper GEMM kernel, synchronized only through pipes objects.

C = epilogue(A · Bᵀ): A (M, K) row-major; B (N, K) (``b_major="k"``) or (K, N) (``"n"``); C (M, N)
row-major; fp16/bf16 in, fp32 accumulation, fp16/bf16 out.

=====================  ========================================  =====================================
role (warps)           pipeline / barrier                        arrivals per use
=====================  ========================================  =====================================
``load`` (warp 0)      → ``mainloop`` TmaLoadPipeline,           full[s]: 1 ``arrive.expect_tx`` by
setmaxnreg 40          ``ab_stages`` slots of one A and one B    the load warp's elected lane + the
                       k-tile, multicast over the cluster        A/B bytes of every CTA's TMA
``mma`` (warps 4–11)   ← ``mainloop``: wait, wgmma, release      empty[s]: one elected lane per math
setmaxnreg 232         (readers ASYNC: wgmma reads smem          warp per peer CTA: cooperative 8 ×
                       through the async proxy, no fence)        peers, ping-pong 4 × peers
``mma`` epilogue       → ``staging`` TmaStoreStaging             none (bulk async-groups of the
                       (``epi_stages`` smem buffers)             storing warp); ``epilogue``
                       named barrier ``epilogue`` around         NamedBarrier: 256 (cooperative) or
                       each buffer                               128 (ping-pong) threads
``mma`` deferred       → ``staging``, one cursor per warp        none across warps: each warp syncs
epilogue               (``WarpSync``): the previous tile's held  its own lanes (``bar.warp.sync``), its
(cooperative,          outputs, each warp's 16-row pieces, under lane 0 TMA-stores the warp's piece and
``deferred_chunks``)   the next tile's first k-tiles             waits for its own bulk groups
``mma`` ping-pong      ``pingpong`` OrderedBarrier, 2 groups ×   4 per turn (one elected lane per
                       2 sections (MMA, epilogue)                warp of the group handing on)
``store`` (warp 4;     → ``tiles`` StoreNotifyPipeline           full[s]: 1 (elected lane of warp 4
only with ``comm``,    (``CommConfig.slots`` slots of (tm, tn)): after every lane's ``wait_group
cooperative)           acquire before a tile's first TMA         lag``); empty[s]: 1 (elected lane of
                       store, commit(tm, tn) after its last      the comm warp after its warp sync)
                       staging commit, tail() after the last
``comm`` (warp 1,      ← ``tiles``: wait, meta → (tm, tn), ship  (flags: pipes.cute.comm.ReadyFlags;
setmaxnreg 40)         the tile, publish its ready flag (or,     copy engine: one red.release.sys per
                       with the copy engine, count it into its   tile on its step's counter,
                       step), release; ends on end-of-stream     pipes.cute.comm.StepCounters)
``mma`` with           a split tile's unit with its last         ``flags[s]``: 1 ``atom.release.gpu``
``stream_k``           k-tiles → ``partials[s]`` in global       by thread 0 after the ``epilogue``
(cooperative)          memory → the unit with k-tile 0, which    NamedBarrier (256); the storing
                       adds it and stores the tile               unit: thread 0 ``ld.acquire.gpu``,
                       (hopper_gemm/stream_k.py)                 then the NamedBarrier; resets to 0
``mma`` with           each part of a tile (one per cluster)     ``flags[t]``: 1 ``atom.release.gpu``
``split_k``            posts its fp32 partial → ``partials[t]``, per part after the NamedBarrier, then
(cooperative)          waits for all, adds the others' values    1 relaxed "seen" per part ≠ 0; every
                       of its 1/s of the subtiles, stores them   part polls with ``ld.acquire.gpu``;
                       (hopper_gemm/split_k.py)                  part 0 resets at 2s − 1
=====================  ========================================  =====================================

The load warp walks (tile, k) as one stream; the math warpgroups walk tiles, then k. They share only
the ``mainloop`` pipeline and :class:`~hopper_gemm.schedule.TileOrder`, so they agree on the order
without talking. Cooperative: both warpgroups compute the same tile (64 or 128 rows each), then both
run its epilogue; the next tile's loads are already in flight. With ``deferred_chunks`` they only
convert the accumulators into registers they hold and start the next tile; each warp stores its share
of the held tile under that tile's first k-tiles (``deferred_store.py``). Ping-pong: warpgroup g computes the
CTA's tiles g, g+2, ...; it skips the other's k-tiles in the mainloop ring (``Consumer.skip``), and the
ordered barrier alternates the two warpgroups at the tensor cores and at the epilogue, so one
warpgroup's epilogue runs under the other's MMAs. Peers (multicast) release every CTA of the
cluster that wrote into their slot; the pipes object derives who from the cluster shape.

``stream_k`` (:class:`~hopper_gemm.schedule.StreamKSplit`, or :class:`~hopper_gemm.schedule.AlignedSplit`
with ``stream_k_aligned``): after the whole waves, the load warp and the math warpgroups walk the same
units of this cluster's share of k-tiles (its lead, or its follow parts); a tile split between two
clusters is summed through a global workspace, the only synchronization here outside pipes objects
(global flags between clusters; modelled in ``hopper_gemm.stream_k_protocol``).

``split_k`` (:class:`~hopper_gemm.schedule.SplitK`): no whole tiles; the load warp and the math warpgroups
walk this cluster's one part of one tile, summed with the other parts in parallel
(``hopper_gemm.split_k_protocol`` models it).

``comm`` (any ``pipes.cute.comm.CommHook``: the library's ``TileShipper``, or ``tile_comm.CommRole`` of
examples/epilogue_comm.py; ``hopper_gemm.comm_hook`` says which configurations can host one): the
storing warp's ``commit`` closes one more bulk group after the staging ring's per-subtile groups and
waits ``cp.async.bulk.wait_group lag`` (no ``.read``). Every tile contributes at least one group, so
the ``lag`` newest groups belong to the ``lag`` newest tiles at most: every tile ``lag`` commits old is
complete in global memory when its notify arrives (``lag = 0``: the tile itself). The staging ring's
``.read`` waits count the same groups and stay correct (an empty group completes at once). Without
``comm`` (None) none of this code is emitted: the kernel is the GEMM alone.

``pdl`` (programmatic dependent launch): after the barrier init every thread executes
``griddepcontrol.wait`` (the previous grid has completed and its memory is visible) before any global
access, then ``griddepcontrol.launch_dependents``; the launch allows programmatic stream serialization.

Reading this file: :func:`~hopper_gemm.roles.declare` (``roles.py``) builds the pipes objects above from
a configuration; :class:`GemmKernel` holds the host side (``__call__`` / ``stream_k`` / ``traced`` →
``launch``: TMA atoms, shared-memory struct, grid) and the device side (``kernel``: barrier init and
role dispatch; ``math``: the math warpgroups' tile loop). The load warp is in ``load_warp.py``, the
k-loop in ``mainloop.py``, the store path in ``epilogue_store.py`` (deferred: ``deferred_store.py``),
stream-K's units and their fix-up in ``stream_k.py``, the tile order in ``schedule.py``.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.tensor_utils import LayoutEnum

from pipes.cute import (
    NamedBarrierAllocator,
    OrderedBarrier,
    TraceEvent,
    TraceLayout,
    Tracer,
    WarpSync,
    init_pipelines,
    storage_words,
)
from pipes.cute.comm import CommHook
from pipes.tile_order import TileOrder

from .comm_hook import adds_partials, check_comm
from .config import GemmConfig, Problem, Schedule
from .deferred_store import WARP_ROWS, DeferredStore, flush, hold
from .epilogue import EpilogueArgs, apply_terms, load_operands, terms_for
from .epilogue_store import EpilogueStage, offset_coords, store_tile
from .kernel_parts import Copies, Shared, SmemLayouts, SplitContext, TileGrid
from .load_warp import load, load_atom
from .mainloop import mainloop
from .roles import BLOCK_THREADS, LOAD_REGISTERS, MATH_FIRST_WARP, MMA_REGISTERS, declare
from .schedule import SplitK, stream_k_split
from .split_k import split_k_unit
from .stream_k import split_phase

_DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}


class GemmKernel:
    """One compiled configuration. ``__call__`` is the ``@cute.jit`` host function to compile."""

    def __init__(
        self, config: GemmConfig, problem: Problem, trace: TraceLayout | None = None, comm: CommHook | None = None
    ) -> None:
        self.config = config
        self.trace = trace
        self.problem = problem
        self.comm = comm  # comm hook (pipes.cute.comm.CommHook), or None
        if comm is not None:
            if not isinstance(comm, CommHook):
                raise TypeError(f"comm must be a pipes.cute.comm.CommHook, got {type(comm).__name__}")
            check_comm(config)
        # (producer warpgroup, math warpgroups) setmaxnreg: a comm role may ask for more in the producer
        # warpgroup; 128 × producer + 256 × math must stay within the SM's 64K registers.
        self.registers = (comm.registers if comm is not None else None) or (LOAD_REGISTERS, MMA_REGISTERS)
        self.decl = declare(config, problem, comm=comm)
        self.ab_stages, self.epi_stages = config.stages(problem)
        self.terms = terms_for(problem)
        self.order = TileOrder(config.cluster_m, config.cluster_n, config.raster, config.group)
        self.ab_dtype = _DTYPES[problem.dtype]
        self.out_dtype = _DTYPES[problem.out_dtype]
        self.tile_mnk = (config.tile_m, config.tile_n, config.tile_k)
        self.a_layout = LayoutEnum.ROW_MAJOR  # A (M, K): K contiguous
        self.b_layout = LayoutEnum.ROW_MAJOR if problem.b_major == "k" else LayoutEnum.COL_MAJOR
        self.c_layout = LayoutEnum.ROW_MAJOR

    # --- host side ---------------------------------------------------------------------------------
    @cute.jit
    def __call__(
        self,
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        clusters: Int32,
        stream: Any,
        comm_args: Any = None,
    ) -> None:
        """``a`` (M, K), ``b`` (N, K) with K or N contiguous, ``c`` (M, N); ``bias`` (N,) (ignored unless the
        problem has a bias); ``clusters``: how many clusters to launch (the persistent grid);
        ``comm_args``: the comm role's run-time arguments (``tile_comm.args``; with ``comm`` only)."""
        self.launch(a, b, c, bias, alpha, clusters, bias, stream, comm_args)

    @cute.jit
    def with_workspace(
        self,
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        clusters: Int32,
        flags: cute.Pointer,
        partials: cute.Pointer,
        stream: Any,
    ) -> None:
        """As ``__call__`` for a ``stream_k`` or ``split_k`` configuration: ``flags`` (Int32) and ``partials``
        (Float32) are its workspace (:func:`hopper_gemm.launch.stream_k_workspace`; flags zero before the
        first launch)."""
        self.launch(a, b, c, bias, alpha, clusters, bias, stream, (flags, partials))

    @cute.jit
    def traced(
        self,
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        clusters: Int32,
        trace_buf: cute.Tensor,
        stream: Any,
        comm_args: Any = None,
    ) -> None:
        """As ``__call__``, recording pipeline events into ``trace_buf`` (``GemmKernel(trace=TraceLayout)``)."""
        self.launch(a, b, c, bias, alpha, clusters, trace_buf, stream, comm_args)

    @cute.jit
    def launch(
        self,
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        clusters: Int32,
        trace_buf: cute.Tensor,
        stream: Any,
        comm_args: Any = None,
    ) -> None:
        cfg = self.config
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype,
            self.ab_dtype,
            self.a_layout.sm90_mma_major_mode(),
            self.b_layout.sm90_mma_major_mode(),
            Float32,
            (cfg.warpgroups_per_tile, 1, 1),
            tiler_mn=(64, cfg.tile_n),
        )
        a_smem = sm90_utils.make_smem_layout_a(self.a_layout, self.tile_mnk, self.ab_dtype, self.ab_stages)
        b_smem = sm90_utils.make_smem_layout_b(self.b_layout, self.tile_mnk, self.ab_dtype, self.ab_stages)
        epi_smem = sm90_utils.make_smem_layout_epi(self.out_dtype, self.c_layout, cfg.epi_tile, self.epi_stages)
        stored_smem, stored_box = epi_smem, cfg.epi_tile
        if cutlass.const_expr(cfg.deferred_chunks > 0):
            # Each math warp stores its own 16 rows of a staging buffer: the same memory as (16, epi_n) pieces.
            stored_box = (WARP_ROWS, cfg.epi_n)
            pieces = self.epi_stages * cfg.epi_tile[0] // WARP_ROWS
            stored_smem = sm90_utils.make_smem_layout_epi(self.out_dtype, self.c_layout, stored_box, pieces)
        atom_a, tma_a = load_atom(a, a_smem, (cfg.tile_m, cfg.tile_k), cfg.cluster_n)
        atom_b, tma_b = load_atom(b, b_smem, (cfg.tile_n, cfg.tile_k), cfg.cluster_m)
        atom_c, tma_c = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(stored_smem, (None, None, 0)), stored_box
        )
        # With the staging in the ring, ``sc`` is a placeholder: the buffers alias the A ring (kernel()).
        staging_elements = 1 if cfg.staging_in_ring else cute.cosize(epi_smem)
        words = storage_words(*self.decl.pipelines)
        order_words = self.decl.order.barriers if self.decl.order is not None else 1

        @cute.struct
        class Storage:
            pipes: cute.struct.MemRange[Int64, words]
            order: cute.struct.MemRange[Int64, order_words]
            sa: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(a_smem)], 1024]
            sb: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(b_smem)], 1024]
            sc: cute.struct.Align[cute.struct.MemRange[self.out_dtype, staging_elements], 1024]

        self.storage_type = Storage
        copies = Copies(tiled_mma, atom_a, tma_a, atom_b, tma_b, atom_c, tma_c)
        args = (copies, SmemLayouts(a_smem, b_smem, epi_smem, stored_smem), c, bias, alpha, trace_buf)
        if cutlass.const_expr(self.comm is not None or cfg.partial_sums):
            args = (*args, comm_args)  # the comm role's arguments, or the stream-K / split-K workspace
        self.kernel(*args).launch(
            grid=(cfg.cluster_m, cfg.cluster_n, clusters),
            block=(BLOCK_THREADS, 1, 1),
            cluster=(cfg.cluster_m, cfg.cluster_n, 1),
            stream=stream,
            use_pdl=cfg.pdl,
        )

    # --- device side -------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        copies: Copies,
        layouts: SmemLayouts,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        trace_buf: cute.Tensor,
        extra: Any = None,
    ) -> None:
        """``extra``: the comm role's arguments (with ``comm``) or stream-K's (flags, partials) workspace."""
        cfg = self.config
        comm_args = extra if cutlass.const_expr(self.comm is not None) else None
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(copies.atom_a)
            cpasync.prefetch_descriptor(copies.atom_b)
            cpasync.prefetch_descriptor(copies.atom_c)

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.storage_type)
        decl = self.decl
        tracer = None
        if cutlass.const_expr(self.trace is not None):
            tracer = Tracer.create(self.trace, trace_buf, smem.allocate_array(Int32, self.trace.warps))
            decl = declare(cfg, self.problem, tracer, self.comm)
        if cutlass.const_expr(decl.order is not None):
            OrderedBarrier.init_barriers(decl.order, storage.order.data_ptr())
        # One cluster barrier after every init: remote releases need initialized peers.
        init_pipelines(decl.pipelines, storage.pipes.data_ptr(), layout=decl.layout)
        if cutlass.const_expr(cfg.pdl):
            # Nothing above touched global memory: the previous grid's outputs (our A, B, bias) and its
            # reads of what we overwrite (C) are complete past this point. The next grid may launch now:
            # this CTA holds 384 × 168 of the SM's 65,536 registers, so at most a tiny CTA of it fits
            # beside this one, and that waits in its own griddepcontrol.wait.
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        named = NamedBarrierAllocator(block_threads=BLOCK_THREADS)
        epilogue_barrier = named.allocate("epilogue", threads=128 * cfg.warpgroups_per_tile)

        staging_base = storage.sc.data_ptr()
        if cutlass.const_expr(cfg.staging_in_ring):
            # Every CTA owns at most one tile (launch.clusters_to_launch checks): its last load has landed
            # and its last wgmma has read the ring before the epilogue's first write, and no load follows.
            staging_base = cute.recast_ptr(storage.sa.data_ptr(), dtype=self.out_dtype)
        shared = Shared(
            storage.sa.get_tensor(layouts.a.outer, swizzle=layouts.a.inner),
            storage.sb.get_tensor(layouts.b.outer, swizzle=layouts.b.inner),
            _swizzled(staging_base, layouts.epi),
            storage.order.data_ptr(),
            epilogue_barrier,
            _swizzled(staging_base, layouts.stored),
        )

        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cta_m = rank % cfg.cluster_m
        cta_n = rank // cfg.cluster_m
        _, _, cluster_id = cute.arch.block_idx()
        _, _, clusters = cute.arch.grid_dim()
        tiles_m = (c.shape[0] + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (c.shape[1] + cfg.tile_n - 1) // cfg.tile_n
        clusters_m, clusters_n = self.order.cluster_grid(tiles_m, tiles_n)
        cluster_tiles = clusters_m * clusters_n
        k_tiles = (copies.tma_a.shape[1] + cfg.tile_k - 1) // cfg.tile_k
        split = None
        if cutlass.const_expr(cfg.stream_k):
            split = stream_k_split(cfg, cluster_tiles, clusters, k_tiles)
        first_split = None
        if cutlass.const_expr(cfg.split_k > 1):
            first_split = SplitK.first_split(cluster_tiles, clusters)
        grid = TileGrid(
            clusters_m, clusters_n, cta_m, cta_n, cluster_id, clusters, cluster_tiles, k_tiles, split, first_split
        )

        if warp < MATH_FIRST_WARP:
            cute.arch.setmaxregister_decrease(self.registers[0])
            if decl.layout.is_role("load"):
                load(self, decl, copies, shared, grid)
            # comm hook: the communication warp (a trace-time test, then the run-time role test)
            if cutlass.const_expr(self.comm is not None):  # noqa: SIM102
                if decl.layout.is_role("comm"):
                    self.comm.run(decl.notify, c, comm_args)
        else:
            cute.arch.setmaxregister_increase(self.registers[1])
            math_wg = warp // 4 - 1
            epilogue_args = EpilogueArgs(alpha, bias, c.shape[1])
            stream_k_args = extra if cutlass.const_expr(cfg.partial_sums) else None
            self.math(decl, tracer, copies, shared, grid, epilogue_args, math_wg, comm_args, stream_k_args)

    @cute.jit
    def math(
        self,
        decl: cutlass.Constexpr,
        tracer: cutlass.Constexpr,
        copies: Copies,
        shared: Shared,
        grid: Any,
        args: EpilogueArgs,
        math_wg: Int32,
        comm_args: Any = None,
        stream_k_args: Any = None,
    ) -> None:
        """A math warpgroup: the k-loop of wgmmas per tile, then the epilogue through the staging ring."""
        cfg = self.config
        tiled_mma, sa, sb, n = copies.tiled_mma, shared.a, shared.b, args.n
        pingpong = cutlass.const_expr(cfg.schedule is Schedule.PINGPONG)
        tidx, _, _ = cute.arch.thread_idx()
        math_tidx = tidx - MATH_FIRST_WARP * 32
        if cutlass.const_expr(pingpong):
            # Each warpgroup is a whole tiled MMA of its own: thread index within the warpgroup.
            math_tidx = math_tidx % 128
        thr_mma = tiled_mma.get_slice(math_tidx)
        a_frag = tiled_mma.make_fragment_A(thr_mma.partition_A(sa))
        b_frag = tiled_mma.make_fragment_B(thr_mma.partition_B(sb))
        tile_shape = (cfg.tile_m, cfg.tile_n)
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C(tile_shape), Float32)
        coords = thr_mma.partition_C(cute.make_identity_tensor(tile_shape))

        epi = EpilogueStage(self, tiled_mma, copies.atom_c, copies.tma_c, shared.c, math_tidx)
        deferred = None
        held_tm, held_tn = Int32(0), Int32(0)
        if cutlass.const_expr(cfg.deferred_chunks > 0):
            # Every math warp stores its own rows through its own staging cursor: it syncs with itself only.
            staging = decl.staging.producer(sync=WarpSync())
            deferred = DeferredStore(self, epi, acc.shape, shared.c_stored, math_tidx // 32)
            held_tm, held_tn = deferred.nowhere()
        else:
            staging = decl.staging.producer(sync=shared.epilogue_barrier)
        consumer = decl.mainloop.consumer()
        first = grid.cluster_id
        step = grid.clusters
        order = None
        if cutlass.const_expr(pingpong):
            order = OrderedBarrier.at_start(decl.order, shared.order, math_wg, tracer=tracer, trace_id=2)
            first = grid.cluster_id + math_wg * grid.clusters
            step = 2 * grid.clusters
            consumer.skip(math_wg * grid.k_tiles)
        comm = self.comm
        notify = decl.notify.producer() if cutlass.const_expr(comm is not None) else None
        for linear in cutlass.range(first, grid.whole_tiles(cfg), step, unroll=1):
            tm, tn = self.order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
            if cutlass.const_expr(pingpong):
                order.wait()
            # Handles passed to a function come back: a dynamic loop carries only what it sees assigned.
            held = None if deferred is None else (deferred, held_tm, held_tn)
            consumer, staging = mainloop(tiled_mma, acc, a_frag, b_frag, consumer, grid.k_tiles, staging, held)
            if cutlass.const_expr(pingpong):
                order.arrive()
            origin = offset_coords(coords, tm * cfg.tile_m, tn * cfg.tile_n)
            # The terms' memory operands load while the last k-tile's wgmmas still run.
            loaded = load_operands(self.terms, acc, origin, args)
            warpgroup.wait_group(0)
            consumer.release()
            if cutlass.const_expr(pingpong):
                consumer.skip(grid.k_tiles)
                order.wait()
            _trace(tracer, TraceEvent.WAIT)
            if cutlass.const_expr(len(self.terms) > 0):
                apply_terms(self.terms, acc, origin, args, loaded)
            if cutlass.const_expr(adds_partials(comm)):  # comm hook: the owner's reduction
                comm.add_received(acc, thr_mma, comm_args, tm, tn, (grid.clusters_m, grid.clusters_n), n, tile_shape)
            if cutlass.const_expr(comm is not None):  # comm hook: a notify slot before the first TMA store
                notify = comm.begin_tile(notify, epi.is_storer, comm_args, tm, tn, n)
            if cutlass.const_expr(deferred is not None):
                hold(deferred, acc)  # stored under the next tile's first k-tiles
                held_tm, held_tn = tm, tn
            else:
                staging = store_tile(epi, acc, staging, tm, tn)
            if cutlass.const_expr(comm is not None):  # comm hook: commit (tm, tn) after the last staging commit
                notify = comm.end_tile(notify, epi.is_storer, comm_args, tm, tn, n)
            _trace(tracer, TraceEvent.RELEASE)
            if cutlass.const_expr(pingpong):
                # The other warpgroup reuses the staging buffers next: no store may still read them.
                staging.tail()
                order.arrive()
        split = SplitContext(copies, grid, args, (acc, a_frag, b_frag, coords, math_tidx), shared, stream_k_args)
        if cutlass.const_expr(cfg.stream_k):  # the split phase (cooperative only); it stores the held tile
            staging = split_phase(self, (epi, deferred), split, (consumer, staging), (held_tm, held_tn))
        elif cutlass.const_expr(cfg.split_k > 1):  # this cluster's part of its tile, summed with the others
            consumer, staging = split_k_unit(self, epi, split, (consumer, staging))
        elif cutlass.const_expr(deferred is not None):
            staging = flush(deferred, staging, held_tm, held_tn)
        if cutlass.const_expr(comm is not None):  # comm hook: end-of-stream once every store is complete
            comm.finish(notify, epi.is_storer)
        if cutlass.const_expr(not pingpong):
            staging.tail()


def _trace(tracer: Any, event: TraceEvent) -> None:
    """The epilogue's span in a traced build (trace id 3); nothing otherwise."""
    if tracer is not None:
        tracer.record(int(event), 3, 0)


def _swizzled(base: cute.Pointer, layout: cute.ComposedLayout) -> cute.Tensor:
    """The shared-memory tensor of a swizzled layout at ``base``."""
    return cute.make_tensor(cute.recast_ptr(base, layout.inner), layout.outer)
