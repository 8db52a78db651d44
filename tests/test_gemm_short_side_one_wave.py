"""``gemm_modes.short_side_one_wave``: auto runs a short side against a long one in whole 192-row tiles, as wide
along the long side as one wave needs (a short N as Cᵀ = B·Aᵀ), and leaves the shapes it must not touch (the
arithmetic on the CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import short_side, short_side_one_wave, tall_one_wave  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,width,cluster",
    [
        ((13624, 384, 9432), 208, (2, 1)),  # cuBLAS's plan: 2 × 66 tiles of Cᵀ; 192×128 took 213
        ((9688, 576, 7264), 224, (1, 2)),  # three row tiles: the columns pair (44)
        ((8848, 528, 10456), 208, (1, 1)),  # three row tiles, 43 columns: no pair
        ((15456, 376, 4632), 240, (2, 1)),
        ((21544, 176, 5920), 176, (1, 1)),  # one row tile of 192 over N = 176 (0.92 of it)
        ((538, 9032, 13576), 208, (1, 2)),  # a short M, on C
        ((190, 22440, 4544), 176, (1, 2)),
        ((377, 11784, 10776), 192, (2, 1)),
    ],
)
def test_auto_takes_the_short_side_in_one_wave_of_192_row_tiles(mnk, width, cluster, monkeypatch):
    m, n, _ = mnk
    monkeypatch.setattr(tall_one_wave, "replaces", lambda *_: None)  # the step before takes most with this tile
    monkeypatch.setattr(short_side, "RESTREAMING_ROW_TILES", 10**6)  # the small-M rule swaps 190×22440 first
    decision = decide(BF16, mnk)
    turned = decision.config
    assert (turned.tile_m, turned.tile_n, (turned.cluster_m, turned.cluster_n)) == (192, width, cluster)
    assert turned.swap_ab == (m > n) and turned.wg_split == "n" and turned.schedule is Schedule.COOPERATIVE
    short, long = min(m, n), max(m, n)
    rows, columns = -(-short // 192), -(-long // width)
    assert short_side_one_wave.BUSY_SHARE * SMS <= rows * columns <= SMS  # one wave, nearly full
    assert rows * -(-long // (width - 16)) > SMS  # the narrowest width that fits it
    assert short >= short_side_one_wave.ROW_FILL * rows * 192
    assert decision.rule.endswith("its short side in one wave of 192-row tiles")


def test_the_explain_line_counts_the_row_tiles_and_the_pick_s_tiles(monkeypatch):
    monkeypatch.setattr(tall_one_wave, "replaces", lambda *_: None)
    monkeypatch.setattr(short_side, "RESTREAMING_ROW_TILES", 10**6)
    assert (
        "N = 384 in 2 row tiles of 192 on Cᵀ = B·Aᵀ: 2 × 66 tiles of 192×208 on 132 SMs, one wave, where "
        "192×128 takes 213 tiles"
    ) in decide(BF16, (13624, 384, 9432)).facts
    assert (
        "M = 190 in 1 row tile of 192: 1 × 128 tiles of 192×176 on 132 SMs, one wave, where 64×128 takes 528 tiles"
    ) in decide(BF16, (190, 22440, 4544)).facts


PICK = tuned_config(192, 128, 2, 1, Schedule.COOPERATIVE, wg_split="n")


@pytest.mark.parametrize(
    "config,mnk,swappable,why",
    [
        (PICK, (13624, 384, 9432), False, "a bias, or B as (K, N): no swapped launch"),
        (PICK, (13624, 384, 4096), True, "K = 4096: not past MIN_K"),
        (PICK, (1400, 384, 9432), True, "M under 4 × N"),
        (PICK, (13624, 320, 9432), True, "N = 320 fills 0.83 of two row tiles"),
        (PICK, (13624, 768, 9432), True, "four row tiles"),
        (PICK, (16000, 352, 7504), True, "it would take 192×256 (5 of 7 such shapes ran slower)"),
        (PICK, (6000, 384, 9432), True, "one wave needs only 96 columns: under 128"),
        (tuned_config(192, 192, 2, 1, Schedule.COOPERATIVE, wg_split="n"), (11520, 384, 9432), True, "a full wave"),
        (PICK, (379, 14976, 7072), True, "a short M would take 192×240 (3 of 5 such shapes ran slower)"),
        (
            tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n", swap_ab=True),
            (173, 22584, 7592),
            True,
            "a short M whose pick is Cᵀ's 192-row tile already (4 of 4 no faster)",
        ),
    ],
)
def test_left_alone(config, mnk, swappable, why):
    assert short_side_one_wave.replaces(config, mnk, SMS, swappable) is None, why


def test_a_bias_keeps_auto_s_pick():
    assert not decide(Problem("bf16", bias=True), (13624, 384, 9432)).config.swap_ab
    assert "192-row tiles" not in decide(Problem("bf16", bias=True), (538, 9032, 13576)).rule


def test_comm_roles_and_the_narrower_table_keep_their_pick():
    """``swap=False`` (the comm roles' and gated kernels' picks) and ``widths=False`` (the table without the
    widths between the powers of two) never take the step."""
    for kwargs in ({"swap": False}, {"widths": False}):
        assert "192-row tiles" not in decide(BF16, (13624, 384, 9432), **kwargs).rule, kwargs


def test_the_tall_tiles_step_before_it_mostly_takes_the_same_tile():
    """Where both steps apply, the tall tiles' (least area, on C or Cᵀ) is usually this one: 13624×384×9432."""
    assert decide(BF16, (13624, 384, 9432)).config.tile_n == 208
