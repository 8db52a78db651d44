"""``schedule="auto"`` explains itself: one line per pick naming the table's row and the facts it went by
(``persistent_gemm.py --explain``), and ``benchmarks/gemm.py --sweep``'s shapes cover the families the
choice must hold on (CPU: the decisions and the compiled kernels; the ratios need an H100)."""

from __future__ import annotations

import pytest
from gemm_modes.autotable import decide, pick
from hopper_gemm.config import Problem

BF16 = Problem("bf16")


@pytest.mark.parametrize(
    ("mnk", "rule", "facts"),
    [
        ((1024, 1024, 8192), "split-K", "K = 8192 ≥ 4 × max(M, N) = 4096 on a small output"),
        ((128, 8192, 8192), "small M", "M = 128 ≤ 512"),
        ((8192, 256, 2048), "small N", "N = 256 ≤ 512"),
        ((2088, 72, 10784), "split-K for a narrow N over a long K", "9 cluster-tiles × 7 parts of 24+ k-tiles"),
        ((1024, 2048, 8192), "fill the SMs", "32 cluster-tiles of 128×256 on 66 clusters (0.48 waves)"),
        ((8192, 8192, 8192), "stream-K", "the last wave (34 of 66 clusters) is split by k"),
        ((4096, 4096, 4096), "wave balance", "256 cluster-tiles of 128×256 on 66 clusters (3.88 waves)"),
        ((3072, 1024, 8192), "wave balance", "the last wave's aligned split"),
        ((4104, 4104, 4104), "wave balance", "computed as Cᵀ = B·Aᵀ, 192×176 tiles along (N, M)"),
    ],
)
def test_each_row_of_the_table_says_why_it_picked(mnk, rule, facts):
    decision = decide(BF16, mnk)
    assert decision.config == pick(BF16, mnk)  # the explanation is of the pick itself
    assert decision.rule == rule and facts in decision.facts
    assert decision.line().startswith(f"auto: {decision.config.describe()} — {rule}: ")


