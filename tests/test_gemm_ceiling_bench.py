"""benchmarks/studies/gemm_ceiling.py: its two load-warp variants compile for sm_90a as described (CPU), compute
what their k-tiles imply (GPU), and an unknown variant is refused by name (its command line:
tests/test_benchmark_cli.py)."""

from __future__ import annotations

import re

import pytest

STAGE_BYTES = (128 + 256) * 64 * 2  # one A and one B k-tile of the cooperative 128×256×64 tile, bf16


def _config():
    from gemm_modes.autotable import COOPERATIVE_DEFERRED

    return COOPERATIVE_DEFERRED.with_(pdl=True)


@pytest.fixture(scope="module")
def reports():
    import gemm_ceiling
    from gemm_modes.launch import compile_report
    from hopper_gemm.config import Problem

    found = {"real": compile_report(_config(), Problem("bf16"))}
    for variant in gemm_ceiling.VARIANTS:
        with gemm_ceiling.installed(variant):
            found[variant] = compile_report(_config(), Problem("bf16"))
    return found


def test_no_loads_arms_the_stage_bytes_only_for_the_first_ring_fill(reports):
    from gemm_ceiling import NO_LOADS

    real, variant = reports["real"].ptx, reports[NO_LOADS].ptx
    assert re.search(rf"selp\.b32\s+%r\d+, {STAGE_BYTES}, 0, %p\d+;", variant), "the armed bytes are not selected"
    assert not re.search(rf"selp\.b32\s+%r\d+, {STAGE_BYTES}, 0,", real)
    assert "mbarrier.arrive.expect_tx" in variant
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast" in variant


@pytest.mark.parametrize("variant", ["no loads", "L2-resident"])
def test_a_variant_keeps_the_kernel_s_wgmmas_and_spills_nothing(reports, variant):
    report, real = reports[variant], reports["real"]
    assert report.spill_bytes == 0
    assert report.ptx.count("wgmma.mma_async") == real.ptx.count("wgmma.mma_async") > 0
    assert report.ptx != real.ptx  # the patch reached the kernel (a stale trace would compile the real one)


def test_an_unknown_variant_is_refused_by_name():
    import gemm_ceiling

    with pytest.raises(ValueError, match=r"variant 'hot' is invalid: allowed \('L2-resident', 'no loads'\)"):
        gemm_ceiling.variant_load_k_tiles("hot")


def _gpu_case(variant):
    """(out, a, w) of ``variant``'s kernel at 1024×1024×1024 (16 k-tiles, one unsplit tile per cluster)."""
    torch = pytest.importorskip("torch")
    import gemm_ceiling
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch.full((1024, 1024), float("nan"), device="cuda", dtype=torch.bfloat16)
    ops = validate(a, w, out=out)
    launcher(_config(), ops, out, kernel=gemm_ceiling.compile_variant(_config(), ops.problem, variant))()
    torch.cuda.synchronize()
    return out, a.float(), w.float()


def _close(got, want):
    err = (got.float() - want).abs().max().item() / want.abs().max().item()
    assert err < 1.6e-2, f"relative error {err:.3g}"


@pytest.mark.gpu
def test_l2_resident_sums_each_tile_s_first_k_tile_sixteen_times():
    out, a, w = _gpu_case("L2-resident")
    _close(out, 16 * (a[:, :64] @ w[:, :64].t()))


@pytest.mark.gpu
def test_no_loads_re_reads_the_first_ring_fill():
    # Each cluster has one tile here: its k-tiles 0-3 fill the four-stage ring, k-tile k re-reads slot k mod 4.
    out, a, w = _gpu_case("no loads")
    _close(out, 4 * (a[:, :256] @ w[:, :256].t()))
