"""CPU tests of the all-gather's load side: the chunk arithmetic (:class:`pipes.chunks.ChunkPlan`) and the
load warp's gate (:class:`pipes.cute.comm.ChunkGate`) compiled into a small TMA-loading kernel for sm_90a.

Every PTX fact is also checked on a variant that must not have it (a ``.gpu`` gate, a hand-written wait
without the proxy fence), so no assertion can pass vacuously.
"""

import os
import re

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass.cute.nvgpu import cpasync
from ptx_check import kernel_body, path_states

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.chunks import ChunkPlan
from pipes.cute import RoleLayout, TmaLoadPipeline, Warps, init_pipelines, storage_words
from pipes.cute.comm import MAX_CHUNKS, ChunkGate, GateArgs, GateSpec, ReadyFlags

OPTIONS = "--gpu-arch sm_90a --keep-ptx"
TILE = 32


# --- the arithmetic ---------------------------------------------------------------------------------------
def test_chunk_span_covers_a_tiles_rows_and_clips_at_the_edge():
    plan = ChunkPlan(rows=1024, world=2, chunk_rows=256)
    assert (plan.rows_per_rank, plan.chunks_per_rank, plan.chunks) == (512, 2, 4)
    assert plan.tile_span(0, 128) == (0, 1) and plan.tile_span(3, 128) == (1, 2)
    assert plan.tile_span(1, 384) == (1, 3)  # rows 384..767 touch chunks 1 and 2
    assert plan.tile_span(2, 384) == (3, 4)  # rows 768..1151: past the edge clipped to the last chunk
    first, end = plan.tile_span(5, 256)  # wholly outside: empty
    assert first >= end
    assert [plan.owner(c) for c in range(plan.chunks)] == [0, 0, 1, 1]
    assert plan.chunks_of(1) == range(2, 4) and plan.rows_of(2) == range(512, 768)
    assert plan.max_span(128) == 1 and plan.max_span(384) == 2 and plan.max_span(256) == 1