@pytest.mark.slow
def test_the_cli_explains_in_one_line_without_a_gpu(capsys, torch_without_gpu):
    import persistent_gemm

    assert persistent_gemm.main(["--m", "8192", "--n", "8192", "--k", "8192", "--explain"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("auto: ")]
    assert len(lines) == 1 and "stream-K: " in lines[0] and lines[0].endswith("(on an H100's 132 SMs)")
    assert (
        persistent_gemm.main(["--m", "4096", "--n", "4096", "--k", "4096", "--schedule", "pingpong", "--explain"]) == 0
    )
    assert "as asked: pingpong tile 128×128×64" in capsys.readouterr().out


def test_the_sweep_covers_every_family_the_choice_is_held_to():
    import gemm

    shapes = gemm.SWEEP
    assert len(shapes) >= 30 and len(set(shapes)) == len(shapes)
    squares = {m for m, n, k, _, _ in shapes if m == n == k}
    assert {1000, 3000, 4104, 6000, 8000} <= squares and min(squares) <= 1024 and max(squares) >= 8192
    assert {dtype for *_, dtype, _ in shapes} == {"bf16", "fp16"}
    ks = {k for _, _, k, _, _ in shapes}
    assert min(ks) <= 512 and max(ks) >= 16384
    for hidden, inter in ((4096, 14336), (5120, 13824), (8192, 28672), (7168, 18432)):
        up = {m for m, n, k, _, _ in shapes if (n, k) == (inter, hidden)}
        down = {m for m, n, k, _, _ in shapes if (n, k) == (hidden, inter)}
        assert up and up == down, (hidden, inter)  # both directions, the same token counts
    assert min(m for m, *_ in shapes) <= 128 and max(m for m, *_ in shapes) >= 16384


def test_the_held_out_shapes_are_other_shapes_of_the_same_families():
    """``--held-out``: shapes the sweep does not hold, of its families (squares with non-multiples of 128,
    projections of the sweep's models at other token counts, K from 1024 to 12288)."""
    import gemm

    held = {s[:3] for s in gemm.HELD_OUT}
    assert len(held) == len(gemm.HELD_OUT) >= 20 and not held & {s[:3] for s in gemm.SWEEP}
    assert {5000, 7000} <= {m for m, n, k in held if m == n == k}
    pairs = {(4096, 14336), (5120, 13824), (8192, 28672), (7168, 18432)}
    assert {(n, k) for m, n, k in held if (n, k) in pairs or (k, n) in pairs}
    assert min(k for *_, k in held) <= 1024 and max(k for *_, k in held) >= 12288


def test_sweep_shapes_are_checked_before_torch(capsys, monkeypatch):
    import sys

    import gemm

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(SystemExit) as exit_info:
        gemm.main(["--sweep", "--shapes", "64x64"])
    assert exit_info.value.code == 2 and "each entry needs three extents" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        gemm.main(["--sweep", "--configs", "coop128x256c21d8,nosuch"])
    assert exit_info.value.code == 2
    assert "--configs: nosuch neither in CANDIDATES nor of the form" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        gemm.main(["--configs", "swappp128xm2c12"])
    assert exit_info.value.code == 2 and "a width that follows M or N needs --sweep" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        gemm.main(["--configs", "pp128x200c21"])
    assert exit_info.value.code == 2 and "200 fp32 accumulators" in capsys.readouterr().err


def test_configs_named_by_their_parts():
    """``--configs`` takes ``[swap][pp|coop]ROWSxWIDTHcMN[n][kS][eE]`` beside CANDIDATES' names, WIDTH ``mC`` for M in C
    column tiles (⌈M / C⌉ rounded up to 8): the same configuration a CANDIDATES entry of that name holds."""
    import gemm
    from gemm_modes.modes import tuned_config

    assert gemm.named_config("swappp128xm2c12", 160) == tuned_config(128, 80, 1, 2, "pingpong", swap_ab=True)
    assert gemm.named_config("swap128xm3c21", 552) == tuned_config(128, 184, 2, 1, "cooperative", swap_ab=True)
    assert gemm.named_config("swappp128xm3c21", 200) == tuned_config(128, 72, 2, 1, "pingpong", swap_ab=True)
    for name in ("pp64x256c21", "swap192x176c21n", "coop192x192c21n", "pp128x168c21", "swappp128x160c21"):
        assert gemm.named_config(name, 0) == gemm.CANDIDATES[name], name
    # split-K in 7 parts of 128×80: ten subtiles of 8 columns, so every part stores a share
    assert gemm.named_config("coop128x80c11k7", 0) == tuned_config(128, 80, 1, 1, "cooperative", split_k=7, epi_n=8)
    assert gemm.named_config("coop128x256c21sk2", 0) is None  # other modes are CANDIDATES' names only
    # 32-column subtiles: 256×160's staging leaves room for three A/B stages; the default (16) for four
    wide = gemm.named_config("swapcoop256x160c21e32", 0)
    assert wide == tuned_config(256, 160, 2, 1, "cooperative", swap_ab=True, epi_n=32)
    problem = Problem("bf16", c_major="m")
    assert wide.config.stages(problem)[0] == 3
    assert gemm.named_config("swapcoop256x160c21", 0).config.stages(problem)[0] == 4
    # an odd multiple of 8 that divides the width: plain rows (hopper_gemm.epilogue_store.staging_layout)
    assert gemm.named_config("pp128x88c12e88", 0) == tuned_config(128, 88, 1, 2, "pingpong", epi_n=88)
    with pytest.raises(ValueError, match=r"epi_n = 24 is invalid: .* dividing tile_n = 256"):
        gemm.named_config("coop128x256c21e24", 0)
    # the tile order: raster direction and band width
    assert gemm.named_config("pp128x144c21rng2", 0) == tuned_config(128, 144, 2, 1, "pingpong", raster="n", group=2)
    assert gemm.named_config("pp128x144c21g1", 0) == tuned_config(128, 144, 2, 1, "pingpong", group=1)


@pytest.mark.slow
@pytest.mark.xdist_group("auto-picks")  # beside test_gemm_compile's picks: the shared ones compile once
def test_every_sweep_pick_compiles_without_spills():
    import gemm
    from compiled_gemm import gemm_report

    picks = {
        (pick(Problem(dtype, bias=bias), (m, n, k)), Problem(dtype, bias=bias)) for m, n, k, dtype, bias in gemm.SWEEP
    }
    for config, problem in picks:
        report = gemm_report(config, problem)
        assert report.spill_bytes == 0 and not report.wgmma_serialized, config.describe()


def test_the_cli_reports_a_swapped_kernel_and_refuses_a_swap_it_cannot_run(capsys, torch_without_gpu):
    """Without a GPU, 4104³ compiles the kernel auto launches: the swapped one, C stored column by column;
    ``--swap-ab on`` with a bias is refused by name (exit 2)."""
    import persistent_gemm

    assert persistent_gemm.main(["--m", "4104", "--n", "4104", "--k", "4104"]) == 0
    out = capsys.readouterr().out
    assert "C column-major (a swapped launch: Cᵀ = B·Aᵀ)" in out and "spills        : 0 bytes" in out
    assert persistent_gemm.main(["--m", "4104", "--n", "4104", "--k", "4104", "--bias", "--swap-ab", "on"]) == 2
    assert "swap_ab = True is invalid with a bias" in capsys.readouterr().err
