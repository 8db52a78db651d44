"""The all-gather GEMM on the CPU: the gated kernel's PTX, the own-rows-first walk, the configuration checks
and the example's compile-only report (examples/tp_ag_gemm.py; the 2- and 4-GPU runs are in its --check)."""

from __future__ import annotations

import re

import pytest
from gemm_modes.launch import hooks_for
from gemm_modes.modes import tuned_config
from hopper_gemm.config import Problem
from hopper_gemm.kernel_parts import rows_first
from kernel_tools.report import compile_report
from ptx_check import kernel_body, path_states

from pipes.chunks import ChunkPlan
from pipes.cute.comm import GateArgs, GateSpec

PLAN = ChunkPlan(rows=8192, world=2, chunk_rows=1024)


def _acquire_then_fence(ins: str, state: str) -> str:
    if ins.startswith("ld.acquire."):
        return "acquired"
    if ins.startswith("fence.proxy.async.global") and state == "acquired":
        return "fenced"
    return state


@pytest.fixture(scope="module", params=["cooperative", "deferred"])
def gated(request):
    extra = {"deferred_chunks": 8} if request.param == "deferred" else {}
    config = tuned_config(128, 256, 2, 1, "cooperative", **extra)
    return compile_report(config.config, Problem("bf16"), hooks_for(config), GateSpec(PLAN, tile_m=128))


def test_every_tma_load_of_a_gated_tile_follows_a_system_acquire_and_the_global_proxy_fence(gated):
    """The load warp's gate: each chunk's flag is acquired at system scope (the pusher is another GPU), and
    no path reaches a TMA load between an acquire and its ``fence.proxy.async.global`` (the TMA reads
    through the async proxy, which the generic acquire alone does not order)."""
    ptx = gated.ptx
    assert "ld.acquire.sys.global.b32" in ptx and "ld.acquire.gpu" not in ptx
    states = path_states(kernel_body(ptx), _acquire_then_fence, "start")
    loads = [s for ins, s in states if ins.startswith("cp.async.bulk.tensor.2d.shared::cluster.global")]
    assert loads, "no multicast TMA load of the mainloop in the kernel"
    reaching = set().union(*loads)
    assert "acquired" not in reaching and "fenced" in reaching and "start" in reaching  # own rows: no wait
    assert gated.spill_bytes == 0 and not gated.wgmma_serialized  # report=False: no printf near the wgmmas


def test_without_a_gate_the_kernel_has_no_flag_wait():
    ptx = compile_report(tuned_config(128, 256, 2, 1, "cooperative").config, Problem("bf16")).ptx
    assert "ld.acquire.sys" not in ptx and "fence.proxy.async.global" not in ptx


@pytest.mark.parametrize(
    ("world", "tile_m", "rows"),
    [(2, 128, 4096), (4, 128, 4096), (2, 256, 4096), (4, 64, 4096), (3, 128, 3072), (8, 128, 4096)],
)
def test_every_role_walks_its_own_rows_first_and_computes_every_tile_row_once(world, tile_m, rows):
    plan = ChunkPlan(rows=rows, world=world, chunk_rows=512)
    gate = GateSpec(plan, tile_m=tile_m)
    tiles, own = rows // tile_m, plan.rows_per_rank // tile_m
    for rank in range(world):
        walk = [rows_first(gate, tile_m, tm, GateArgs(None, rank, 0)) for tm in range(tiles)]
        assert sorted(walk) == list(range(tiles))
        assert walk[:own] == list(range(rank * own, (rank + 1) * own))
    assert rows_first(None, tile_m, 5, None) == 5


