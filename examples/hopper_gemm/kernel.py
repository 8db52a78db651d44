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
``mma`` ping-pong      ``pingpong`` OrderedBarrier, 2 groups ×   4 per turn (one elected lane per
                       2 sections (MMA, epilogue)                warp of the group handing on)
``store`` (warp 4;     → ``tiles`` StoreNotifyPipeline           full[s]: 1 (elected lane of warp 4
only with ``comm``,    (``CommConfig.slots`` slots of (tm, tn)): after every lane's ``wait_group
cooperative)           acquire before a tile's first TMA         lag``); empty[s]: 1 (elected lane of
                       store, commit(tm, tn) after its last      the comm warp after its warp sync)
                       staging commit, tail() after the last
``load`` with          before a tile row's first TMA load: wait  per chunk: every lane ``ld.acquire.sys``
``gate`` (all-gather)  for each chunk of A's rows another GPU    until the flag holds this launch's
                       pushes (``pipes.cute.comm.ChunkGate``)    value (with ``push``: has reached its
                                                                 epoch), then ``fence.proxy.async.global``
``push`` (warps 1 to   every peer's credit (``Credits``, .sys),  per chunk: every lane
``push.warps``)        then its share of this rank's chunks      ``fence.acq_rel.sys``, warp sync, lane 0
                       (``ChunkSender``), a flag per chunk       ``st.release.sys`` of the epoch
``comm`` (warp 1,      ← ``tiles``: wait, meta → (tm, tn), ship  (flags: pipes.cute.comm.ReadyFlags;
setmaxnreg 40)         the tile, publish its ready flag (or,     copy engine: one red.release.sys per
                       with the copy engine, count it into its   tile on its step's counter,
                       step), release; ends on end-of-stream     pipes.cute.comm.StepCounters)
=====================  ========================================  =====================================

