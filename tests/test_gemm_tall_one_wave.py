"""``gemm_modes.tall_one_wave``: auto runs a pick that is not one nearly full wave as one wave of the
cooperative 192- or 256-row tile of least area, on C or on Cᵀ, and leaves the shapes it must not touch (the
arithmetic on the CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import tall_one_wave  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,tile,cluster,swapped",
    [
        ((5176, 856, 4600), (256, 144), (1, 2), False),  # cuBLAS's plan: 21 × 6 tiles
        ((9824, 512, 6592), (256, 160), (2, 1), True),  # cuBLAS's plan, on Cᵀ: 2 × 62
        ((4584, 800, 14536), (192, 160), (2, 1), False),  # 24 × 5, against split-K's 1152 parts
        ((256, 18904, 12568), (256, 144), (1, 2), False),  # 1 × 132
    ],
)
def test_auto_takes_one_wave_of_the_least_tall_tile(mnk, tile, cluster, swapped):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    tall = decision.config
    assert ((tall.tile_m, tall.tile_n), (tall.cluster_m, tall.cluster_n), tall.swap_ab) == (tile, cluster, swapped)
    assert tall.schedule is Schedule.COOPERATIVE and tall.wg_split == ("n" if tile[0] == 192 else "m")
    rows, cols = (n, m) if swapped else (m, n)
    tiles = -(-rows // tile[0]) * -(-cols // tile[1])
    assert tall_one_wave.BUSY_SHARE * SMS <= tiles <= SMS  # one wave, nearly full
    assert rows >= tall_one_wave.SIDE_FILL * -(-rows // tile[0]) * tile[0]
    assert decision.rule.endswith("one wave of tall tiles")


def test_the_least_area_wins_and_no_more_than_the_pick_s_per_sm():
    """At 5176×856×4600 the ping-pong 128×144 pick takes two turns on 132 SMs (246 tiles): 36864 per SM and
    k-step, as much as one 256×144 tile; 192-row tiles fit no wave there (27 × 5 = 135, 27 × 4 = 108)."""
    pick = tuned_config(128, 144, 2, 1, Schedule.PINGPONG)
    assert tall_one_wave.replaces(pick, (5176, 856, 4600), SMS, True).tile_m == 256
    narrower = tuned_config(128, 128, 2, 1, Schedule.PINGPONG)  # 41 × 7 = 287 tiles: three turns of 16384
    assert tall_one_wave.replaces(narrower, (5176, 856, 4600), SMS, True) is not None
    smaller = tuned_config(128, 64, 2, 1, Schedule.PINGPONG)  # 41 × 14 = 574: five turns of 8192 = 40960
    assert tall_one_wave.replaces(smaller, (5176, 856, 4600), SMS, True) is not None
    tiny = tuned_config(64, 64, 2, 1, Schedule.PINGPONG)  # 81 × 14 = 1134: nine turns of 4096 = 36864
    assert tall_one_wave.replaces(tiny, (5176, 856, 4600), SMS, True) is not None
    short = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)  # 41 × 4 = 164: two turns of 32768
    assert tall_one_wave.replaces(short, (5176, 856, 4600), SMS, True) is not None
    light = tuned_config(128, 144, 2, 1, Schedule.PINGPONG)
    assert tall_one_wave.replaces(light, (2600, 856, 4600), SMS, True) is None  # one wave of 126 already


def test_the_explain_line_weighs_the_pick_s_turns():
    assert (
        "one wave of 256×144 tiles: 21 × 6 on 132 SMs, per SM 36864 multiply-adds per k against 36864 for 246 "
        "tiles of 128×144"
    ) in decide(BF16, (5176, 856, 4600)).facts


@pytest.mark.parametrize(
    "config,mnk,swappable,why",
    [
        (tuned_config(128, 144, 2, 1, Schedule.PINGPONG), (5176, 856, 4600), False, "a bias, or B as (K, N)"),
        (tuned_config(128, 144, 2, 1, Schedule.PINGPONG), (5176, 856, 4096), True, "K = 4096"),
        (tuned_config(128, 208, 4, 1, Schedule.COOPERATIVE), (3360, 832, 12584), True, "a cluster of four"),
        (
            tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n", swap_ab=True),
            (513, 7168, 18432),
            True,
            "a 192-row cooperative pick: the same tile in 1×1 ran 3 % slower",
        ),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE), (8464, 504, 4456), True, "unclustered (43 × 3)"),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE), (8192, 8192, 8192), True, "no tile fits one wave"),
    ],
)
def test_left_alone(config, mnk, swappable, why):
    assert tall_one_wave.replaces(config, mnk, SMS, swappable) is None, why


def test_comm_roles_bias_and_the_narrower_table_keep_their_pick():
    assert "tall tiles" not in decide(Problem("bf16", bias=True), (5176, 856, 4600)).rule
    for kwargs in ({"swap": False}, {"widths": False}):
        assert "tall tiles" not in decide(BF16, (5176, 856, 4600), **kwargs).rule, kwargs