def test_a_gate_the_configuration_cannot_honour_is_refused_by_name():
    from hopper_gemm.kernel import GemmKernel

    config = tuned_config(128, 256, 2, 1, "cooperative")
    with pytest.raises(ValueError, match="the gate counts tiles of 64 rows, the configuration 128"):
        GemmKernel(config.config, Problem("bf16"), gate=GateSpec(PLAN, tile_m=64))
    split = tuned_config(128, 256, 2, 1, "cooperative", split_k=2)
    with pytest.raises(ValueError, match="runs no mode that sums partials .*split-K in 2"):
        GemmKernel(split.config, Problem("bf16"), modes=hooks_for(split), gate=GateSpec(PLAN, tile_m=128))
    odd = ChunkPlan(rows=2 * 1152, world=2, chunk_rows=128)  # 1152 rows per rank: 9 tiles of 128
    with pytest.raises(ValueError, match=r"1152 rows must be whole cluster rows of tiles \(128 × cluster_m 2 = 256\)"):
        GemmKernel(config.config, Problem("bf16"), gate=GateSpec(odd, tile_m=128))


@pytest.mark.parametrize("world", [2, 4])
def test_the_push_warp_sends_this_ranks_chunks_beside_the_gate(world):
    """``GemmKernel(push=ChunkPushWarp)``: warps 1–3 acquire every peer's credit, send the rank's chunks in
    16-byte stores and releases each flag at system scope, beside the load warp's gate (epochs: the gate
    waits until a flag has reached the launch's); no spills, no serialized wgmma."""
    from pipes.cute.comm import ChunkPushWarp, ChunkSender

    plan = ChunkPlan(rows=8192, world=world, chunk_rows=1024)
    gate = GateSpec(plan, tile_m=128, exact=False)
    config = tuned_config(128, 256, 2, 1, "cooperative").config
    pushing = compile_report(config, Problem("bf16"), None, gate, ChunkPushWarp(ChunkSender(plan, 4096), warps=3))
    plain = compile_report(config, Problem("bf16"), None, gate)
    assert "st.global.v4.b32" in pushing.ptx and "st.global.v4.b32" not in plain.ptx
    assert "st.release.sys.global.b32" in pushing.ptx and "st.release.sys" not in plain.ptx
    # the gate's polls plus one per peer's credit word
    assert pushing.ptx.count("ld.acquire.sys") > plain.ptx.count("ld.acquire.sys")
    assert pushing.spill_bytes == 0 and not pushing.wgmma_serialized


def test_a_push_warp_without_its_gate_is_refused_by_name():
    from hopper_gemm.kernel import GemmKernel

    from pipes.cute.comm import ChunkPushWarp, ChunkSender

    config = tuned_config(128, 256, 2, 1, "cooperative").config
    push = ChunkPushWarp(ChunkSender(PLAN, 4096))
    with pytest.raises(ValueError, match="a push warp needs a gate"):
        GemmKernel(config, Problem("bf16"), push=push)
    with pytest.raises(ValueError, match=r"the gate must wait until a flag has reached it \(GateSpec\(exact=False\)\)"):
        GemmKernel(config, Problem("bf16"), gate=GateSpec(PLAN, tile_m=128), push=push)
    other = ChunkPlan(rows=8192, world=2, chunk_rows=512)
    with pytest.raises(ValueError, match="allowed one plan"):
        GemmKernel(config, Problem("bf16"), gate=GateSpec(other, tile_m=128, exact=False), push=push)
    epoch_gate = GateSpec(PLAN, tile_m=128, exact=False)
    with pytest.raises(ValueError, match="push and comm in one kernel"):
        GemmKernel(config, Problem("bf16"), gate=epoch_gate, push=push, comm=object())
    with pytest.raises(ValueError, match="ChunkPushWarp.warps = 4: the producer warpgroup has 3 warps"):
        GemmKernel(config, Problem("bf16"), gate=epoch_gate, push=ChunkPushWarp(ChunkSender(PLAN, 4096), warps=4))


