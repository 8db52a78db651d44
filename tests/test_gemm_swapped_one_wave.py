"""``gemm_modes.swapped_one_wave``: auto runs a short N against a long M as Cᵀ = B·Aᵀ in whole 192-row tiles,
as wide along M as one wave needs, and leaves the shapes it must not touch (the arithmetic on the CPU; the
kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import swapped_one_wave  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,width,cluster",
    [
        ((13624, 384, 9432), 208, (2, 1)),  # cuBLAS's plan: 2 × 66 tiles; 192×128 took 213
        ((9688, 576, 7264), 224, (1, 2)),  # three row tiles: the columns pair (44)
        ((8848, 528, 10456), 208, (1, 1)),  # three row tiles, 43 columns: no pair
        ((15456, 376, 4632), 240, (2, 1)),
        ((21544, 176, 5920), 176, (1, 1)),  # one row tile of 192 over N = 176 (0.92 of it)
    ],
)
def test_auto_turns_a_short_n_into_one_wave_of_192_row_tiles(mnk, width, cluster):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    turned = decision.config
    assert (turned.tile_m, turned.tile_n, (turned.cluster_m, turned.cluster_n)) == (192, width, cluster)
    assert turned.swap_ab and turned.wg_split == "n" and turned.schedule is Schedule.COOPERATIVE
    rows, columns = -(-n // 192), -(-m // width)
    assert swapped_one_wave.BUSY_SHARE * SMS <= rows * columns <= SMS  # one wave, nearly full
    assert rows * -(-m // (width - 16)) > SMS  # the narrowest width that fits it
    assert n >= swapped_one_wave.ROW_FILL * rows * 192
    assert decision.rule.endswith("turned into one wave of Cᵀ's 192-row tiles")


def test_the_explain_line_counts_the_row_tiles_and_the_pick_s_tiles():
    assert (
        "N = 384 in 2 row tiles of 192 on Cᵀ = B·Aᵀ: 2 × 66 tiles of 192×208 on 132 SMs, one wave, where "
        "192×128 takes 213 tiles"
    ) in decide(BF16, (13624, 384, 9432)).facts


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
    ],
)
def test_left_alone(config, mnk, swappable, why):
    assert swapped_one_wave.replaces(config, mnk, SMS, swappable) is None, why


def test_a_bias_keeps_auto_s_pick():
    assert not decide(Problem("bf16", bias=True), (13624, 384, 9432)).config.swap_ab


def test_comm_roles_and_the_narrower_table_keep_their_pick():
    """``swap=False`` (the comm roles' and gated kernels' picks) and ``widths=False`` (the table without the
    widths between the powers of two) never take the step."""
    for kwargs in ({"swap": False}, {"widths": False}):
        assert "192-row tiles" not in decide(BF16, (13624, 384, 9432), **kwargs).rule, kwargs
