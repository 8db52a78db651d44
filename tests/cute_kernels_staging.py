"""Test kernel for :class:`pipes.cute.TmaStoreStaging` (CPU compile tests and the GPU test).

One warpgroup per CTA is the epilogue: for each of ``n_tiles`` tiles, all 128 threads acquire a staging
buffer, write a 32×32 Int32 tile into it (8 values each), publish it, and warp 0 TMA-stores it to its
own global tile; every thread commits. A staging buffer overwritten before its store read it shows up
as a wrong element in global memory. Tile ``t`` of CTA ``b`` is global tile ``b·n_tiles + t`` and holds
``pattern(b·n_tiles + t, e)``. ``out[b] = (slot the last acquire returned, stores committed)``.

``loop="range"`` drives the handle through a dynamic ``cutlass.range``; ``loop="while"`` through a
``while`` loop whose body also commits inside a dynamic ``if`` (both branches commit). ``batch`` > 1
(with ``loop="range"``): ``batch`` tiles per ``acquire(slots=batch)``, one publish, then a store and a
commit per tile (``n_tiles`` a multiple of ``batch``).
"""

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cute_kernels import TILE, Built, pattern  # noqa: E402
from cutlass import Int32  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402

from pipes.cute import NamedBarrierAllocator, TmaStoreStaging  # noqa: E402

THREADS = 128
PER_THREAD = TILE * TILE // THREADS


def build_staging(stages: int, *, loop: str = "range", sync: bool = True, batch: int = 1) -> Built:
    staging = TmaStoreStaging(stages, name="epi_staging")

    @cute.struct
    class Storage:
        stage: cute.struct.Align[cute.struct.MemRange[Int32, TILE * TILE * stages], 128]

    @cute.jit
    def fill(tiles: cute.Tensor, slot: Any, tile: Int32) -> None:
        tidx, _, _ = cute.arch.thread_idx()
        for j in cutlass.range_constexpr(PER_THREAD):
            e = tidx * PER_THREAD + j
            tiles[e // TILE, e % TILE, slot] = pattern(tile, e)

    @cute.kernel
    def kernel(tma_atom: cute.CopyAtom, gtma: cute.Tensor, out: cute.Tensor, n_tiles: Int32):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        tiles = st.stage.get_tensor(cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)))
        named = NamedBarrierAllocator(block_threads=THREADS)
        epi_bar = named.allocate("epilogue", threads=THREADS) if sync else None
        bid, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        g_tiles = cute.local_tile(gtma, (TILE, TILE), (None, None))
        s_part, g_part = cpasync.tma_partition(
            tma_atom, 0, cute.make_layout(1), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
        )
        producer = staging.producer(sync=epi_bar)
        last = Int32(-1)
        if cutlass.const_expr(batch > 1):
            for r in cutlass.range(n_tiles // batch, unroll=1):
                first = producer.acquire(slots=batch)
                for j in cutlass.range_constexpr(batch):
                    fill(tiles, producer.slot(j), bid * n_tiles + r * batch + j)
                producer.publish()
                for j in cutlass.range_constexpr(batch):
                    if warp == 0:
                        tile = bid * n_tiles + r * batch + j
                        cute.copy(tma_atom, s_part[(None, producer.index)], g_part[(None, tile, 0)])
                    producer.commit()
                last = Int32(first)
        elif cutlass.const_expr(loop == "range"):
            for t in cutlass.range(n_tiles, unroll=1):
                slot = producer.acquire()
                fill(tiles, slot, bid * n_tiles + t)
                producer.publish()
                if warp == 0:
                    cute.copy(tma_atom, s_part[(None, slot)], g_part[(None, bid * n_tiles + t, 0)])
                producer.commit()
                last = Int32(slot)
        else:
            t = Int32(0)
            while t < n_tiles:
                slot = producer.acquire()
                fill(tiles, slot, bid * n_tiles + t)
                producer.publish()
                if warp == 0:
                    cute.copy(tma_atom, s_part[(None, slot)], g_part[(None, bid * n_tiles + t, 0)])
                    producer.commit()
                else:
                    producer.commit()
                last = Int32(slot)
                t = t + 1
        producer.tail()
        if tidx == 0:
            out[bid, 0] = last
            out[bid, 1] = Int32(producer.count)

    @cute.jit
    def launch(gout: cute.Tensor, out: cute.Tensor, n_tiles: Int32, stream: Any):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        tma_atom, gtma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), gout, smem_layout, (TILE, TILE))
        kernel(tma_atom, gtma, out, n_tiles).launch(grid=(out.shape[0], 1, 1), block=(THREADS, 1, 1), stream=stream)

    return Built(launch, staging, ())