def test_the_example_without_gpus_compiles_the_gated_kernel_and_proves_the_protocol(capsys, torch_without_gpu):
    import tp_ag_gemm

    assert tp_ag_gemm.main(["--rows", "8192", "--cols", "4096", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "compiling for sm_90a instead (nothing runs)" in out
    assert "spills        : 0 bytes" in out and "gate          : 8 chunks of 1024 rows" in out
    assert "pipes.check all_gather_copy: OK" in out and "pipes.check all_gather_sm: OK" in out
    assert "planted all_gather_tma_before_acquire     : READ_UNCOMMITTED" in out
    assert "planted all_gather_no_credit              : OVERWRITE_UNRELEASED" in out


def test_the_example_compiles_the_push_warp_with_pusher_sm(capsys, torch_without_gpu):
    import gated_gemm
    import tp_ag_gemm

    assert tp_ag_gemm.main(["--rows", "8192", "--cols", "4096", "--k", "8192", "--pusher", "sm"]) == 0
    out = capsys.readouterr().out
    assert "spills        : 0 bytes" in out and "gate          : 256 chunks of 32 rows" in out
    assert "push warps    : warp 1 of each of 132 CTAs: 128 pushes to 1 peer(s), round-robin" in out
    # three push warps per CTA: chunks of 16 rows (the kernel with three push warps compiles in test_the_push_warp_…)
    assert gated_gemm.default_chunk_rows("sm", 8192, 2, 132 * 3) == 16
    assert gated_gemm.default_chunk_rows("copy", 8192, 2, 132 * 3) == 1024


def test_the_report_shows_the_gates_and_the_copies_own_cost_beside_our_gemm(capsys, monkeypatch):
    """``tp_ag_gemm.report``: ``gated_only`` (the gated kernel with every chunk already in place), the
    copies beside our GEMM (without, then with their flags) and ours with the credits given back on the
    launching stream sit between our GEMM alone and ours, so the table splits the time over our GEMM into
    the gates', the copies' and the protocol's share."""
    import tp_ag_gemm

    monkeypatch.delenv("OUT", raising=False)
    us = {"matmul": 194.0, "all_gather": 99.8, "sequential": 278.6, "our_gemm": 187.1, "gated_only": 190.2}
    us |= {"beside_copies": 191.4, "beside_flagged": 191.0, "grant_launching": 230.5, "ours": 223.1}
    row = {"shape": [8192, 4096, 2048], "device": "GPU", "config": "cooperative", "prepared": True}
    row |= {"rel_err": 2e-3, "bitwise_repeat": True, "us": us, "S": 1.25, "over_gemm": 0.192}
    row["over_gemm_rounds"] = [0.041, 0.020, 0.063]
    tp_ag_gemm.report([row], 2)
    lines = capsys.readouterr().out.splitlines()
    assert re.search(r"19\.2%\s+\+4\.1% \(\+2\.0 … \+6\.3\)", lines[2])  # medians' ratio, the rounds' ratios
    head = lines[1].split()
    order = ["our_gemm", "gated_only", "beside_copies", "beside_flagged", "grant_launching", "ours"]
    assert [head.index(c) for c in order] == list(range(head.index("our_gemm"), head.index("our_gemm") + 6))
    assert "187.1        190.2         191.4          191.0           230.5        223.1" in lines[2]


def test_the_timeline_line_names_each_copy_with_its_receiver_and_chunk(capsys, monkeypatch):
    """``--timeline``: rank 0's kernel end, credits and, per chunk copy in queue order, the receiving rank,
    the chunk, when the copy could begin and when its flag was raised."""
    import tp_ag_gemm

    monkeypatch.delenv("OUT", raising=False)
    row = {"shape": [8192, 4096, 2048], "device": "GPU", "config": "cooperative", "prepared": True}
    row |= {"rel_err": 2e-3, "bitwise_repeat": True}
    row["timeline"] = {"kernel_end": 230.4, "credits_taken": 6.2, "flags": [31.0, 55.6], "started": [6.4, 31.2]}
    row["timeline"]["copies"] = [[1, 0], [1, 1]]
    row["timeline"]["ranks"] = [{"kernel_end": 230.4, "last_flag": 55.6, "period": 238.0}] * 2
    row["timeline"]["gate_waits"] = [[(0.0, 0)] * 4, [(0.0, 0), (0.4, 0), (12.46, 8), (0.0, 0)]]
    tp_ag_gemm.report([row], 2)
    timeline, every, waits = capsys.readouterr().out.rstrip().splitlines()[-3:]
    assert timeline.startswith("timeline 8192×4096×2048, rank 0, µs from the launch's start: kernel ended 230, ")
    assert timeline.endswith("copies (to rank#chunk, may begin–flag) →1#0 6–31 →1#1 31–56")
    assert every.endswith("launch period (µs): 0: 230/56/238, 1: 230/56/238")
    assert waits == "8192×4096×2048:  gate waits (chunk longest µs / load warps that waited): 0: none; 1: #2 12.5/8"


def test_a_gate_that_records_its_waits_leaves_the_gemm_s_registers_alone():
    """``--timeline`` builds the gated kernel with ``GateSpec(record_waits=True)``: the load warp's two
    reductions per chunk cost the math warpgroups nothing (no spill, the wgmmas pipelined)."""
    config = tuned_config(128, 256, 2, 1, "cooperative", deferred_chunks=8)
    gate = GateSpec(PLAN, tile_m=128, record_waits=True)
    r = compile_report(config.config, Problem("bf16"), hooks_for(config), gate)
    assert "red.relaxed.gpu.global.max.u32" in r.ptx
    assert r.spill_bytes == 0 and not r.wgmma_serialized


@pytest.mark.parametrize(
    ("m", "n", "k", "world"),
    [
        (8192, 4096, 2048, 2),
        (8192, 8192, 4096, 2),
        (8192, 2048, 8192, 4),
        (4096, 7168, 8192, 4),  # a rank's 4 cluster rows: bands of 8 would pair two ranks' rows
        (12288, 4096, 4096, 4),  # 12 cluster rows: bands of 6
        (12288, 2048, 8192, 3),  # three ranks
    ],
)
def test_the_gated_walk_takes_every_own_tile_before_any_other_ranks_row(m, n, k, world):
    """``configuration``: the gated GEMM walks along N, so in walk order (what the persistent CTAs take,
    wave by wave) every tile of the rank's own rows, all columns, comes before the first tile of a row
    another rank pushes, and the others' rows follow in their chunks' order. Auto's walk along M
    (``alone_configuration``, the baseline) reaches another rank's rows after one band of columns."""
    import gated_gemm

    from pipes.tile_order import TileOrder

    def walk(config, rank):
        order = TileOrder.of(config)
        gate = GateSpec(ChunkPlan(rows=m, world=world, chunk_rows=1024), tile_m=config.tile_m)
        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        clusters_m, clusters_n = order.cluster_grid(tiles_m, tiles_n)
        rows = []
        for linear in range(clusters_m * clusters_n):
            for cm in range(config.cluster_m):
                for cn in range(config.cluster_n):
                    tm, _ = order.cta_tile(linear, clusters_m, clusters_n, cm, cn)
                    rows.append(rows_first(gate, config.tile_m, tm, GateArgs(None, rank, 0)))
        return rows, tiles_n * (m // world) // config.tile_m

    gated, alone = gated_gemm.configuration(m, n, k, world), gated_gemm.alone_configuration(m, n, k, world)
    assert gated.raster == "n" and gated.with_(raster=alone.raster, group=alone.group) == alone
    assert (m // world) % (gated.group * gated.cluster_m * gated.tile_m) == 0  # no band spans two ranks' rows
    for rank in range(world):
        rows, own_tiles = walk(gated, rank)
        own = range(rank * m // world // gated.tile_m, (rank + 1) * m // world // gated.tile_m)
        assert all(r in own for r in rows[:own_tiles]) and not any(r in own for r in rows[own_tiles:])
        # the others' rows band by band (a band: `group` cluster rows, walked across every column)
        band_rows = gated.group * gated.cluster_m
        bands = [((r - own.start) % (m // gated.tile_m)) // band_rows for r in rows]
        assert bands == sorted(bands)
    rows, own_tiles = walk(alone, 0)
    if n // alone.tile_n > alone.group * alone.cluster_n:  # more than one band of columns
        assert any(r >= m // world // alone.tile_m for r in rows[:own_tiles])


def test_chunk_rows_may_name_variants_timed_beside_ours(capsys, monkeypatch):
    """``--chunk-rows 256,1024``: ours pushes chunks of 256 rows and a second launcher of 1024-row chunks is
    timed beside it as ``ours_c1024``, its column after the fixed ones."""
    import tp_ag_gemm

    assert tp_ag_gemm.parse(["--chunk-rows", "256,1024"]).chunk_rows == [256, 1024]
    assert tp_ag_gemm.parse([]).chunk_rows is None
    with pytest.raises(SystemExit):
        tp_ag_gemm.parse(["--chunk-rows", "256,x"])
    assert "allowed ints (256 or 256,1024)" in capsys.readouterr().err
    monkeypatch.delenv("OUT", raising=False)
    us = {"matmul": 194.0, "sequential": 278.6, "our_gemm": 187.1, "ours": 223.1, "ours_c1024": 230.5}
    row = {"shape": [4096, 7168, 8192], "device": "GPU", "config": "cooperative", "prepared": True}
    row |= {"rel_err": 2e-3, "bitwise_repeat": True, "us": us, "S": 1.25, "over_gemm": 0.192}
    tp_ag_gemm.report([row], 4)
    head, line = capsys.readouterr().out.splitlines()[1:3]
    assert head.split()[head.split().index("ours") + 1] == "ours_c1024" and "223.1        230.5" in line


def test_any_world_size_takes_the_two_gpu_problems_where_they_divide(capsys):
    """Beyond the tabled 2 and 4 GPUs the default shapes are the two-GPU problems with W split ``world``
    ways, kept where every rank's rows are whole 1024-row chunks and its columns whole 256-column tiles;
    a world none divides asks for the shape, and a partial shape is refused."""
    import tp_ag_gemm

    assert tp_ag_gemm.default_shapes(4) == tp_ag_gemm.SHAPES[4]
    assert tp_ag_gemm.default_shapes(8) == [
        (8192, 1024, 8192),
        (8192, 2048, 4096),
        (16384, 1024, 8192),
        (8192, 1024, 2048),
    ]  # 4096 rows are not 8 ranks × 1024
    for world in (2, 4, 8):
        for m, n, _k in tp_ag_gemm.default_shapes(world):
            assert (m // world) % 1024 == 0 and n % 256 == 0
    assert tp_ag_gemm.default_shapes(3) == []
    assert tp_ag_gemm.main(["--world", "3"]) == 2
    assert "--world 3: no default shape splits into 3 row blocks" in capsys.readouterr().err
    assert tp_ag_gemm.main(["--world", "1"]) == 2
    assert "--world 1: allowed at least 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tp_ag_gemm.parse(["--m", "12288", "--k", "8192"])
    assert "--m, --n and --k go together" in capsys.readouterr().err


def test_three_ranks_compile_without_gpus(capsys, torch_without_gpu):
    """``--world 3`` with a shape given: the gated kernel for a rank of three compiles clean, its gate
    over three row blocks of four chunks."""
    import tp_ag_gemm

    assert tp_ag_gemm.main(["--world", "3", "--m", "12288", "--n", "2048", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "spills        : 0 bytes" in out and "gate          : 12 chunks of 1024 rows, 4096 rows per rank" in out
