"""Split-K in one wave (``TunedConfig.split_k`` = s): the s parts of a tile, each on its own cluster, summed
in parallel through global memory.

=========================  ===============================================  ================================
role                       what it does with CTA tile ``t``                 synchronization
=========================  ===============================================  ================================
math warpgroups of part j  k-tiles ``[j·K/s, (j+1)·K/s)`` of the tile       the ``mainloop`` pipeline
(cluster ``t·s + j``)      (:class:`~gemm_modes.splits.SplitK`)
                           post the other parts' shares of its              ``epilogue`` named barrier (256
                           accumulators into slot ``j`` of ``partials[t]``  threads), then thread 0:
                           (register order, 16 bytes per store,             ``atom.release.gpu`` +1 on
                           coalesced across the warp)                       ``flags[t]``
                           wait until every part has posted                 thread 0: ``ld.acquire.gpu``
                                                                            until ``flags[t]`` ≥ s (a trap
                                                                            after 2 s), then the barrier
                           parts 1 … s−1: say so                            thread 0: +1 on ``flags[t]``
                           add the other parts' values of its own share     —
                           of the subtiles (``SplitK.share``; in part
                           order: the same sum on
                           every launch), apply the epilogue terms, store
                           those subtiles through the staging ring
part 0, after its stores   put the flag back to 0 for the next launch       thread 0: ``ld.acquire.gpu``
                                                                            until ``flags[t]`` ≥ 2s − 1
=========================  ===============================================  ================================

On a tile whose warpgroups split N (``wg_split="n"``) the same protocol runs with each warpgroup's half:
the 256 threads count as one (one flag thread per CTA), and a part's share is of each half's subtiles,
both halves stored through the plain kernel's ``store_halves``.

Every part waits only for the other parts' posts, and each posts before it waits; the launch has one
cluster per part (``cluster-tiles × s`` at most the resident clusters, which
:func:`~gemm_modes.launch.clusters_to_launch` checks), so all are resident and no wait can close a
cycle. ``gemm_modes.split_k_protocol`` writes the same counts down for ``pipes.check``.

Against stream-K's fix-up, where the one unit with k-tile 0 reads every other part's whole partial, each
part here writes and reads about (s − 1) / s of a tile and stores about 1/s of it: the reads and the epilogue are
spread over all s clusters instead of one.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Uint32
from cutlass.cute.nvgpu import warpgroup
from hopper_gemm.config import WARPGROUP_THREADS
from hopper_gemm.epilogue import apply_terms
from hopper_gemm.epilogue_store import store_halves, store_tile, tile_origin
from hopper_gemm.mainloop import mainloop
from hopper_gemm.roles import MATH_FIRST_WARP

from .splits import SplitK
from .stream_k import SplitContext, partial_slot, poll_flag


@cute.jit
def split_k_unit(
    kernel: cutlass.Constexpr, epi: cutlass.Constexpr, context: SplitContext, handles: Any
) -> tuple[Any, Any]:
    """This cluster's part of its tile (the table above). ``handles``: the (mainloop consumer, staging)
    handles, returned."""
    consumer, staging = handles
    grid = context.grid
    tile, part, kb, ke = SplitK(kernel.modes.config.split_k).unit(grid.cluster_id, grid.k_tiles)
    if (
        tile < grid.cluster_tiles - grid.whole_tiles
    ):  # a cluster past the split tiles' parts has none (after whole waves)
        consumer, staging = _part(kernel, epi, context, (consumer, staging), (tile, part, kb, ke))
    return consumer, staging


@cute.jit
def _part(
    kernel: cutlass.Constexpr, epi: cutlass.Constexpr, context: SplitContext, handles: Any, unit: Any
) -> tuple[Any, Any]:
    """Part ``unit`` = (tile, part, first k-tile, end k-tile) of its tile."""
    copies, grid, args, regs, shared, workspace = context
    cfg, order, terms = kernel.modes.config, kernel.order, kernel.terms
    acc, coords = regs.acc, regs.coords
    # Both warpgroups' threads in one count: with warpgroups along N ``regs.math_tidx`` counts within one.
    math_tidx = cute.arch.thread_idx()[0] - MATH_FIRST_WARP * 32
    consumer, staging = handles
    flags, partials = workspace
    split = SplitK(cfg.split_k)
    tile, part, kb, ke = unit  # tile: the split tile's index (its flags and partials), after the whole ones
    tm, tn = order.cta_tile(grid.whole_tiles + tile, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n)
    if ke > kb:
        consumer, staging = mainloop(copies.tiled_mma, regs, consumer, ke - kb, staging)
        warpgroup.wait_group(0)
        consumer.release()
    else:  # fewer k-tiles than parts: this part adds nothing
        for i in cutlass.range(cute.size(acc), unroll_full=True):
            acc[i] = cutlass.Float32(0.0)
    # The epilogue's register order: a part's subtiles are one contiguous run of values.
    values = epi.r2s.retile(acc)
    rank = grid.cta_n * cfg.cluster_m + grid.cta_m
    mine = tile * cfg.cluster_size + rank
    flag = flags + mine
    shape = (cfg.split_k, cute.size(acc), 128 * cfg.warpgroups_per_tile)
    slot = partial_slot(partials, mine, part, math_tidx, shape)
    # Only the other parts' shares: a part adds its own from its registers (+0.5 … +5 % against posting
    # the whole partial, H100, eight shapes twice).
    _post_others(epi, values, slot, part)
    shared.epilogue_barrier.sync()
    if math_tidx == 0:
        cute.arch.atomic_add(flag, Uint32(1), sem="release", scope="gpu")  # posted
        poll_flag(flag, split.posted())
        if part != 0:
            cute.arch.atomic_add(flag, Uint32(1), scope="gpu")  # seen: part 0 may reset after all
    shared.epilogue_barrier.sync()
    for j in cutlass.range_constexpr(cfg.split_k):  # the part's slice: static registers per branch
        if part == j:
            staging = _finish_slice(
                epi, terms, (acc, values, coords, math_tidx), (partials, mine, shape), args, staging, (tm, tn, j)
            )
    if part == 0 and math_tidx == 0:
        poll_flag(flag, split.seen())
        cute.arch.store(flag, Uint32(0))  # for the next launch
    return consumer, staging


def share_values(epi: Any, j: int) -> tuple[int, int]:
    """(first, end) of each math thread's accumulator values, in the epilogue's register order, that part
    ``j`` adds up and stores: its :meth:`SplitK.share <gemm_modes.splits.SplitK.share>` of the subtiles,
    each subtile one contiguous run of values."""
    cfg = epi.kernel.modes.config
    subtiles = epi.subtile_grid[0] * epi.subtile_grid[1]
    per_subtile = cute.size(epi.frag_shape)
    first, end = SplitK(cfg.split_k).share(j, subtiles, cfg.epi_batch)
    return first * per_subtile, end * per_subtile


@cute.jit
def _post_others(epi: cutlass.Constexpr, values: cute.Tensor, slot: cute.Tensor, part: Any) -> None:
    """Post the values of every other part's share (a part adds its own share from its registers)."""
    for j in cutlass.range_constexpr(epi.kernel.modes.config.split_k):
        if part != j:
            first, end = share_values(epi, j)
            for v in cutlass.range(first, end, unroll_full=True):
                slot[v] = values[v]


