"""Stream-K's fix-up: a tile split between two clusters is summed through global memory.

=========================  ==========================================  ===========================
role                       what it does with split tile ``s``          synchronization
=========================  ==========================================  ===========================
math warpgroups, the unit  store their fp32 accumulators into           ``epilogue`` named barrier
that computes the tile's   ``partials[s]`` (each thread its own        (the 256 math threads),
*last* k-tiles (first in   values, 16 bytes at a time, coalesced        then thread 0:
its cluster's share)       across the warp)                             ``red.release.gpu`` +1 on
                                                                        ``flags[s]``
math warpgroups, the unit  thread 0 polls ``flags[s]`` with             the named barrier orders
with k-tile 0 (last in     ``ld.acquire.gpu`` (bounded: a trap after    every thread's reads after
its cluster's share)       2 s), resets it to 0 for the next launch;    thread 0's acquire
                           all add ``partials[s]`` to their
                           accumulators, then the usual epilogue
=========================  ==========================================  ===========================

``s`` is the CTA's own split tile (``split tile × cluster size + rank in the cluster``): both CTAs of a
cluster split their tiles at the same k-tile, each with its own partial. The layout of a partial is the
accumulators' register order, so the two units (same thread index, same fragment) need no coordinates:
value ``i`` of math thread ``t`` lives at ``(i // 4) · 4 · threads + 4 · t + i % 4``. The flag counts
to 1 and the storing unit puts it back to 0 (the next launch is stream-ordered after this one). This is
CUTLASS's ``GenericBarrier`` pattern (``__syncthreads`` then one thread's ``red.release.gpu``; one
thread's ``ld.acquire.gpu`` then ``__syncthreads``).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from pipes.cute import trap

#: A partial not posted after this long traps instead of hanging the GPU (a broken split).
TIMEOUT_NS = 2_000_000_000
POLL_NS = 32
#: fp32 values per thread per store: 16 bytes.
VECTOR = 4


def partial_view(partials: cute.Pointer, split_tile: Any, math_tidx: Any, values: int, threads: int) -> cute.Tensor:
    """Math thread ``math_tidx``'s ``values`` accumulators of split tile ``split_tile`` in the workspace."""
    base = partials + split_tile * (values * threads)
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
def add_partial(acc: cute.Tensor, mine: cute.Tensor, flag: cute.Pointer, math_tidx: Any, barrier: Any) -> None:
    """The unit with k-tile 0: wait for the other unit's partial sum and add it to the accumulators."""
    if math_tidx == 0:
        start = cute.arch.globaltimer()
        got = Int32(cute.arch.load(flag, Uint32, sem="acquire", scope="gpu"))
        while got == 0:
            if cute.arch.globaltimer() - start > Int64(TIMEOUT_NS):
                trap()
            nanosleep(POLL_NS)
            got = Int32(cute.arch.load(flag, Uint32, sem="acquire", scope="gpu"))
        cute.arch.store(flag, Uint32(0))  # for the next launch
    barrier.sync()
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        acc[i] = acc[i] + mine[i]


def workspace_words(split_tiles: int, cluster_size: int, tile_m: int, tile_n: int) -> tuple[int, int]:
    """(flag words, fp32 partial values) of a workspace for ``split_tiles`` cluster-tiles."""
    ctas = split_tiles * cluster_size
    return ctas, ctas * tile_m * tile_n


__all__ = ["add_partial", "partial_view", "save_partial", "workspace_words"]
