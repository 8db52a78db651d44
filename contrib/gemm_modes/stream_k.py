"""Stream-K's split phase (:func:`split_phase`, the math warpgroups' units after the whole tiles) and its
fix-up: a tile split between clusters is summed through global memory.

=========================  ==========================================  ===========================
role                       what it does with split tile ``s``          synchronization
=========================  ==========================================  ===========================
math warpgroups, a unit    store their fp32 accumulators into slot     ``epilogue`` named barrier
with later k-tiles of the  ``part − 1`` of ``partials[s]`` (each       (the 256 math threads),
tile (part 1 or 2, first   thread its own values, 16 bytes at a        then thread 0:
in its cluster's share)    time, coalesced across the warp)            ``atom.release.gpu`` +1 on
                                                                        ``flags[s]``
math warpgroups, the unit  thread 0 polls ``flags[s]`` until it        the named barrier orders
with k-tile 0 (part 0,     counts the tile's other parts               every thread's reads after
last in its share)         (``ld.acquire.gpu``; a trap after 2 s),     thread 0's acquire
                           resets it to 0 for the next launch; all
                           add the slots to their accumulators, then
                           the usual epilogue
=========================  ==========================================  ===========================

``s`` is the CTA's own split tile (``split tile × cluster size + rank in the cluster``): both CTAs of a
cluster split their tiles at the same k-tile, each with its own partials. A partial is laid out in the
accumulators' register order, so the units (same thread index, same fragment) need no coordinates:
value ``i`` of math thread ``t`` lives at ``(i // 4) · 4 · threads + 4 · t + i % 4`` of its slot. Up to
``TunedConfig.stream_k_partials`` slots per tile in remainder mode (its shares are at least that fraction
of a tile), one otherwise (with ``stream_k_aligned`` the follow part's: a follower's units all post, and
a lead, its cluster's only unit, adds). The flag counts the posted parts and the storing unit puts
it back to 0 (the next launch is stream-ordered after this one). This is CUTLASS's ``GenericBarrier``
pattern (``__syncthreads`` then one thread's ``red.release.gpu``; one thread's ``ld.acquire.gpu`` then
``__syncthreads``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32
from cutlass.cute.nvgpu import warpgroup
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep
from hopper_gemm.epilogue import apply_terms
from hopper_gemm.epilogue_store import store_tile, tile_origin
from hopper_gemm.mainloop import mainloop

from pipes.cute import trap

from .deferred_store import flush, hold
from .splits import AlignedSplit, StreamKSplit

#: A partial not posted after this long traps instead of hanging the GPU (a broken split).
TIMEOUT_NS = 2_000_000_000
POLL_NS = 32
#: fp32 values per thread per store: 16 bytes.
VECTOR = 4


def partial_slot(partials: cute.Pointer, split_tile: Any, j: Any, math_tidx: Any, shape: tuple[int, int, int]) -> Any:
    """Math thread ``math_tidx``'s accumulators in slot ``j`` of CTA split tile ``split_tile``: slot ``j``
    holds the partial of the tile's part ``j + 1``. ``shape``: (slots per tile, values per thread, threads)."""
    slots, values, threads = shape
    base = partials + (split_tile * slots + j) * (values * threads)
    layout = cute.make_layout(((VECTOR, values // VECTOR), threads), stride=((1, VECTOR * threads), VECTOR))
    return cute.make_tensor(base, layout)[(None, math_tidx)]


@cute.jit
def save_partial(acc: cute.Tensor, mine: cute.Tensor, flag: cute.Pointer, math_tidx: Any, barrier: Any) -> None:
    """The unit with the tile's last k-tiles: post its partial sum, then raise the tile's flag."""
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        mine[i] = acc[i]
    barrier.sync()
    if math_tidx == 0:
        cute.arch.atomic_add(flag, Uint32(1), sem="release", scope="gpu")


@cute.jit
def add_partials(
    acc: cute.Tensor, where: Any, shape: cutlass.Constexpr, count: Any, flag: cute.Pointer, math_tidx: Any, barrier: Any
) -> None:
    """The unit with k-tile 0: wait until the tile's ``count`` other parts posted, then add their partials
    (``where``: (partials, split tile); ``shape`` as for :func:`partial_slot`)."""
    partials, split_tile = where
    if math_tidx == 0:
        # One slot: the flag is 0 or 1 (the same test as ``got < count``, count = 1).
        poll_flag(flag, 1 if cutlass.const_expr(shape[0] == 1) else count)
        cute.arch.store(flag, Uint32(0))  # for the next launch
    barrier.sync()
    for j in cutlass.range_constexpr(shape[0]):
        if cutlass.const_expr(j == 0) or j < count:  # count ≥ 1 here: the caller adds only to a split tile
            _add(acc, partial_slot(partials, split_tile, j, math_tidx, shape))


@cute.jit
def poll_flag(flag: cute.Pointer, at_least: Any) -> None:
    """Poll ``flag`` (``ld.acquire.gpu``) until it counts ``at_least``; a trap after :data:`TIMEOUT_NS`."""
    start = cute.arch.globaltimer()
    got = Int32(cute.arch.load(flag, Uint32, sem="acquire", scope="gpu"))
    while got < at_least:
        if cute.arch.globaltimer() - start > Int64(TIMEOUT_NS):
            trap()
        nanosleep(POLL_NS)
        got = Int32(cute.arch.load(flag, Uint32, sem="acquire", scope="gpu"))


@cute.jit
def _post(cfg: cutlass.Constexpr, acc: cute.Tensor, post: Any, shape: cutlass.Constexpr, part: Any) -> None:
    """Post ``acc`` as part ``part`` of its tile: into slot ``part − 1`` of the tile's slots in the remainder
    mode, slot 0 otherwise (one slot per tile). ``post``: (partials, flags, CTA split tile, math thread,
    barrier)."""
    partials, flags, mine_tile, math_tidx, barrier = post
    slot = 0
    if cutlass.const_expr(cfg.stream_k_remainder):
        slot = part - 1
    mine = partial_slot(partials, mine_tile, slot, math_tidx, shape)
    save_partial(acc, mine, flags + mine_tile, math_tidx, barrier)


@cute.jit
def _add(acc: cute.Tensor, mine: cute.Tensor) -> None:
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        acc[i] = acc[i] + mine[i]


def workspace_words(split_tiles: int, config: Any) -> tuple[int, int]:
    """(flag words, fp32 partial values) of ``config``'s workspace for ``split_tiles`` cluster-tiles (split
    by stream-K, or every cluster-tile with split-K)."""
    ctas = split_tiles * config.cluster_size
    return ctas, ctas * _slots(config) * config.tile_m * config.tile_n


def _slots(config: Any) -> int:
    """Partial slots per CTA tile: one per part with split-K, else what the configuration's split holds."""
    if config.split_k > 1:
        return config.split_k
    if config.stream_k_aligned:
        return AlignedSplit.slots()
    return StreamKSplit.slots(config.stream_k_remainder, config.stream_k_partials)


class SplitContext(NamedTuple):
    """What the math warpgroups' split work (stream-K's units, split-K's part) reads beside the handles it
    threads through: the copies (for the tiled MMA), the tile grid (stream-K: plain values of it), the
    epilogue terms' arguments, the math registers (``hopper_gemm.kernel_parts.MathRegisters``), shared
    memory and the ``(flags, partials)`` workspace."""

    copies: Any
    grid: Any
    args: Any
    regs: Any
    shared: Any
    workspace: Any


__all__ = ["SplitContext", "add_partials", "partial_slot", "poll_flag", "save_partial", "workspace_words"]


@cute.jit
def split_phase(
    kernel: cutlass.Constexpr, stores: cutlass.Constexpr, context: SplitContext, handles: Any, held: Any = None
) -> Any:
    """The math warpgroups' stream-K phase (:meth:`~gemm_modes.hooks.ModeHooks.math` after its whole
    tiles): this cluster's share of k-tiles, unit by unit (:class:`StreamKSplit`). A unit with the tile's
    last k-tiles posts a partial (:func:`save_partial`); the unit with k-tile 0 adds the others' partials
    if the tile is split (:func:`add_partials`) and stores the tile. Returns the staging handle.

    ``handles``: the (mainloop consumer, staging) handles; ``stores``: (the staged epilogue, the deferred
    one or None); ``held``: with a deferred epilogue, the (tm, tn) of the last whole tile, still held: its
    chunks go out under the first unit's k-tiles (at once when the share is empty). A split tile's own
    epilogue is stored at once: the storing unit is the last of its share."""
    _, deferred = stores
    consumer, staging = handles
    grid = context.grid
    rank = grid.cta_n * kernel.config.cluster_m + grid.cta_m
    # Plain values, not the TileGrid: a call inside the branch below rebuilds the (mutable) object it is
    # given in place, and the loop after the branch would then read values of the branch's region.
    walk = (grid.k_tiles, grid.plan, grid.clusters_m, grid.clusters_n, grid.cta_m, grid.cta_n, rank)
    context = context._replace(grid=walk)
    at, end = grid.plan.stream(grid.cluster_id, grid.k_tiles)
    if cutlass.const_expr(deferred is not None):
        held_tm, held_tn = held
        if at < end:
            at, consumer, staging = _unit(kernel, context, stores, (consumer, staging), at, end, (deferred, *held))
        else:
            staging = flush(deferred, staging, held_tm, held_tn)
    # Aligned, a lead is its cluster's only unit and came first above: the rest only post (less code live).
    posts_only = kernel.modes.config.stream_k_aligned and deferred is not None
    while at < end:
        at, consumer, staging = _unit(kernel, context, stores, (consumer, staging), at, end, posts_only=posts_only)
    return staging


@cute.jit
def _unit(
    kernel: cutlass.Constexpr,
    context: Any,
    stores: cutlass.Constexpr,
    handles: Any,
    at: Any,
    end: Any,
    held: Any = None,
    posts_only: cutlass.Constexpr = False,
) -> tuple[Any, Any, Any]:
    """The split unit at stream position ``at``: its k-loop (the ``held`` tile's deferred chunks under it),
    then a posted partial or the tile's fix-up and store (``posts_only``: a unit known to post). Returns
    (next position, consumer, staging)."""
    # The kernel object itself must stay out of the run-time loop (the DSL would try to carry it).
    cfg, order, terms = kernel.modes.config, kernel.order, kernel.terms
    copies, walk, args, regs, shared, stream_k_args = context
    k_tiles, split, clusters_m, clusters_n, cta_m, cta_n, rank = walk
    epi, deferred = stores
    acc, coords, math_tidx = regs.acc, regs.coords, regs.math_tidx
    consumer, staging = handles
    flags, partials = stream_k_args
    # (partial slots per split tile, accumulators per thread, math threads)
    shape = (_slots(cfg), cute.size(acc), 128 * cfg.warpgroups_per_tile)
    tile, kb, ke = split.unit(at, end, k_tiles)
    linear = split.dp_tiles + tile
    tm, tn = order.cta_tile(linear, clusters_m, clusters_n, cta_m, cta_n)
    consumer, staging = mainloop(copies.tiled_mma, regs, consumer, ke - kb, staging, held)
    warpgroup.wait_group(0)
    consumer.release()
    mine_tile = tile * cfg.cluster_size + rank
    post = (partials, flags, mine_tile, math_tidx, shared.epilogue_barrier)
    # A trace-time test apart from the run-time one: joined by `or`, the DSL would compile the fix-up
    # below for units that only post, and its registers spilled (aligned, with a bias: 32 bytes).
    if cutlass.const_expr(posts_only):  # noqa: SIM114
        _post(cfg, acc, post, shape, split.part(at, tile, k_tiles))
    elif kb > 0:  # later k-tiles of the tile: its storing unit adds them
        _post(cfg, acc, post, shape, split.part(at, tile, k_tiles))
    else:
        count = split.partials(tile, k_tiles)
        if count > 0:
            where = (partials, mine_tile)
            add_partials(acc, where, shape, count, flags + mine_tile, math_tidx, shared.epilogue_barrier)
        if cutlass.const_expr(len(terms) > 0):
            apply_terms(terms, acc, tile_origin(coords, cfg, tm, tn), args)
        if cutlass.const_expr(deferred is not None):
            hold(deferred, acc)
            staging = flush(deferred, staging, tm, tn)
        else:
            staging = store_tile(epi, acc, staging, tm, tn)
    return at + (ke - kb), consumer, staging
