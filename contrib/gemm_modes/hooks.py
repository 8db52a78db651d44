"""The performance modes plugged into the teaching kernel: :class:`ModeHooks` is its ``KernelModes``.

=========================  ====================================================================
hook (teaching kernel)     what the modes do there
=========================  ====================================================================
``own_staging``            False with ``staging_in_ring``: the staging buffers alias the A ring
``stored_box``             the deferred epilogue stores 16-row pieces of a subtile (one per warp)
``partial_sums``           stream-K and split-K take a (flags, partials) workspace
``split_k_alone``          split-K alone may store C column by column (a swapped launch's Cᵀ) and
                           run on warpgroups along N: its stores go through the kernel's own path
``plan`` (every role)      what follows the whole tiles: stream-K's or the aligned split's shares
                           (:mod:`.splits`), split-K's last wave; how many whole tiles come first
``load_rest`` (load warp)  the A/B k-tiles of this cluster's split units, in the order the math
                           warpgroups compute them
``math`` (math warps)      :meth:`ModeHooks.math`: the whole tiles with the deferred epilogue, then
                           stream-K's units (:mod:`.stream_k`) or split-K's part (:mod:`.split_k`)
=========================  ====================================================================

The hooks only add roles' work around the kernel's pipes objects: the load warp and the math warpgroups
still meet only in the ``mainloop`` pipeline, and the staging ring is the kernel's own (per warp with
the deferred epilogue, :class:`pipes.cute.WarpSync`). The one synchronization outside pipes objects is
the split tiles' fix-up through global flags, written down for ``pipes.check`` in
:mod:`.stream_k_protocol` and :mod:`.split_k_protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup
from hopper_gemm.epilogue import apply_terms, load_operands
from hopper_gemm.epilogue_store import EpilogueStage, store_halves, store_tile, tile_origin
from hopper_gemm.kernel import trace_epilogue
from hopper_gemm.kernel_parts import TileGrid, rows_first
from hopper_gemm.load_warp import load_k_tiles
from hopper_gemm.mainloop import mainloop

from pipes.cute import TraceEvent, WarpSync

from .deferred_store import WARP_ROWS, DeferredStore, flush, hold
from .modes import TunedConfig
from .split_k import split_k_unit
from .splits import SplitK, stream_k_split
from .stream_k import SplitContext, split_phase


@dataclass(frozen=True)
class ModeHooks:
    """The kernel hooks of ``config``'s modes (``GemmKernel(config.config, problem, modes=ModeHooks(config))``)."""

    config: TunedConfig

    @property
    def own_staging(self) -> bool:
        return not self.config.staging_in_ring

    @property
    def partial_sums(self) -> bool:
        return self.config.partial_sums

    @property
    def takes_math_role(self) -> bool:
        return self.config.modes.takes_math_role

    @property
    def split_k_alone(self) -> bool:
        """Whether split-K is the only mode: its parts post partials in register order and store their shares
        through the plain kernel's store path (``store_tile``, or ``store_halves`` for warpgroups along N)."""
        return self.config.modes.plain_or_split_k and self.config.split_k > 1

    def describe(self) -> str:
        return self.config.modes.describe()

    def stored_box(self, config: Any) -> tuple[int, int]:
        """The TMA store's box: each math warp's own 16 rows of a subtile with the deferred epilogue."""
        return (WARP_ROWS, config.epi_n) if self.config.deferred_chunks else config.epi_tile

    def plan(self, kernel: Any, cluster_tiles: Any, clusters: Any, k_tiles: Any) -> tuple[Any, Any]:
        """(the split after the whole tiles, how many whole tiles come first): stream-K's
        :func:`~.splits.stream_k_split`, split-K's whole waves (:meth:`~.splits.SplitK.first_split`), or
        nothing split."""
        cfg = self.config
        if cfg.stream_k:
            split = stream_k_split(cfg, cluster_tiles, clusters, k_tiles)
            return split, split.dp_tiles
        if cfg.split_k > 1:
            return None, SplitK.first_split(cluster_tiles, clusters)
        return None, cluster_tiles

    @cute.jit
    def load_rest(self, kernel: cutlass.Constexpr, producer: Any, sources: Any, grid: TileGrid) -> Any:
        """The load warp after the whole tiles: this cluster's stream-K units, or its split-K part."""
        # The kernel object itself must stay out of the run-time loops below (the DSL would try to carry it).
        cfg, order, plain = self.config, kernel.order, kernel.config
        if cutlass.const_expr(cfg.stream_k):
            at, end = grid.plan.stream(grid.cluster_id, grid.k_tiles)
            while at < end:
                tile, kb, ke = grid.plan.unit(at, end, grid.k_tiles)
                linear = grid.plan.dp_tiles + tile
                tm, tn = order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
                producer = load_k_tiles(plain, producer, sources, tm, tn, kb, ke)
                at = at + (ke - kb)
        if cutlass.const_expr(cfg.split_k > 1):
            tile, _, kb, ke = SplitK(cfg.split_k).unit(grid.cluster_id, grid.k_tiles)
            if tile < grid.cluster_tiles - grid.whole_tiles:
                linear = grid.whole_tiles + tile
                tm, tn = order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
                producer = load_k_tiles(plain, producer, sources, tm, tn, kb, ke)
        return producer

    @cute.jit
    def math(self, kernel: cutlass.Constexpr, decl: cutlass.Constexpr, context: Any, math_wg: Any) -> None:
        """The math warpgroups (cooperative): the whole tiles, each stored at once or held and stored under
        the next tile's first k-tiles (``deferred_chunks``); then the split phase or split-K's part."""
        cfg = self.config
        copies, shared, grid, args, tracer, workspace = context
        halves = cutlass.const_expr(kernel.config.wg_split == "n")  # each warpgroup its half of the columns
        regs = kernel.math_registers(copies, shared, halves, math_wg)
        acc = regs.acc
        epi = EpilogueStage(kernel, copies.tiled_mma, copies.atom_c, copies.tma_c, shared.c, regs.math_tidx)
        deferred = None
        held_tm, held_tn = cutlass.Int32(0), cutlass.Int32(0)
        if cutlass.const_expr(cfg.deferred_chunks > 0):
            # Every math warp stores its own rows through its own staging cursor: it syncs with itself only.
            staging = decl.staging.producer(sync=WarpSync())
            deferred = DeferredStore(kernel, epi, acc.shape, shared.c_stored, regs.math_tidx // 32)
            held_tm, held_tn = deferred.nowhere()
        else:
            staging = decl.staging.producer(sync=shared.epilogue_barrier)
        consumer = decl.mainloop.consumer()
        order, terms, gate = kernel.order, kernel.terms, kernel.gate
        for linear in cutlass.range(grid.cluster_id, grid.whole_tiles, grid.clusters, unroll=1):
            tm, tn = order.cta_tile(linear, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
            tm = rows_first(gate, cfg.tile_m, tm, workspace)  # with a gate: its arguments (no workspace then)
            # Handles passed to a function come back: a dynamic loop carries only what it sees assigned.
            under = None if deferred is None else (deferred, held_tm, held_tn)
            consumer, staging = mainloop(copies.tiled_mma, regs, consumer, grid.k_tiles, staging, under)
            origin = tile_origin(regs.coords, cfg, tm, tn, math_wg if cutlass.const_expr(halves) else 0)
            loaded = load_operands(terms, acc, origin, args)
            warpgroup.wait_group(0)
            consumer.release()
            trace_epilogue(tracer, TraceEvent.WAIT)
            if cutlass.const_expr(len(terms) > 0):
                apply_terms(terms, acc, origin, args, loaded)
            if cutlass.const_expr(deferred is not None):
                hold(deferred, acc)  # stored under the next tile's first k-tiles
                held_tm, held_tn = tm, tn
            elif cutlass.const_expr(halves):
                staging = store_halves(epi, acc, staging, tm, tn, math_wg)
            else:
                staging = store_tile(epi, acc, staging, tm, tn)
            trace_epilogue(tracer, TraceEvent.RELEASE)
        split = SplitContext(copies, grid, args, regs, shared, workspace)
        if cutlass.const_expr(cfg.stream_k):  # the split phase; it stores the held tile
            staging = split_phase(kernel, (epi, deferred), split, (consumer, staging), (held_tm, held_tn))
        elif cutlass.const_expr(cfg.split_k > 1):  # this cluster's part of its tile, summed with the others
            consumer, staging = split_k_unit(kernel, epi, split, (consumer, staging))
        elif cutlass.const_expr(deferred is not None):
            staging = flush(deferred, staging, held_tm, held_tn)
        staging.tail()
