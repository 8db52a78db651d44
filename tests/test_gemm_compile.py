"""examples/persistent_gemm.py compiled for sm_90a on the CPU: what the kernel must contain.

Every schedule × dtype × B layout (and each cluster shape) compiles; the PTX has the wgmmas, the TMA
loads (multicast when the cluster shares an operand), the TMA stores and ``setmaxnreg`` both ways; the
SASS has no ``NANOSLEEP`` (mainloop waits poll), ptxas spills nothing. The example's own sources use
no ``cutlass.pipeline`` and no hand-written mbarrier code, and its declared pipelines pass the checker.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

from gemm_modes.modes import STREAM_K_PARTIALS, tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

COOP = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
PINGPONG = tuned_config(128, 128, 2, 1, Schedule.PINGPONG)


def report(config, problem):
    from compiled_gemm import gemm_report

    return gemm_report(config, problem)


@pytest.mark.parametrize("config", [COOP, PINGPONG], ids=["cooperative", "pingpong"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("b_major", ["k", "n"])
def test_every_schedule_dtype_and_layout_compiles_to_what_it_should(config, dtype, b_major):
    r = report(config, Problem(dtype, b_major))
    ptx = r.ptx
    kind = "f16" if dtype == "fp16" else "bf16"
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{config.tile_n}k16\.f32\.{kind}\.{kind}", ptx)
    # Cluster 2×1: B is shared by the two CTAs (multicast), A is not.
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx  # the epilogue's TMA stores
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40", ptx)
    assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232", ptx)
    # The staging ring waits for the store `epi_stages` commits ago to have read its buffer.
    assert re.search(rf"cp\.async\.bulk\.wait_group\.read\s+{r.epi_stages - 1};", ptx)
    assert r.spill_bytes == 0
    assert r.registers <= 232
    assert not r.wgmma_serialized  # ptxas C7510 would make every wgmma wait for the previous one


@pytest.mark.parametrize(
    "config",
    [
        tuned_config(128, 176, 1, 2, Schedule.PINGPONG),
        tuned_config(128, 208, 2, 1, Schedule.COOPERATIVE, deferred_chunks=13),
        tuned_config(128, 224, 2, 1, Schedule.COOPERATIVE, deferred_chunks=7),
        tuned_config(128, 168, 1, 2, Schedule.PINGPONG),
        tuned_config(128, 168, 2, 1, Schedule.COOPERATIVE, deferred_chunks=21),
        tuned_config(128, 160, 2, 1, Schedule.PINGPONG),
        tuned_config(128, 144, 1, 2, Schedule.PINGPONG),
    ],
    ids=[
        "pingpong128x176",
        "cooperative128x208",
        "cooperative128x224",
        "pingpong128x168",
        "cooperative128x168",
        "pingpong128x160",
        "pingpong128x144",
    ],
)
def test_tile_widths_between_the_powers_of_two_compile_to_one_wgmma_width(config):
    """A width between the powers of two is one wgmma N extent (no padding to the next power of two), its
    8-, 16- or 32-column subtiles are TMA stores of that width, and nothing spills. A 168-column B tile
    (not a multiple of the 128-byte swizzle's 8 rows × 8) builds its TMA atom from one stage's layout."""
    r = report(config, Problem("bf16"))
    widths = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", r.ptx))
    assert widths == {str(config.tile_n)}
    assert r.spill_bytes == 0 and not r.wgmma_serialized
    assert config.epi_n == (32 if config.tile_n % 32 == 0 else 16 if config.tile_n % 16 == 0 else 8)
    if config.epi_n == 8:  # two 8×8 matrices per stmatrix: a warp's 8-column share of the subtile
        assert "stmatrix.sync.aligned.m8n8.x2.shared.b16" in r.ptx
        assert "stmatrix.sync.aligned.m8n8.x4" not in r.ptx


def test_a_192_row_ping_pong_tile_is_three_m64_wgmmas_of_one_warpgroup():
    """Ping-pong 192×112: the warpgroup that owns the tile issues three m64 wgmmas per k-block where 128×112
    issues two (the same N extent), its staged subtiles are 64 rows (three per column), nothing spills."""
    tall, short = tuned_config(192, 112, 1, 2, Schedule.PINGPONG), tuned_config(128, 112, 1, 2, Schedule.PINGPONG)
    counts = []
    for config in (tall, short):
        r = report(config, Problem("bf16"))
        assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", r.ptx)) == {"112"}
        assert r.spill_bytes == 0 and not r.wgmma_serialized
        counts.append(len(re.findall(r"wgmma\.mma_async", r.ptx)))
    assert counts[0] * 2 == counts[1] * 3
    assert tall.epi_tile == (64, 16) and tall.subtiles == 3 * 7


@pytest.mark.parametrize("config", [COOP, PINGPONG], ids=["cooperative", "pingpong"])
def test_each_operand_s_l2_policy_is_chosen_at_run_time_from_its_readers(config):
    """``pipes.cute.read_once_policy``: A's policy from the cluster columns that load each A tile, B's from
    the cluster rows: two ``selp`` of EVICT_FIRST / EVICT_NORMAL, and every TMA load of the ring takes
    one of them as its cache-policy register (no immediate, never the DSL's default 0)."""
    from pipes.cute import TmaCacheHint

    ptx = report(config, Problem("bf16")).ptx
    first, normal = int(TmaCacheHint.EVICT_FIRST), int(TmaCacheHint.EVICT_NORMAL)
    selects = re.findall(rf"selp\.b64\s+(%rd\d+), {first}, {normal}, %p\d+;", ptx)
    assert len(selects) == 2, selects
    loads = re.findall(
        r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global[^;]*|"
        r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global[^;]*",
        ptx,
    )
    assert loads, "no TMA loads found: the pattern is stale"
    policies = {load.rsplit(",", 1)[1].strip() for load in loads}
    assert policies == set(selects), f"load policies {policies}, selected {selects}"  # A's and B's, no other


@pytest.mark.parametrize("cluster", [(1, 1), (1, 2), (2, 2), (4, 1), (1, 4), (4, 2)])
def test_cluster_shapes_multicast_the_shared_operand(cluster):
    r = report(COOP.with_(tile_n=128, cluster_m=cluster[0], cluster_n=cluster[1]), Problem("bf16"))
    multicasts = r.ptx.count("multicast::cluster;") + len(re.findall(r"\.multicast::cluster\.L2", r.ptx))
    # 2×2, 4×2: A along rows and B along columns
    assert multicasts == {(1, 1): 0, (1, 2): 1, (2, 2): 2, (4, 1): 1, (1, 4): 1, (4, 2): 2}[cluster]
    if cluster == (1, 1):
        assert "mbarrier.arrive.shared::cluster" not in r.ptx  # releases stay in the CTA
    else:
        assert "mbarrier.arrive.shared::cluster" in r.ptx  # a peer's empty barrier is released remotely
    assert r.spill_bytes == 0


def test_clusters_are_one_two_or_four_ctas_a_side_and_at_most_eight():
    """Clusters of 4 along a side multicast the shared operand to four CTAs; 3 is no power of two, and
    4×4 = 16 CTAs is past the portable cluster size."""
    with pytest.raises(ValueError, match=r"GemmConfig.cluster_m = 3 is invalid: allowed 1, 2 or 4"):
        tuned_config(128, 128, 3, 1, Schedule.COOPERATIVE)
    with pytest.raises(ValueError, match=r"cluster_m × cluster_n = 16 is invalid: allowed at most 8 CTAs"):
        tuned_config(128, 128, 4, 4, Schedule.COOPERATIVE)
    assert tuned_config(64, 96, 4, 1, Schedule.PINGPONG).cluster_size == 4


@pytest.mark.slow
@pytest.mark.xdist_group("auto-picks")  # one worker, so the picks it shares with the sweep's compile once
def test_every_configuration_auto_can_pick_compiles_without_spills():
    from gemm_modes.autotable import pick

    shapes = [(256, 8192, 8192), (8192, 8192, 1024), (4096, 4096, 4096), (8192, 8192, 8192)]
    shapes += [(128, 8192, 8192), (256, 4096, 8192), (128, 4096, 4096), (64, 8192, 8192)]  # the small-M fill rule
    shapes += [(1536, 3072, 8192), (3072, 3072, 2048), (6144, 1024, 2048)]  # split-K on the last wave, ping-pong
    shapes += [(3072, 1024, 8192)]  # the aligned split
    shapes += [(3824, 96, 3000), (131, 4912, 12704)]  # clusters of four: 64×96, and swapped 64×136 without a bias
    shapes += [(2088, 72, 10784)]  # split-K for a narrow N over a long K: 128×72 in 7 parts of uneven shares
    shapes += [(1048, 1048, 1048), (2128, 904, 4664)]  # ping-pong narrowed to fill one wave: 128×80, 192×96
    shapes += [(1856, 1856, 1856)]  # the width cut to its column tiles: cooperative 128×240
    shapes += [(2616, 608, 5336), (2344, 2344, 2344), (787, 7168, 18432)]  # in 8-column steps: 128×104 in the
    # ring, 128×184 beside it (both in subtiles as wide), swapped cooperative 256×88
    shapes += [(1136, 1136, 1136), (7120, 144, 2352)]  # 64-row tiles twice as wide in fours: 64×192, 64×144
    shapes += [(2328, 752, 8064), (1384, 1384, 1384)]  # and 64×256 in fours, 64×232 in pairs in 64×232 subtiles
    shapes += [(5064, 640, 2072), (18264, 536, 3656)]  # wide subtiles: 128×216 in 128×24, 192×144's halves 64×72
    shapes += [(12792, 152, 13824)]  # with a bias: ping-pong 128×152 4×1 in 64×152 subtiles
    shapes += [(2864, 544, 10872), (2656, 592, 13536)]  # split on 192-row halves: 192×144 in 2, 192×208 in 3
    shapes += [(2072, 688, 11832), (4032, 224, 14424)]  # and from 64-row picks: 192×176 in 3, 192×112 in 3
    shapes += [(273, 5728, 13336), (11688, 184, 9088)]  # and from a narrow 192-row pick: 192×144 on Cᵀ; 192×192
    shapes += [(5848, 392, 12288), (11888, 208, 12904)]  # and from stream-K picks: 192×208 1×2 and 2×1
    shapes += [(11688, 168, 12600), (2688, 880, 12872)]  # 192×176 2×1; on as few SMs as the pick: 192×224
    shapes += [(6144, 328, 5880), (5912, 440, 6112)]  # and in parts of 46 and 48 k-tiles: 192×176, 192×224 1×2
    shapes += [(9016, 112, 6096), (115, 8520, 10736)]  # the thin side in 64-row tiles: 64×144 on Cᵀ, 64×136
    shapes += [(13624, 384, 9432), (9688, 576, 7264), (15456, 376, 4632), (7488, 568, 15488)]  # Cᵀ's 192-row
    # tiles in one wave: 192×208 2×1, 192×224 1×2, 192×240, 192×176 1×1
    shapes += [(538, 9032, 13576), (373, 9016, 4832), (190, 22440, 4544)]  # and a short M's on C: 192×208 1×2,
    # 192×144 in 64×72 subtiles, 192×176 1×2
    shapes += [(5176, 856, 4600), (9824, 512, 6592), (4584, 800, 14536)]  # one wave of tall tiles: 256×144,
    # 256×160 on Cᵀ, 192×160
    shapes += [(2864, 432, 7216), (254, 2088, 15320)]  # long_k's split on 192-row halves: 192×112 in 64×56
    # subtiles in 2 parts, 192×128 on Cᵀ in 6
    shapes += [(63, 18136, 12880), (190, 10352, 3776)]  # ping-pong held in one wave: 64×144 in the ring, 192×80
    shapes += [(298, 18432, 7168), (536, 7856, 8200)]  # a short M in 256-row tiles: 256×104 2×1, 256×136 1×2
    shapes += [(412, 18432, 7168), (144, 9184, 2224), (18824, 504, 2288)]  # ping-pong 192-row tiles: 192×104 and
    shapes += [(8800, 144, 2144)]  # 192×72 on Cᵀ, 192×128 on C, 192×72 in 64×72 subtiles (the last two in 4×2)
    shapes += [(142, 6064, 2280), (2552, 816, 14712), (1432, 1432, 1432)]  # ping-pong 128-row pairs in 4×2:
    # 128×72 on Cᵀ, 128×136 in 64×136 subtiles, 128×144
    shapes += [(11456, 168, 12136), (163, 11296, 5112), (9240, 200, 15112)]  # splits unsplit in 4×2: 192×88 in
    # 64×88 subtiles, 192×88 on Cᵀ, 192×104
    shapes += [(2960, 344, 2664), (409, 3056, 4744)]  # ping-pong 128-row fours in 4×2: 128×88, 128×104 on Cᵀ
    shapes += [(3648, 144, 8320), (201, 3568, 5616)]  # and 64-row ones: 64×72 in 64×72 subtiles, 64×104 on Cᵀ
    for bias in (False, True):
        problem = Problem("bf16", bias=bias, scaled=bias)
        picked = {pick(problem, mnk) for mnk in shapes}
        assert any(c.stream_k_remainder for c in picked) and not pick(problem, (1024, 8192, 8192)).stream_k
        assert any(c.stream_k_aligned for c in picked) and any(c.cluster_size == 4 for c in picked)
        picked.add(pick(problem, (1024, 8192, 8192)))
        for config in picked:
            r = report(config, problem)
            assert r.spill_bytes == 0, f"{config.describe()} bias={bias}: {r.spill_bytes} bytes spilled"


@pytest.mark.parametrize(
    ("config", "batch"),
    [(tuned_config(256, 128, 1, 2, Schedule.COOPERATIVE), 4), (COOP, 2), (PINGPONG, 2)],
    ids=["cooperative256x128-4", "cooperative128x256-2", "pingpong-2"],
)
def test_a_batched_epilogue_pays_one_barrier_pair_per_batch(config, batch):
    """``epi_batch``: the tile's subtiles go through the staging ring ``batch`` at a time — one
    ``wait_group.read (buffers - batch)`` and two barrier syncs per batch instead of per subtile."""
    plain = report(config, Problem("bf16"))
    batched = report(config.with_(epi_batch=batch), Problem("bf16"))
    syncs = len(re.findall(r"\bbar\.sync\b", plain.ptx))
    assert syncs == 2 * config.subtiles  # one tile's epilogue: acquire and publish per subtile
    assert len(re.findall(r"\bbar\.sync\b", batched.ptx)) == syncs // batch
    waits = set(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+(\d+);", batched.ptx))
    assert waits == {str(batched.epi_stages - batch), "0"}
    assert batched.ptx.count("stmatrix") == plain.ptx.count("stmatrix")
    store = "cp.async.bulk.tensor.2d.global.shared"
    assert batched.ptx.count(store) == plain.ptx.count(store) == config.subtiles  # one TMA store per subtile
    assert batched.spill_bytes == 0 and not batched.wgmma_serialized


@pytest.mark.parametrize("config", [COOP, PINGPONG], ids=["cooperative", "pingpong"])
def test_waits_poll_without_nanosleep(config):
    pytest.importorskip("nvidia.cu13", reason="nvdisasm comes with the nvidia-cuda-nvdisasm wheel (dev extra)")
    sass = report(config, Problem("bf16")).sass()
    assert "SYNCS.PHASECHK" in sass or "SYNCS" in sass  # the mbarrier try_wait loops are there
    assert "NANOSLEEP" not in sass
    assert "HGMMA" in sass


def test_bias_and_alpha_are_fused_into_the_epilogue():
    plain = report(COOP, Problem("bf16")).ptx
    fused = report(COOP, Problem("bf16", bias=True, scaled=True)).ptx
    assert fused.count("ld.global") > plain.count("ld.global")  # the bias reads
    # alpha: x * alpha (+ bias) becomes mul.f32 or fma.rn.f32 per accumulator
    assert fused.count("mul.f32") + fused.count("fma.rn.f32") >= plain.count("fma.rn.f32") + 128


def test_the_example_uses_only_pipes_for_synchronization():
    sources = [EXAMPLES / "persistent_gemm.py", *sorted((EXAMPLES / "hopper_gemm").glob("*.py"))]
    for path in sources:
        text = path.read_text()
        for forbidden in ("cutlass.pipeline", "import pipeline", "mbarrier", "NamedBarrier(", "cute.arch.barrier"):
            assert forbidden not in text, f"{path.name} uses {forbidden!r}: synchronization goes through pipes"


def test_declared_pipelines_pass_the_checker():
    """The kernel's own declarations, at ab_stages=2 so that three k-tiles wrap the ring (same roles, counts
    and peers as the real depth), explored exhaustively (the cooperative schedule's 8 interchangeable
    consumer warps as one orbit)."""
    from hopper_gemm.roles import declare

    from pipes.check import check, ordered_protocol, stream_protocol

    for config in (PINGPONG.with_(ab_stages=2), COOP.with_(ab_stages=2), COOP.with_(ab_stages=2, cluster_m=1)):
        decl = declare(config.config, Problem("bf16"))
        proof = check(stream_protocol(decl.mainloop, items=3))
        assert proof.ok and proof.exhaustive, f"{config.describe()}: {proof}"
    order = check(ordered_protocol(declare(PINGPONG.config, Problem("bf16")).order, rounds=3))
    assert order.ok and order.exhaustive, str(order)


def test_the_mainloop_peeks_only_at_k_tiles_that_come():
    """The k-loop's rule for peeking after k-tile k (``peeks_after``, the kernel's own function) leaves no
    ``try_wait`` on a phase that never completes; peeking after every k-tile does (the CTA's last tile)."""
    from hopper_gemm.mainloop import peeks_after

    from pipes.check import check
    from pipes.check.catalogue.tma import peeking_mainloop
    from pipes.check.report import FindingKind

    for k_tiles in (1, 3):
        clean = check(peeking_mainloop(tiles=2, k_tiles=k_tiles, peeks=peeks_after))
        assert clean.ok and clean.exhaustive and not clean.findings, str(clean)
        always = check(peeking_mainloop(tiles=2, k_tiles=k_tiles, peeks=lambda k, n: True))
        assert [f.kind for f in always.findings] == [FindingKind.PEEK_NEVER_COMPLETES], str(always)


def test_the_compile_only_report_leaves_the_working_directory_clean(tmp_path):
    """ptxas keeps the PTX and cubin next to the working directory unless told where; the report tells it
    (run as a user would: another directory, no CUTE_DSL_DUMP_DIR)."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "CUTE_DSL_DUMP_DIR"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the compile-only path, on a GPU runner too
    command = [sys.executable, str(EXAMPLES / "persistent_gemm.py"), "--m", "256", "--n", "256", "--k", "256"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "spills        : 0 bytes" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_without_a_gpu_the_example_reports_resources(capsys, monkeypatch, torch_without_gpu):
    """Without a GPU — or without torch at all, as in a CPU-only install — the example compiles instead."""
    torch = torch_without_gpu
    import persistent_gemm

    assert persistent_gemm.main(["--m", "1024", "--n", "1024", "--k", "512", "--schedule", "pingpong"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"no CUDA GPU here( \(torch is not installed\))?: compiling for sm_90a instead", out)
    if torch is None:
        assert "(torch is not installed)" in out
    assert re.search(r"registers\s+: \d+ per thread", out)
    assert "spills        : 0 bytes" in out
    assert "pingpong tile 128×128×64" in out
    # auto's split-K shape: the report names the split and checks its fix-up with the model
    assert persistent_gemm.main(["--m", "1024", "--n", "1024", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "cooperative tile 128×128×64 cluster 1×2 raster m/8 split-K in 2" in out
    assert "pipes.check split_k_2: OK" in out and "planted early_reset: DEADLOCK" in out
    # auto's aligned split (48 cluster-tiles on 66 clusters): its fix-up checked on the aligned model
    assert persistent_gemm.main(["--m", "3072", "--n", "1024", "--k", "8192", "--bias"]) == 0
    out = capsys.readouterr().out
    assert "stream-K (aligned)" in out and "spills        : 0 bytes" in out
    assert "pipes.check stream_k_aligned: OK" in out and "planted no_wait  : AGENT_ERROR" in out
    # bad input: one line naming it, exit status 2, no traceback
    assert persistent_gemm.main(["--m", "1024", "--n", "1024", "--k", "8192", "--split-k", "9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("persistent_gemm.py: GemmConfig.split_k = 9 is invalid") and "Traceback" not in err


def test_traced_build_records_and_untraced_build_does_not():
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
    from hopper_gemm.kernel import GemmKernel
    from hopper_gemm.launch import fake_operands

    from pipes.cute import TraceLayout

    problem = Problem("bf16")
    layout = TraceLayout(blocks=4, warps=12, capacity=64)
    kernel = GemmKernel(PINGPONG.config, problem, trace=layout)
    buf = make_fake_compact_tensor(cutlass.Int32, (layout.words,), assumed_align=16)
    args = (*fake_operands(problem), cutlass.Float32(1.0), cutlass.Int32(1))
    options = "--gpu-arch sm_90a --keep-ptx"
    traced = cute.compile(kernel.launch, *args, buf, make_fake_stream(), options=options).artifacts.PTX
    plain = report(PINGPONG, problem).ptx
    assert "%clock64" not in plain and "%globaltimer" not in plain
    assert "%clock64" in traced


@pytest.mark.parametrize(
    "config",
    [tuned_config(256, 128, 1, 2, Schedule.COOPERATIVE, stream_k=True), COOP.with_(stream_k=True)],
    ids=["256x128c12", "128x256c21"],
)
def test_stream_k_posts_and_adds_partials_through_release_and_acquire(config):
    """GemmConfig.stream_k: the unit with a split tile's last k-tiles stores its accumulators 16 bytes at a
    time and raises the tile's flag with one release; the storing unit polls it with an acquire (bounded:
    a trap) and reads the partial back, 16 bytes at a time. Nothing spills, the wgmmas stay pipelined."""
    plain = report(config.with_(stream_k=False), Problem("bf16"))
    split = report(config, Problem("bf16"))
    assert split.spill_bytes == 0 and not split.wgmma_serialized
    vectors = config.acc_registers // 4
    body = re.sub(r"//.*", "", split.ptx)
    assert len(re.findall(r"st\.global\.v4\.b32", body)) == vectors  # one slot posted per unit
    assert len(re.findall(r"ld\.global\.v4\.b32", body)) == vectors  # shares ≥ a tile: one slot to add
    assert len(re.findall(r"atom\.global\.release\.add\.u32|red\.global\.release\.add\.u32", body)) == 1
    assert "ld.acquire.gpu" in body and "trap;" in body
    assert "st.global.v4.b32" not in plain.ptx and "ld.acquire.gpu" not in plain.ptx
    # shares of 1/p of a tile: up to p slots added (unrolled, all but the first behind a run-time test)
    for partials in (STREAM_K_PARTIALS, 4):
        deep = report(config.with_(stream_k_remainder=True, stream_k_partials=partials), Problem("bf16"))
        assert deep.spill_bytes == 0 and not deep.wgmma_serialized
        assert len(re.findall(r"ld\.global\.v4\.b32", re.sub(r"//.*", "", deep.ptx))) == partials * vectors
    # aligned: one follow part per split tile, so one slot posted and one added, as with whole-tile shares
    aligned = report(config.with_(stream_k_aligned=True), Problem("bf16"))
    assert aligned.spill_bytes == 0 and not aligned.wgmma_serialized
    body = re.sub(r"//.*", "", aligned.ptx)
    assert len(re.findall(r"st\.global\.v4\.b32", body)) == len(re.findall(r"ld\.global\.v4\.b32", body)) == vectors
    with pytest.raises(ValueError, match="stream_k"):
        tuned_config(128, 128, 2, 1, Schedule.PINGPONG, stream_k=True)
    with pytest.raises(ValueError, match="stream_k_remainder = True is invalid"):
        tuned_config(stream_k_remainder=True)


@pytest.mark.parametrize("tile_n,parts", [(256, 2), (256, 4), (256, 8), (80, 7)])
def test_split_k_posts_the_other_shares_and_adds_only_its_own(tile_n, parts):
    """GemmConfig.split_k: each part posts the other parts' shares of its accumulators (16-byte stores, one static
    branch per share, so each store appears once) and raises the tile's flag with one release; every part polls it
    with an acquire (bounded: a trap); the static branch of part j reads the other parts' values of its own 1/s of
    the subtiles only, (s − 1)/s of a tile per part; one relaxed add says "seen", part 0 polls for that and resets.
    Nothing spills. 128×80 in 7 parts: subtiles narrowed to 8 columns, ten of them in shares of one or two."""
    config = tuned_config(128, tile_n, 2, 1, Schedule.COOPERATIVE).with_split_k(parts)
    assert config.split_k == parts and config.subtiles >= parts
    split = report(config, Problem("bf16"))
    assert split.spill_bytes == 0 and not split.wgmma_serialized
    body = re.sub(r"//.*", "", split.ptx)
    vectors = config.acc_registers // 4
    assert len(re.findall(r"st\.global\.v4\.b32", body)) == vectors
    # s branches of (s − 1) other parts × vectors / s values each
    assert len(re.findall(r"ld\.global\.v4\.b32", body)) == (parts - 1) * vectors
    assert re.findall(r"atom\.[a-z.0-9]*", body) == ["atom.global.release.add.u32", "atom.global.add.u32"]
    assert body.count("ld.acquire.gpu") == 4 and body.count("trap;") == 2  # two polls: posted, seen
    if parts == 2:  # each CTA owns one part: the staging buffers may borrow the ring, a seventh stage
        ring = config.with_(tile_n=128, staging_in_ring=True)
        ringed = report(ring, Problem("bf16"))
        assert ringed.spill_bytes == 0 and ring.stages(Problem("bf16"))[0] == 7
    with pytest.raises(ValueError, match=r"split_k = 8 is invalid: allowed at most the tile's 4 subtiles"):
        tuned_config(128, 128, 2, 1, Schedule.COOPERATIVE, split_k=8)
    with pytest.raises(ValueError, match=r"split_k = 2 is invalid: allowed 1 with ping-pong"):
        tuned_config(128, 128, 2, 1, Schedule.PINGPONG, split_k=2)
    for clash in ({"stream_k": True}, {"deferred_chunks": 8}):
        name = next(iter(clash))
        with pytest.raises(ValueError, match=rf"split_k = 2 is invalid: allowed 1 with {name}"):
            tuned_config(split_k=2, **clash)
    with pytest.raises(ValueError, match=r"split_k = 4 is invalid: .* 8 subtiles / epi_batch = 4, 2 "):
        tuned_config(split_k=4, epi_batch=4)
    for bad in (0, 9, 2.0, True):
        with pytest.raises(ValueError, match=rf"split_k = {bad!r} is invalid: allowed an int in \[1, 8\]"):
            tuned_config(split_k=bad)


@pytest.mark.slow
def test_split_k_on_warpgroups_along_n_shares_each_half():
    """Split-K on a 192×176 tile whose warpgroups split N (cuBLAS's plan at 2072×688×11832: 11 × 4 tiles in 3
    parts): every math thread posts the other parts' shares of its own half's accumulators, one 16-byte
    store per four values, and raises the flag once per CTA (one thread of the 256, not one per
    warpgroup); each half stores its share of 33 subtiles; with a bias nothing spills either."""
    config = tuned_config(192, 176, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(3)
    split = report(config, Problem("bf16", bias=True))
    assert split.spill_bytes == 0 and not split.wgmma_serialized
    body = re.sub(r"//.*", "", split.ptx)
    vectors = config.acc_registers // 4  # a warpgroup's half: 192 × 88 / 128 values per thread
    assert len(re.findall(r"st\.global\.v4\.b32", body)) == vectors
    assert len(re.findall(r"ld\.global\.v4\.b32", body)) == 2 * vectors
    assert re.findall(r"atom\.[a-z.0-9]*", body) == ["atom.global.release.add.u32", "atom.global.add.u32"]
    assert body.count("ld.acquire.gpu") == 4 and body.count("trap;") == 2
    column = report(config, Problem("bf16", c_major="m"))  # the swapped launch's Cᵀ, column by column
    assert column.spill_bytes == 0 and set(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", column.ptx)) == {
        ".trans"
    }


@pytest.mark.parametrize(
    ("config", "chunks"),
    [(tuned_config(256, 128, 1, 2, Schedule.COOPERATIVE), 2), (COOP, 4)],
    ids=["cooperative256x128-2", "cooperative128x256-4"],
)
@pytest.mark.parametrize("bias", [False, True])
def test_the_deferred_epilogue_stores_per_warp_under_the_next_tile(config, chunks, bias):
    """``deferred_chunks``: no named barrier in the epilogue (each warp syncs itself, ``bar.warp.sync``),
    every warp TMA-stores its own 16-row pieces, and ptxas keeps the wgmmas asynchronous with the held
    outputs in registers and nothing spilled. Stores in the PTX: chunk 0 after the first k-tile's issue,
    chunks 1.. inside the k-loop and again after it (a K of fewer k-tiles), then the last tile's flush."""
    deferred = report(config.with_(deferred_chunks=chunks), Problem("bf16", bias=bias))
    staged = report(config, Problem("bf16", bias=bias))
    assert len(re.findall(r"\bbar\.sync\b", staged.ptx)) == 2 * config.subtiles
    assert len(re.findall(r"\bbar\.sync\b", deferred.ptx)) == 0
    assert re.search(r"\bbar\.warp\.sync\b", deferred.ptx)
    store = "cp.async.bulk.tensor.2d.global.shared"
    per_chunk = config.subtiles // chunks
    assert deferred.ptx.count(store) == per_chunk * (1 + 2 * (chunks - 1)) + config.subtiles
    assert deferred.spill_bytes == 0 and not deferred.wgmma_serialized
    assert deferred.registers <= staged.registers


def test_ring_staging_compiles_to_a_seventh_stage_without_staging_memory_of_its_own():
    """``staging_in_ring``: 7 A/B stages of 32 KiB for ping-pong 128×128 where the staged build has 6 and
    two 4 KiB staging buffers; the shared memory left beside the ring is less than one staging buffer (the
    buffers alias the A ring); the epilogue's stores are the staged build's, and nothing spills."""
    from hopper_gemm.config import SMEM_CAPACITY

    problem = Problem("bf16")
    plain, ring = report(PINGPONG, problem), report(PINGPONG.with_(staging_in_ring=True), problem)
    stage, buffer = PINGPONG.stage_bytes(problem), PINGPONG.staging_bytes(problem)
    assert (plain.ab_stages, ring.ab_stages) == (6, 7)
    assert plain.smem_bytes - 6 * stage >= 2 * buffer
    assert 0 <= ring.smem_bytes - 7 * stage < buffer and ring.smem_bytes <= SMEM_CAPACITY
    stores = r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"
    assert len(re.findall(stores, ring.ptx)) == len(re.findall(stores, plain.ptx)) > 0
    assert ring.spill_bytes == 0 and not ring.wgmma_serialized


@pytest.mark.parametrize("ab_stages", [None, 5])
def test_the_mainloop_pipeline_cycles_through_every_stage_the_ring_holds(ab_stages):
    """The mainloop pipeline's stage count is the A/B ring's: with the staging in the ring the budget's 7
    stages (not the 6 its own staging would leave), and a stage count asked for as it is, even where the
    staging buffers of their own would not leave room for it (128×168 with 56-column subtiles)."""
    from gemm_modes.launch import hooks_for
    from hopper_gemm.kernel import GemmKernel

    problem = Problem("bf16")
    ring = PINGPONG.with_(staging_in_ring=True, ab_stages=ab_stages)
    wide = tuned_config(128, 168, 2, 1, Schedule.COOPERATIVE, epi_n=56, ab_stages=5, staging_in_ring=True)
    for config, stages in ((ring, ab_stages or 7), (wide, 5)):
        kernel = GemmKernel(config.config, problem, modes=hooks_for(config))
        assert kernel.decl.mainloop.stages == kernel.ab_stages == stages
    with pytest.raises(ValueError, match=r"ab_stages = 5 is invalid: .* 57344 B of staging\) // 37888 B per stage = 4"):
        wide.with_(staging_in_ring=False).stages(problem)


#: Every global-memory access a kernel can make: TMA loads and stores, plain loads and stores, atomics.
GLOBAL_ACCESS = re.compile(r"cp\.async\.bulk\.tensor|cp\.reduce\.async\.bulk|\b(ld|st|red|atom)\.(\w+\.)*global")


@pytest.mark.parametrize(
    "config",
    [PINGPONG, COOP.with_(deferred_chunks=8), COOP.with_(stream_k=True, stream_k_remainder=True)],
    ids=["pingpong", "deferred", "stream-k"],
)
def test_pdl_waits_for_the_previous_grid_before_any_global_access(config):
    """``GemmConfig(pdl=True)``: on every path from the kernel's entry to a global-memory access (TMA,
    ld/st, atomics, the stream-K flags) the thread has executed ``griddepcontrol.wait``; the grid lets
    its dependents launch once; without ``pdl`` neither instruction is there."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ptx_check import kernel_body, path_states

    problem = Problem("bf16", bias=True)
    ptx = report(config.with_(pdl=True), problem).ptx
    body = kernel_body(ptx)

    def transfer(ins, waited):
        return waited or "griddepcontrol.wait" in ins

    accesses = [(ins, states) for ins, states in path_states(body, transfer, False) if GLOBAL_ACCESS.search(ins)]
    assert accesses, "no global access found: the pattern is stale"
    early = [ins for ins, states in accesses if False in states]
    assert not early, f"{len(early)} global accesses reachable before griddepcontrol.wait, e.g. {early[0]}"
    assert sum("griddepcontrol.launch_dependents" in ins for ins in body) == 1
    plain = report(config, problem).ptx
    assert "griddepcontrol" not in plain


def test_the_deferred_epilogue_s_pieces_are_the_staging_buffers_row_for_row():
    """A warp's TMA store reads its 16 rows of staging buffer ``s`` as piece ``8 s + warp`` of the
    (16, epi_n) layout: both layouts must map every element to the same shared-memory offset."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.tensor_utils import LayoutEnum
    from gemm_modes.deferred_store import WARP_ROWS

    found = []

    def compare(rows, cols, buffers):
        staged = sm90_utils.make_smem_layout_epi(cutlass.BFloat16, LayoutEnum.ROW_MAJOR, (rows, cols), buffers)
        pieces = rows // WARP_ROWS
        per_warp = sm90_utils.make_smem_layout_epi(
            cutlass.BFloat16, LayoutEnum.ROW_MAJOR, (WARP_ROWS, cols), buffers * pieces
        )
        for r in range(rows):  # a plain helper: Python loops, traced inside ``both``
            for c in range(0, cols, 7):
                for s in range(buffers):
                    piece = s * pieces + r // WARP_ROWS
                    found.append((staged((r, c, s)), per_warp((r % WARP_ROWS, c, piece))))

    @cute.jit
    def both():
        compare(128, 16, 2)
        compare(128, 32, 2)
        compare(128, 64, 2)

    both()
    assert len(found) > 1000 and all(isinstance(x, int) for pair in found for x in pair)
    assert all(a == b for a, b in found), [f for f in found if f[0] != f[1]][:4]


def test_the_bias_loads_issue_under_the_last_k_tile():
    """``ColumnBias.load_fragment``: the thread's bias reads (one 32-bit word per pair of adjacent
    columns, 32 of a 128×256 tile) are issued after the tile's last wgmmas and before the wait for them,
    so their latency hides under that k-tile instead of between tiles."""
    config = COOP.with_(deferred_chunks=8)
    sass = report(config, Problem("bf16", bias=True)).sass()
    wait_all = sass.index("DEPBAR.LE gsb0, 0x0")  # the first: the end of the tile loop's k-loop
    since_last_mma = sass[sass.rindex("HGMMA", 0, wait_all) : wait_all]
    loads = re.findall(r"\bLDG\.E(\.\w+)?\b", since_last_mma)
    assert len(loads) == config.tile_n // 8, f"{len(loads)} loads, want one word per column pair"
    assert set(loads) == {""}, f"bias loads narrower than a word: {set(loads)}"  # LDG.E: 32 bits
    plain = report(config, Problem("bf16")).sass()
    wait_all = plain.index("DEPBAR.LE gsb0, 0x0")
    assert "LDG" not in plain[plain.rindex("HGMMA", 0, wait_all) : wait_all]


def test_warpgroups_along_n_each_issue_every_row_of_their_half():
    """Cooperative 192×192 with ``wg_split="n"``: each warpgroup issues the wgmmas of a ping-pong 192×96
    (three m64n96 per k-block) on its half of B; each acquire of the staging ring takes a buffer per
    warpgroup (``wait_group.read`` of stages − 2), nothing spills and the wgmmas stay pipelined. The
    kernel says how many CTAs an SM holds (``.minnctapersm 1``): without it ptxas may pick an entry
    register count that ``setmaxnreg`` cannot follow, ignore it (C7508) and spill (ping-pong 192×96)."""
    halves = report(tuned_config(192, 192, 2, 1, Schedule.COOPERATIVE, wg_split="n"), Problem("bf16"))
    alone = report(tuned_config(192, 96, 2, 1, Schedule.PINGPONG), Problem("bf16"))
    for r in (halves, alone):
        assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", r.ptx)) == {"96"}
        assert r.spill_bytes == 0 and not r.wgmma_serialized and r.registers <= 232
        assert ".minnctapersm 1" in r.ptx
    count = [len(re.findall(r"wgmma\.mma_async", r.ptx)) for r in (halves, alone)]
    assert count[0] == count[1] == 3 * 4 * 2  # m64 blocks × k-blocks × (first k-tile, the loop)
    assert re.search(rf"cp\.async\.bulk\.wait_group\.read\s+{halves.epi_stages - 2};", halves.ptx)


@pytest.mark.parametrize(
    "config",
    [
        tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n"),
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE),
        tuned_config(128, 128, 1, 2, Schedule.PINGPONG),
        # the swapped small-M tiles: M in column tiles of 8-row steps (M = 160, 240, 552, 200, 136)
        tuned_config(128, 80, 1, 2, Schedule.PINGPONG),
        tuned_config(64, 120, 1, 2, Schedule.PINGPONG),
        tuned_config(128, 184, 2, 1, Schedule.PINGPONG),
        tuned_config(128, 200, 2, 1, Schedule.COOPERATIVE),
        tuned_config(192, 144, 2, 1, Schedule.COOPERATIVE, wg_split="n"),
    ],
    ids=lambda c: c.describe(),
)
def test_a_column_major_c_is_staged_transposed(config):
    """``Problem(c_major="m")`` (a swapped launch's Cᵀ): the registers reach the staging buffer through
    transposed ``stmatrix`` only (M contiguous in shared memory, as the column-major TMA store reads it),
    with the same wgmmas as the row-major kernel, no spill and pipelined wgmmas."""
    column = report(config, Problem("bf16", scaled=True, c_major="m"))
    row = report(config, Problem("bf16", scaled=True))
    assert set(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", column.ptx)) == {".trans"}
    assert set(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", row.ptx)) == {""}
    wgmmas = [re.findall(r"wgmma\.mma_async\.\S+", r.ptx) for r in (column, row)]
    assert wgmmas[0] == wgmmas[1]
    assert column.spill_bytes == 0 and not column.wgmma_serialized


@pytest.mark.parametrize("width", [96, 104, 112, 160, 176])
def test_swapped_256_row_tiles_hold_four_stages_without_spills(width):
    """The wave balance's swapped 256×W tiles (``SWAPPED_ALONG_N_MERIT``) compile to four A/B stages (160 and
    176 through the 16- and 8-column subtiles of ``GemmConfig.epi_n_default``: their default widths, 32 and
    16, leave room for three), stage C transposed (column-major, as the swapped launch stores it), and
    neither spill nor serialize their wgmmas."""
    from gemm_modes.autotable import SWAPPED_ALONG_N_MERIT
    from hopper_gemm.config import SMEM_CAPACITY, default_epi_n

    config = {tile.tile_n: tile for tile, _ in SWAPPED_ALONG_N_MERIT}[width]
    problem = Problem("bf16", c_major="m")
    r = report(config, problem)
    assert (r.ab_stages, r.smem_bytes <= SMEM_CAPACITY) == (4, True)
    assert set(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", r.ptx)) == {".trans"}
    assert r.spill_bytes == 0 and not r.wgmma_serialized
    widest = config.reshaped(epi_n=default_epi_n(width))
    assert widest.config.stages(problem)[0] == (3 if width in (160, 176) else 4)


@pytest.mark.parametrize("tile_n,parts", [(80, 7), (128, 4)])
def test_split_k_stores_a_column_major_c_transposed(tile_n, parts):
    """Split-K on a swapped launch (C column-major, ``swap_ab`` with ``split_k``): the parts post and read
    the same 16-byte partials as on a row-major C (register order: the layout of C does not reach them), and
    their shares reach the staging buffer through transposed ``stmatrix`` only; nothing spills."""
    config = tuned_config(128, tile_n, 2, 1, Schedule.COOPERATIVE).with_split_k(parts)
    column = report(config, Problem("bf16", c_major="m"))
    row = report(config, Problem("bf16"))
    assert set(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", column.ptx)) == {".trans"}
    for op in (r"st\.global\.v4\.b32", r"ld\.global\.v4\.b32", r"ld\.acquire\.gpu", r"wgmma\.mma_async\.\S+"):
        assert re.findall(op, re.sub(r"//.*", "", column.ptx)) == re.findall(op, re.sub(r"//.*", "", row.ptx))
    assert column.spill_bytes == 0 and not column.wgmma_serialized
    assert config.with_(swap_ab=True).split_k == parts


def test_a_column_major_c_is_refused_where_it_cannot_run():
    """A bias adds along N (the rows of a swapped launch's Cᵀ), and the modes address C's rows as
    contiguous: both refused by name, before anything compiles."""
    with pytest.raises(ValueError, match=r"Problem.c_major = 'm' is invalid: allowed 'n' with a bias"):
        Problem("bf16", bias=True, c_major="m")
    with pytest.raises(ValueError, match=r"Problem.c_major = 'x' is invalid"):
        Problem("bf16", c_major="x")
    with pytest.raises(ValueError, match=r"c_major = 'm' runs on the plain kernel or with split-K alone: no comm"):
        report(COOP.with_(stream_k=True), Problem("bf16", c_major="m"))
    with pytest.raises(ValueError, match=r"c_major = 'm' runs on the plain kernel or with split-K alone"):
        report(COOP.with_(split_k=2, deferred_chunks=0, staging_in_ring=True), Problem("bf16", c_major="m"))
    with pytest.raises(ValueError, match=r"swap_ab = True is invalid: allowed False with stream-K .*split-K alone"):
        COOP.with_(stream_k=True, swap_ab=True)


def _short_side_extremes():
    """Per family of short-side tiles (rows, schedule, warpgroups), its narrowest tile, one between on an
    8-row step computing Cᵀ (C column-major), and its widest, the most accumulators, both ways: the tiles
    ``gemm_modes.short_side`` can hand the table."""
    from gemm_modes.short_side import PAIRED_ROWS, ROWS, SHORT_SIDE_MAX, short_side_tiles

    families = {}
    for extent in range(57, SHORT_SIDE_MAX + 1):
        for config in short_side_tiles(extent, swap_ab=False, rows_of=(*ROWS, PAIRED_ROWS)):
            families.setdefault((config.tile_m, config.schedule, config.wg_split), set()).add(config)
    picked = set()
    for tiles in families.values():
        by_width = sorted(tiles, key=lambda c: (c.tile_n, c.cluster_m))
        odd = [c for c in by_width if c.tile_n % 16 == 8] or by_width
        widest = by_width[-1]
        picked |= {by_width[0], odd[len(odd) // 2].with_(swap_ab=True), widest, widest.with_(swap_ab=True)}
    return sorted(picked, key=lambda c: c.describe())  # one order in every xdist worker


@pytest.mark.parametrize("config", _short_side_extremes(), ids=lambda c: c.describe())
def test_short_side_tiles_compile_without_spills(config):
    """Every family of short-side tiles, at its extreme widths and on an 8-row step, compiles for sm_90a to
    one wgmma N extent (its width, or half where the warpgroups split it), without spilling and with its
    wgmmas pipelined (a swapped tile with C column-major, as it launches). All 288 tiles the rules can pick,
    swapped and not, did on 2026-11-28; these stand for them."""
    problem = Problem("bf16", scaled=True, c_major="m" if config.swap_ab else "n")
    r = report(config, problem)
    assert r.spill_bytes == 0 and not r.wgmma_serialized, config.describe()
    width = config.tile_n // 2 if config.wg_split == "n" else config.tile_n
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", r.ptx)) == {str(width)}