@cute.jit
def _finish_slice(
    epi: cutlass.Constexpr,
    terms: cutlass.Constexpr,
    regs: Any,
    where: Any,
    args: Any,
    staging: Any,
    at: cutlass.Constexpr,
) -> Any:
    """Part ``j``'s slice: add the other parts' values of it (in part order), apply the terms, store it."""
    acc, values, coords, math_tidx = regs
    partials, mine, shape = where
    tm, tn, j = at
    cfg = epi.kernel.modes.config
    first, end = share_values(epi, j)
    for other in cutlass.range_constexpr(cfg.split_k):
        if cutlass.const_expr(other != j):
            theirs = partial_slot(partials, mine, other, math_tidx, shape)
            for v in cutlass.range(first, end, unroll_full=True):
                values[v] = values[v] + theirs[v]
    subtiles = epi.subtile_grid[0] * epi.subtile_grid[1]
    share = SplitK(cfg.split_k).share(j, subtiles, cfg.epi_batch)
    halves = cutlass.const_expr(cfg.wg_split == "n")  # each warpgroup its half: mma_tile (tm, 2·tn + half)
    half = math_tidx // WARPGROUP_THREADS if cutlass.const_expr(halves) else 0
    if cutlass.const_expr(len(terms) > 0):
        apply_terms(terms, acc, tile_origin(coords, cfg, tm, tn, half), args)
    if cutlass.const_expr(halves):
        return store_halves(epi, acc, staging, tm, tn, half, share)
    return store_tile(epi, acc, staging, tm, tn, share)


__all__ = ["split_k_unit"]