The load warp walks (tile, k) as one stream, the math warpgroups tiles, then k: sharing only the
``mainloop`` pipeline and the :class:`~pipes.tile_order.TileOrder`, they agree without talking. Cooperative:
both warpgroups compute one tile (64 or 128 rows each; with ``wg_split="n"`` every row and half the
columns each, a buffer each per staging acquire), then run its epilogue while the next tile's loads
are in flight. Ping-pong: warpgroup g computes the CTA's tiles (64, 128 or 192 rows) g, g+2, ...
(skipping the other's k-tiles in the ring, ``Consumer.skip``); the ordered barrier alternates the two at
the tensor cores and at the epilogue, so one warpgroup's epilogue runs under the other's MMAs. With
multicast, a consumer releases every CTA of the cluster that wrote into its slot (the pipes object derives
which from the cluster shape).

Extension points, each emitting no code when off (docs/gemm.md): ``modes`` (:class:`KernelModes`,
``contrib/gemm_modes``), ``gate`` (a ``GateSpec``: A's rows arriving from other GPUs) with ``push`` (a
``ChunkPushWarp``: this rank's rows sent by warps 1–3), ``comm`` (a ``CommHook`` consuming stored
tiles) and ``pdl``. :func:`~hopper_gemm.roles.declare` builds the pipes objects above; ``launch`` is
the host side, ``kernel`` the barrier init and role dispatch, ``math`` the math warpgroups' tile loop.
"""

from __future__ import annotations

from typing import Any, Protocol

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
    init_pipelines,
    storage_words,
)
from pipes.cute.comm import ChunkPushWarp, CommHook, GateSpec
from pipes.tile_order import TileOrder

from .comm_hook import adds_partials, check_comm, check_gate
from .config import (
    GemmConfig,
    Problem,
    Schedule,
    check_a_rows_rotated,
    check_c_major,
    check_subtiles,
    check_terms_before_partials,
    check_wg_split,
)
from .epilogue import EpilogueArgs, apply_terms, load_operands, terms_for
from .epilogue_store import EpilogueStage, staging_layout, store_halves, store_tile, tile_origin
from .kernel_parts import Copies, MathRegisters, Shared, SmemLayouts, TileGrid, rows_first
from .load_warp import load, load_atom
from .mainloop import mainloop
from .roles import BLOCK_THREADS, LOAD_REGISTERS, MATH_FIRST_WARP, MMA_REGISTERS, PUSH_FIRST_WARP, declare

_DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}


class KernelModes(Protocol):
    """Where performance modes plug in (``gemm_modes.hooks.ModeHooks``; docs/gemm.md tabulates the hooks)."""

    own_staging: bool
    partial_sums: bool
    takes_math_role: bool
    split_k_alone: bool

    def describe(self) -> str: ...
    def stored_box(self, config: GemmConfig) -> tuple[int, int]: ...
    def plan(self, kernel: Any, cluster_tiles: Any, clusters: Any, k_tiles: Any) -> tuple[Any, Any]: ...
    def load_rest(self, kernel: Any, producer: Any, sources: Any, grid: TileGrid) -> Any: ...
    def math(self, kernel: Any, decl: Any, context: Any, math_wg: Any) -> None: ...


class GemmKernel:
    """One compiled configuration. ``__call__`` is the ``@cute.jit`` host function to compile (``launch`` for
    a traced build)."""

    def __init__(
        self,
        config: GemmConfig,
        problem: Problem,
        trace: TraceLayout | None = None,
        comm: CommHook | None = None,
        modes: KernelModes | None = None,
        gate: GateSpec | None = None,
        push: ChunkPushWarp | None = None,
    ) -> None:
        if not isinstance(config, GemmConfig):
            raise TypeError(
                f"GemmKernel takes a hopper_gemm.config.GemmConfig, got {type(config).__name__} (a "
                "gemm_modes.TunedConfig t runs as GemmKernel(t.config, problem, modes=gemm_modes.launch.hooks_for(t)))"
            )
        self.config = config
        self.trace = trace
        self.problem = problem
        self.comm = comm
        self.modes = modes
        self.gate = gate
        self.push = push
        check_gate(config, gate, push, comm, modes)
        check_wg_split(config, problem, comm, modes)
        check_c_major(problem, comm, modes, gate)
        check_subtiles(config, problem)
        check_a_rows_rotated(config, problem, modes, gate)
        check_terms_before_partials(problem, adds_partials(comm))
        if comm is not None:
            if not isinstance(comm, CommHook):
                raise TypeError(f"comm must be a pipes.cute.comm.CommHook, got {type(comm).__name__}")
            check_comm(config, modes)
        # (producer warpgroup, math warpgroups) setmaxnreg: a comm role may ask for more in the producer
        # warpgroup; 128 × producer + 256 × math must stay within the SM's 64K registers.
        self.registers = (comm.registers if comm is not None else None) or (LOAD_REGISTERS, MMA_REGISTERS)
        self.push_warps = push.warps if push is not None else 0
        self.own_staging = modes is None or modes.own_staging
        self.decl = declare(config, problem, comm=comm, push=self.push_warps, own_staging=self.own_staging)
        self.ab_stages, self.epi_stages = self.decl.mainloop.stages, self.decl.staging.stages
        self.terms = terms_for(problem)
        self.order = TileOrder(config.cluster_m, config.cluster_n, config.raster, config.group)
        self.ab_dtype = _DTYPES[problem.dtype]
        self.out_dtype = _DTYPES[problem.out_dtype]
        self.tile_mnk = (config.tile_m, config.tile_n, config.tile_k)
        self.a_layout = LayoutEnum.ROW_MAJOR  # A (M, K): K contiguous
        self.b_layout = LayoutEnum.ROW_MAJOR if problem.b_major == "k" else LayoutEnum.COL_MAJOR
        self.c_layout = LayoutEnum.ROW_MAJOR if problem.c_major == "n" else LayoutEnum.COL_MAJOR
        # What the kernel takes after its trace buffer: the comm role's or the gate's arguments, or a mode's workspace.
        self.takes_extra = comm is not None or gate is not None or (modes is not None and modes.partial_sums)

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
        ``comm_args``: the comm role's run-time arguments (``tile_comm.args``; with ``comm`` only), or the
        gate's ``pipes.cute.comm.GateArgs`` (with ``gate``)."""
        self.launch(a, b, c, bias, alpha, clusters, bias, stream, comm_args)

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
        extra: Any = None,
    ) -> None:
        """As ``__call__``, recording pipeline events into ``trace_buf`` with ``GemmKernel(trace=TraceLayout)``
        (compile ``launch`` itself for a traced build; ``__call__`` passes ``bias``, never read)."""
        cfg = self.config
        majors = (self.a_layout.sm90_mma_major_mode(), self.b_layout.sm90_mma_major_mode())
        # wg_split "n": each warpgroup is a tiled MMA of its own over every row and its half of the columns.
        warpgroups = cfg.warpgroups_per_tile if cfg.wg_split == "m" else 1
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, *majors, Float32, (warpgroups, 1, 1), tiler_mn=(64, cfg.mma_tile[1])
        )
        a_smem = sm90_utils.make_smem_layout_a(self.a_layout, self.tile_mnk, self.ab_dtype, self.ab_stages)
        b_smem = sm90_utils.make_smem_layout_b(self.b_layout, self.tile_mnk, self.ab_dtype, self.ab_stages)
        epi_smem = staging_layout(self.out_dtype, self.c_layout, cfg.epi_tile, self.epi_stages)
        # The TMA store's box: a staged subtile, or a mode's smaller piece of one (the same memory, row for row).
        stored_box = cfg.epi_tile if self.modes is None else self.modes.stored_box(cfg)
        pieces = self.epi_stages * cfg.epi_tile[0] // stored_box[0]
        stored_smem = staging_layout(self.out_dtype, self.c_layout, stored_box, pieces)
        atom_a, tma_a = load_atom(a, a_smem, (cfg.tile_m, cfg.tile_k), cfg.cluster_n)
        atom_b, tma_b = load_atom(b, b_smem, (cfg.tile_n, cfg.tile_k), cfg.cluster_m)
        atom_c, tma_c = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(stored_smem, (None, None, 0)), stored_box
        )
        # Staging that borrows the A ring (a mode) leaves ``sc`` a placeholder: kernel() points into the ring.
        staging_elements = cute.cosize(epi_smem) if self.own_staging else 1
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
        if cutlass.const_expr(self.takes_extra):
            args = (*args, extra)
        grid, cluster = (cfg.cluster_m, cfg.cluster_n, clusters), (cfg.cluster_m, cfg.cluster_n, 1)
        self.kernel(*args).launch(
            grid=grid, block=(BLOCK_THREADS, 1, 1), cluster=cluster, stream=stream, use_pdl=cfg.pdl, min_blocks_per_mp=1
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
        """``extra``: the comm role's arguments (with ``comm``), the gate's ``GateArgs`` (with ``gate``) or a
        mode's (flags, partials) workspace."""
        cfg = self.config
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
            decl = declare(cfg, self.problem, tracer, self.comm, self.push_warps, self.own_staging)
        if cutlass.const_expr(decl.order is not None):
            OrderedBarrier.init_barriers(decl.order, storage.order.data_ptr())
        # One cluster barrier after every init: remote releases need initialized peers.
        init_pipelines(decl.pipelines, storage.pipes.data_ptr(), layout=decl.layout)
        if cutlass.const_expr(cfg.pdl):
            # Nothing above touched global memory; past the wait the previous grid's writes (A, B, bias) and
            # reads (C) are complete. The next grid may launch now: at most a tiny CTA of it fits beside this
            # one (384 × 168 of the SM's 65,536 registers), and that waits in its own griddepcontrol.wait.
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        named = NamedBarrierAllocator(block_threads=BLOCK_THREADS)
        epilogue_barrier = named.allocate("epilogue", threads=128 * cfg.warpgroups_per_tile)

        staging_base = storage.sc.data_ptr()
        if cutlass.const_expr(not self.own_staging):
            # The mode guarantees every CTA owns at most one tile: its last load has landed and its last
            # wgmma has read the ring before the epilogue's first write, and no load follows.
            staging_base = cute.recast_ptr(storage.sa.data_ptr(), dtype=self.out_dtype)
        shared = Shared(
            storage.sa.get_tensor(layouts.a.outer, swizzle=layouts.a.inner),
            storage.sb.get_tensor(layouts.b.outer, swizzle=layouts.b.inner),
            _swizzled(staging_base, layouts.epi),
            storage.order.data_ptr(),
            epilogue_barrier,
            _swizzled(staging_base, layouts.stored),
        )
        grid = self.tile_grid(c, copies)

        if warp < MATH_FIRST_WARP:
            cute.arch.setmaxregister_decrease(self.registers[0])
            if decl.layout.is_role("load"):
                load(self, decl, copies, shared, grid, extra)
            # comm hook: the communication warp (a trace-time test, then the run-time role test)
            if cutlass.const_expr(self.comm is not None):  # noqa: SIM102
                if decl.layout.is_role("comm"):
                    self.comm.run(decl.notify, c, extra)
            if cutlass.const_expr(self.push is not None):  # noqa: SIM102
                if decl.layout.is_role("push"):  # the all-gather's SM pushes (extra: PushingGateArgs)
                    self.push.run(extra, warp - PUSH_FIRST_WARP)
        else:
            cute.arch.setmaxregister_increase(self.registers[1])
            math_wg = warp // 4 - 1
            epilogue_args = EpilogueArgs(alpha, bias, c.shape[1])
            context = (copies, shared, grid, epilogue_args, tracer, extra)
            if cutlass.const_expr(self.modes is not None and self.modes.takes_math_role):
                self.modes.math(self, decl, context, math_wg)
            else:
                self.math(decl, context, math_wg)

    @cute.jit
    def tile_grid(self, c: cute.Tensor, copies: Copies) -> TileGrid:
        """Where this CTA stands in the persistent walk (a mode's plan of the work after the whole tiles)."""
        cfg = self.config
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        _, _, cluster_id = cute.arch.block_idx()
        _, _, clusters = cute.arch.grid_dim()
        tiles_m = (c.shape[0] + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (c.shape[1] + cfg.tile_n - 1) // cfg.tile_n
        clusters_m, clusters_n = self.order.cluster_grid(tiles_m, tiles_n)
        cluster_tiles = clusters_m * clusters_n
        k_tiles = (copies.tma_a.shape[1] + cfg.tile_k - 1) // cfg.tile_k
        plan, whole = None, cluster_tiles
        if cutlass.const_expr(self.modes is not None):
            plan, whole = self.modes.plan(self, cluster_tiles, clusters, k_tiles)
        cta = (rank % cfg.cluster_m, rank // cfg.cluster_m)
        return TileGrid(clusters_m, clusters_n, *cta, cluster_id, clusters, cluster_tiles, k_tiles, whole, plan)

    @cute.jit
    def math_registers(
        self, copies: Copies, shared: Shared, per_warpgroup: cutlass.Constexpr, math_wg: Any = None
    ) -> MathRegisters:
        """This math thread's MMA slice, operand fragments, accumulators and their coordinates in its
        ``mma_tile`` (``per_warpgroup``: each warpgroup is a whole tiled MMA of its own, as in ping-pong;
        with ``wg_split="n"`` warpgroup ``math_wg`` reads its half of every B stage)."""
        cfg = self.config
        tidx, _, _ = cute.arch.thread_idx()
        math_tidx = tidx - MATH_FIRST_WARP * 32
        if cutlass.const_expr(per_warpgroup):
            math_tidx = math_tidx % 128
        thr_mma = copies.tiled_mma.get_slice(math_tidx)
        tile_shape = cfg.mma_tile
        b = shared.b
        if cutlass.const_expr(cfg.wg_split == "n"):
            b = cute.local_tile(shared.b, (cfg.mma_tile[1], cfg.tile_k, self.ab_stages), (math_wg, 0, 0))
        return MathRegisters(
            thr_mma,
            copies.tiled_mma.make_fragment_A(thr_mma.partition_A(shared.a)),
            copies.tiled_mma.make_fragment_B(thr_mma.partition_B(b)),
            cute.make_rmem_tensor(thr_mma.partition_shape_C(tile_shape), Float32),
            thr_mma.partition_C(cute.make_identity_tensor(tile_shape)),
            math_tidx,
        )

    @cute.jit
    def math(self, decl: cutlass.Constexpr, context: Any, math_wg: Int32) -> None:
        """A math warpgroup: the k-loop of wgmmas per tile, then the epilogue through the staging ring.
        ``context``: (copies, shared memory, tile grid, epilogue arguments, tracer, the comm role's arguments)."""
        cfg = self.config
        copies, shared, grid, args, tracer, comm_args = context  # comm_args: the comm role's, or the gate's
        pingpong = cutlass.const_expr(cfg.schedule is Schedule.PINGPONG)
        halves = cutlass.const_expr(cfg.wg_split == "n")  # each warpgroup its half of the columns
        regs = self.math_registers(copies, shared, pingpong or halves, math_wg)
        acc, n, tile_shape = regs.acc, args.n, (cfg.tile_m, cfg.tile_n)
        epi = EpilogueStage(self, copies.tiled_mma, copies.atom_c, copies.tma_c, shared.c, regs.math_tidx)
        staging = decl.staging.producer(sync=shared.epilogue_barrier)
        consumer = decl.mainloop.consumer()
        first, step, order = grid.cluster_id, grid.clusters, None
        if cutlass.const_expr(pingpong):
            order = OrderedBarrier.at_start(decl.order, shared.order, math_wg, tracer=tracer, trace_id=2)
            first, step = grid.cluster_id + math_wg * grid.clusters, 2 * grid.clusters
            consumer.skip(math_wg * grid.k_tiles)
        comm = self.comm
        notify = decl.notify.producer() if cutlass.const_expr(comm is not None) else None
        for linear in cutlass.range(first, grid.whole_tiles, step, unroll=1):
            tm, tn = self.order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
            tm = rows_first(self.gate, cfg.tile_m, tm, comm_args)
            if cutlass.const_expr(pingpong):
                order.wait()
            consumer, staging = mainloop(copies.tiled_mma, regs, consumer, grid.k_tiles, staging)
            if cutlass.const_expr(pingpong):
                order.arrive()
            origin = tile_origin(regs.coords, cfg, tm, tn, math_wg if cutlass.const_expr(halves) else 0)
            # The terms' memory operands load while the last k-tile's wgmmas still run.
            loaded = load_operands(self.terms, acc, origin, args)
            warpgroup.wait_group(0)
            consumer.release()
            if cutlass.const_expr(pingpong):
                consumer.skip(grid.k_tiles)
                order.wait()
            trace_epilogue(tracer, TraceEvent.WAIT)
            if cutlass.const_expr(len(self.terms) > 0):
                apply_terms(self.terms, acc, origin, args, loaded)
            if cutlass.const_expr(adds_partials(comm)):  # comm hook: the owner's reduction
                clusters = (grid.clusters_m, grid.clusters_n)
                comm.add_received(acc, regs.thr_mma, comm_args, tm, tn, clusters, n, tile_shape)
            if cutlass.const_expr(comm is not None):  # comm hook: a notify slot before the first TMA store
                notify = comm.begin_tile(notify, epi.is_storer, comm_args, tm, tn, n)
            if cutlass.const_expr(halves):
                staging = store_halves(epi, acc, staging, tm, tn, math_wg)
            else:
                staging = store_tile(epi, acc, staging, tm, tn)
            if cutlass.const_expr(comm is not None):  # comm hook: commit (tm, tn) after the last staging commit
                notify = comm.end_tile(notify, epi.is_storer, comm_args, tm, tn, n)
            trace_epilogue(tracer, TraceEvent.RELEASE)
            if cutlass.const_expr(pingpong):
                # The other warpgroup reuses the staging buffers next: no store may still read them.
                staging.tail()
                order.arrive()
        if cutlass.const_expr(comm is not None):  # comm hook: end-of-stream once every store is complete
            comm.finish(notify, epi.is_storer)
        if cutlass.const_expr(not pingpong):
            staging.tail()


def trace_epilogue(tracer: Any, event: TraceEvent) -> None:
    """The epilogue's span in a traced build (trace id 3); nothing otherwise."""
    if tracer is not None:
        tracer.record(int(event), 3, 0)


def _swizzled(base: cute.Pointer, layout: Any) -> cute.Tensor:
    """The shared-memory tensor of a swizzled layout at ``base`` (plain rows: ``staging_layout``)."""
    if isinstance(layout, cute.ComposedLayout):
        return cute.make_tensor(cute.recast_ptr(base, layout.inner), layout.outer)
    return cute.make_tensor(base, layout)