def test_every_row_of_every_tile_is_in_a_chunk_of_its_span():
    plan = ChunkPlan(rows=3 * 384, world=3, chunk_rows=192)
    for tile_m in (64, 128, 192, 256, 384):
        for tm in range(-(-plan.rows // tile_m)):
            first, end = plan.tile_span(tm, tile_m)
            rows = range(tm * tile_m, min(tm * tile_m + tile_m, plan.rows))
            assert {r // plan.chunk_rows for r in rows} == set(range(first, end))
            assert end - first <= plan.max_span(tile_m)


def test_own_rows_first_is_a_rotation_that_starts_at_the_ranks_block():
    plan = ChunkPlan(rows=1024, world=4, chunk_rows=128)
    for rank in range(4):
        walk = [plan.own_rows_first(tm, 64, rank) for tm in range(16)]
        assert sorted(walk) == list(range(16))  # every tile row once
        assert all(plan.owner(plan.tile_span(tm, 64)[0]) == rank for tm in walk[:4])  # its own rows first


def test_plan_errors_spell_out_the_arithmetic():
    with pytest.raises(ValueError, match="at least two ranks"):
        ChunkPlan(rows=512, world=1, chunk_rows=128)
    with pytest.raises(ValueError, match="1000 = 3 × 333 \\+ 1"):
        ChunkPlan(rows=1000, world=3, chunk_rows=111)
    with pytest.raises(
        ValueError, match="chunk_rows = 300 does not divide a rank's 4096 rows .*4096 = 13 × 300 \\+ 196"
    ):
        ChunkPlan(rows=8192, world=2, chunk_rows=300)
    with pytest.raises(ValueError, match="rank = 2 is invalid"):
        ChunkPlan(rows=512, world=2, chunk_rows=128).chunks_of(2)


def test_gate_spec_errors():
    with pytest.raises(ValueError, match=f"more than the {MAX_CHUNKS} a gate remembers: use chunk_rows >= 32"):
        GateSpec(ChunkPlan(rows=1 << 14, world=2, chunk_rows=16), tile_m=128)
    with pytest.raises(ValueError, match="GateSpec.scope = 'system' is invalid"):
        GateSpec(ChunkPlan(rows=1024, world=2, chunk_rows=256), tile_m=128, scope="system")
    with pytest.raises(ValueError, match="must be a pipes.chunks.ChunkPlan"):
        GateSpec((1024, 2, 256), tile_m=128)
    spec = GateSpec(ChunkPlan(rows=1 << 14, world=4, chunk_rows=128), tile_m=128)
    assert spec.words == 2 and spec.span == 1


def test_a_gate_checks_the_tiles_of_the_kernel_that_waits_at_it():
    spec = GateSpec(ChunkPlan(rows=2 * 1152, world=2, chunk_rows=128), tile_m=128)
    spec.check_tiles(128)  # 1152 rows: 9 tile rows of 128, whole clusters of one
    with pytest.raises(ValueError, match="the gate counts tiles of 128 rows, the configuration 64"):
        spec.check_tiles(64)
    with pytest.raises(ValueError, match=r"1152 rows must be whole cluster rows of tiles \(128 × cluster_m 2 = 256\)"):
        spec.check_tiles(128, cluster_m=2)


# --- the gate in a TMA-loading kernel -----------------------------------------------------------------------
def _build(spec: GateSpec | None, fence: bool = True):
    """Warp 0 walks ``n`` tile rows of A: ``gate.wait_tile(tm)``, then TMA-loads the tile into the ring;
    warp 1 waits and releases. ``spec`` None: a hand-written flag wait instead of the gate (``fence``:
    followed by the proxy fence or not) — the variants the PTX checks must tell apart."""
    stages = 2
    pipe_spec = PipelineSpec(
        "a_in",
        stages,
        Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
        Role("mma", ArrivalUnit.WARP, 1),
        Completion.TRANSACTION_BYTES,
        TILE * TILE * 2,
    )
    pipe = TmaLoadPipeline(pipe_spec)
    layout = RoleLayout(64, {"load": Warps(0), "mma": Warps(1)})
    words = storage_words(pipe)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[Int64, words]
        stage: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, TILE * TILE * stages], 128]

    @cute.kernel
    def kernel(atom: cute.CopyAtom, ga: cute.Tensor, flags: cute.Pointer, rank: Int32, value: Int32, n: Int32):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((pipe,), st.pipes.data_ptr(), layout=layout)
        tiles = st.stage.get_tensor(cute.make_layout((TILE, TILE, stages), stride=(TILE, 1, TILE * TILE)))
        if layout.is_role("load"):
            g_tiles = cute.local_tile(ga, (TILE, TILE), (None, None))
            s_part, g_part = cpasync.tma_partition(
                atom, 0, cute.make_layout(1), cute.group_modes(tiles, 0, 2), cute.group_modes(g_tiles, 0, 2)
            )
            producer = pipe.producer()
            if cutlass.const_expr(spec is not None):
                gate = ChunkGate.start(spec, flags, rank, value)
                for t in cutlass.range(n, unroll=1):
                    tm = spec.plan.own_rows_first(t, TILE, rank)  # the rank's own rows first
                    gate = gate.wait_tile(tm)
                    slot = producer.acquire()
                    cute.copy(atom, g_part[(None, tm, 0)], s_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                    producer.commit()
            else:
                for tm in cutlass.range(n, unroll=1):
                    ReadyFlags(flags, "sys").wait(tm, value, exact=True, report=False)
                    if cutlass.const_expr(fence):
                        cute.arch.fence_proxy("async.global")
                    slot = producer.acquire()
                    cute.copy(atom, g_part[(None, tm, 0)], s_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                    producer.commit()
            producer.tail()
        if layout.is_role("mma"):
            consumer = pipe.consumer()
            for _ in cutlass.range(n, unroll=1):
                consumer.wait()
                consumer.release()

    @cute.jit
    def launch(a: cute.Tensor, flags: cute.Pointer, rank: Int32, value: Int32, n: Int32):
        smem_layout = cute.make_layout((TILE, TILE), stride=(TILE, 1))
        atom, ga = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (TILE, TILE))
        kernel(atom, ga, flags, rank, value, n).launch(grid=(1, 1, 1), block=(64, 1, 1))

    return launch


def _ptx(spec: GateSpec | None, fence: bool = True) -> str:
    from cutlass.cute.runtime import make_fake_compact_tensor, make_ptr

    a = make_fake_compact_tensor(cutlass.BFloat16, (1024, TILE), stride_order=(1, 0), assumed_align=16)
    flags = make_ptr(cutlass.Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
    compiled = cute.compile(_build(spec, fence), a, flags, Int32(0), Int32(1), Int32(4), options=OPTIONS)
    return compiled.artifacts.PTX


def _spec(**options) -> GateSpec:
    return GateSpec(ChunkPlan(rows=1024, world=2, chunk_rows=256), tile_m=TILE, **options)


def _acquire_then_fence(ins: str, state: str) -> str:
    """Along a path: ``acquired`` after a flag's acquire load, ``fenced`` once a global proxy fence follows."""
    if ins.startswith("ld.acquire."):
        return "acquired"
    if ins.startswith("fence.proxy.async.global") and state == "acquired":
        return "fenced"
    return state


def _tma_load_states(ptx: str) -> set[str]:
    """Every state some path brings to a TMA load of A."""
    states = path_states(kernel_body(ptx), _acquire_then_fence, "start")
    found = [s for ins, s in states if ins.startswith("cp.async.bulk.tensor") or "cp.async.bulk.tensor" in ins]
    assert found, "no TMA load in the kernel"
    return set().union(*found)


@pytest.fixture(scope="module")
def gated_ptx() -> str:
    return _ptx(_spec())


def test_gate_acquires_its_flag_at_system_scope(gated_ptx):
    assert "ld.acquire.sys.global.b32" in gated_ptx and "ld.acquire.gpu" not in gated_ptx
    assert "trap;" in gated_ptx and "%globaltimer" in gated_ptx  # bounded: traps instead of hanging
    assert "vprintf" not in gated_ptx  # report=False by default: printf would serialize a GEMM's wgmma
    gpu = _ptx(_spec(scope="gpu"))
    assert "ld.acquire.gpu.global.b32" in gpu and "ld.acquire.sys" not in gpu


def test_no_tma_load_follows_an_acquire_without_the_global_proxy_fence(gated_ptx):
    assert "fence.proxy.async.global;" in gated_ptx
    states = _tma_load_states(gated_ptx)
    assert "acquired" not in states and "fenced" in states
    # The checker is not vacuous: the same wait without the fence reaches the TMA load unfenced.
    assert "acquired" in _tma_load_states(_ptx(None, fence=False))
    assert "acquired" not in _tma_load_states(_ptx(None, fence=True))


def test_gate_compares_tokens_exactly_or_epochs_cyclically():
    def compares(ptx: str) -> set[str]:
        return {i.split()[0] for i in kernel_body(ptx) if i.startswith("setp.")}

    exact, cyclic = _ptx(_spec()), _ptx(_spec(exact=False))
    assert any(c.startswith(("setp.ne", "setp.eq")) for c in compares(exact))
    assert any(i.startswith("sub.s32") for i in kernel_body(cyclic))
    assert exact != cyclic


def test_gate_with_a_report_prints_the_chunk_and_the_value():
    ptx = _ptx(_spec(report=True, name="a_chunks"))
    assert "vprintf" in ptx and "flag wait timed out: a_chunks[" in _strings(ptx)


def test_a_gate_that_records_its_waits_keeps_two_more_words_per_chunk_after_the_flags(gated_ptx):
    """``record_waits``: lane 0 of a load warp that passed a chunk's gate adds what it waited (``red.max``
    of the ns, ``red.add`` of one warp past WAITED_NS) in the words after the flags; without it no
    reduction is emitted. The host reads them back per chunk."""
    from pipes.cute.comm import WAITED_NS, gate_waits

    recording = _spec(record_waits=True)
    assert (recording.flag_words, _spec().flag_words) == (3 * 4, 4)
    ptx = _ptx(recording)
    assert "red.relaxed.gpu.global.max.u32" in ptx and "red.relaxed.gpu.global.add.u32" in ptx
    assert not re.search(r"\bred\.", gated_ptx)
    words = [0, 0, 0, 0, 0, 2500, 0, 0, 0, 3, 0, 0]
    assert gate_waits(words, 4) == [(0.0, 0), (2.5, 3), (0.0, 0), (0.0, 0)] and WAITED_NS == 1_000
    with pytest.raises(ValueError, match=r"4 flag words for 4 chunks: a gate that records waits has 12"):
        gate_waits(words[:4], 4)
    with pytest.raises(ValueError, match=r"GateSpec.record_waits = 1 is invalid: allowed True or False"):
        _spec(record_waits=1)


def _strings(ptx: str) -> str:
    import re

    out = []
    for body in re.findall(r"\.global \.align \d+ \.b8 \w+\[\d+\] = \{([^}]*)\}", ptx):
        out.append(bytes(int(b) for b in body.split(",") if b.strip()).decode("utf-8", "replace"))
    return "\n".join(out)


def test_a_tile_over_several_chunks_waits_for_each_and_a_large_plan_keeps_several_words():
    spec = GateSpec(ChunkPlan(rows=1024 * 8, world=4, chunk_rows=16), tile_m=TILE)  # 512 chunks, 8 words
    assert spec.span == 2 and spec.words == 8
    ptx = _ptx(spec)
    assert ptx.count("fence.proxy.async.global;") == 2  # one per chunk the tile's rows may touch
    assert "acquired" not in _tma_load_states(ptx)


class _GateFromArgs:
    """A one-warp kernel that takes the gate's run-time arguments as one ``GateArgs`` (as a GEMM would)."""

    def __init__(self, spec: GateSpec) -> None:
        self.spec = spec

    @cute.jit
    def __call__(self, args: GateArgs, n: Int32):
        self.kernel(args, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, args: GateArgs, n: Int32):
        gate = ChunkGate.of(self.spec, args)
        for tm in cutlass.range(n, unroll=1):
            gate = gate.wait_tile(tm)
        cute.arch.fence_proxy("async.global")  # something after the loop that keeps it


def test_the_gate_takes_its_run_time_arguments_as_one_tuple_from_the_host_helpers():
    from pipes.comm import fake_gate_args

    args = fake_gate_args(rank=1)
    assert isinstance(args, GateArgs) and args.rank == 1 and args.value == 1
    ptx = cute.compile(_GateFromArgs(_spec()), args, Int32(4), options=OPTIONS).artifacts.PTX
    assert "ld.acquire.sys.global.b32" in ptx


def test_the_gpu_tests_gathered_copy_kernel_compiles_with_the_gate_before_every_tma_load():
    from cutlass.cute.runtime import make_fake_stream
    from gather_kernels import TILE_M, build_gathered_copy, fake_matrix

    from pipes.comm import fake_gate_args

    spec = GateSpec(ChunkPlan(rows=1024, world=2, chunk_rows=128), tile_m=TILE_M)
    launch = build_gathered_copy(spec, columns=64)
    a, out = fake_matrix(1024, 64), fake_matrix(1024, 64)
    ptx = cute.compile(launch, a, out, fake_gate_args(), make_fake_stream(), options=OPTIONS).artifacts.PTX
    assert "ld.acquire.sys.global.b32" in ptx and "acquired" not in _tma_load_states(ptx)
