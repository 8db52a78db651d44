"""A small all-gather consumer kernel for the tests: the load warp of each CTA walks tile rows of the
gathered A (the rank's own rows first), waits at its :class:`pipes.cute.comm.ChunkGate`, TMA-loads the
tile into a 2-stage ring; a second warp copies each landed tile to ``out`` (the same rows). On a GPU,
``out`` must equal the gathered A bit for bit; on the CPU the kernel compiles for sm_90a.
"""

import os

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402

from pipes import ArrivalUnit, Completion, PipelineSpec, Role  # noqa: E402
from pipes.cute import RoleLayout, TmaLoadPipeline, Warps, init_pipelines, storage_words  # noqa: E402
from pipes.cute.comm import ChunkGate, GateArgs, GateSpec  # noqa: E402

TILE_M = 32
STAGES = 2


def build_gathered_copy(spec: GateSpec, columns: int):
    """The launcher ``launch(a, out, gate_args, stream)``: ``a`` the gathered A (``rows × columns`` Int32,
    row-major), ``out`` the same shape; grid: one CTA per 4 tile rows (at least 1)."""
    if spec.tile_m != TILE_M:
        raise ValueError(f"the test kernel loads {TILE_M}-row tiles; the spec says tile_m = {spec.tile_m}")
    tile_elems = TILE_M * columns
    pipe_spec = PipelineSpec(
        "a_in",
        STAGES,
        Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("copy", ArrivalUnit.WARP, 1),
        Completion.TRANSACTION_BYTES,
        tile_elems * 4,
    )
    pipe = TmaLoadPipeline(pipe_spec)
    layout = RoleLayout(64, {"load": Warps(0), "copy": Warps(1)})
    words = storage_words(pipe)
    tiles_m = -(-spec.plan.rows // TILE_M)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        stage: cute.struct.Align[cute.struct.MemRange[Int32, tile_elems * STAGES], 128]

    @cute.kernel
    def kernel(atom: cute.CopyAtom, ga: cute.Tensor, out: cute.Tensor, args: GateArgs):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        tiles = st.stage.get_tensor(cute.make_layout((TILE_M, columns, STAGES), stride=(columns, 1, tile_elems)))
        bid, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        if layout.is_role("load"):
            g_tiles = cute.local_tile(ga, (TILE_M, columns), (None, None))
            s_part, g_part = cpasync.tma_partition(
                atom, 0, cute.make_layout(1), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
            )
            producer = pipe.producer()
            gate = ChunkGate.of(spec, args)
            for t in cutlass.range(bid, tiles_m, grid, unroll=1):
                tm = spec.plan.own_rows_first(t, TILE_M, args.rank)
                gate = gate.wait_tile(tm)
                slot = producer.acquire()
                cute.copy(atom, g_part[(None, tm, 0)], s_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                producer.commit()
            producer.tail()
        if layout.is_role("copy"):
            consumer = pipe.consumer()
            lane = cute.arch.lane_idx()
            for t in cutlass.range(bid, tiles_m, grid, unroll=1):
                tm = spec.plan.own_rows_first(t, TILE_M, args.rank)
                slot = consumer.wait()
                for i in cutlass.range(lane, tile_elems, 32, unroll=1):
                    row, col = i // columns, i % columns
                    out[tm * TILE_M + row, col] = tiles[row, col, slot]
                consumer.release()

    @cute.jit
    def launch(a: cute.Tensor, out: cute.Tensor, args: GateArgs, stream):
        smem_layout = cute.make_layout((TILE_M, columns), stride=(columns, 1))
        atom, ga = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (TILE_M, columns))
        ctas = max(1, tiles_m // 4)
        kernel(atom, ga, out, args).launch(grid=(ctas, 1, 1), block=(64, 1, 1), stream=stream)

    return launch


def fake_matrix(rows: int, columns: int):
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(Int32, (rows, columns), stride_order=(1, 0), assumed_align=16)
