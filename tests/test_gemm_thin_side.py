"""``gemm_modes.thin_side_one_wave``: auto lays a side of at most 128 across one wave of 64-row ping-pong tiles
where the pick leaves a quarter of the SMs idle, and where it must not (the arithmetic on the CPU; the
kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import thin_side_one_wave  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,width,cluster,swapped",
    [
        ((9016, 112, 6096), 144, (2, 1), True),  # cuBLAS's 64×144 on Cᵀ: 2 × 63 = 126 tiles
        ((8896, 64, 3800), 72, (1, 2), True),  # one row tile: the columns pair
        ((115, 8520, 10736), 136, (2, 1), False),  # a thin M on C, where the pick was swapped
    ],
)
def test_auto_lays_the_thin_side_in_64_row_tiles(mnk, width, cluster, swapped, monkeypatch):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    monkeypatch.setattr(thin_side_one_wave, "replaces", lambda *_: None)
    pick = decide(BF16, mnk).config
    assert pick.tile_m >= 128 and pick.launch_tiles(m, n) < thin_side_one_wave.IDLE_BELOW * SMS
    tiles = decision.config
    assert (tiles.tile_m, tiles.tile_n, (tiles.cluster_m, tiles.cluster_n)) == (64, width, cluster)
    assert (tiles.schedule, tiles.swap_ab) == (Schedule.PINGPONG, swapped)
    assert thin_side_one_wave.BUSY_SHARE * SMS <= tiles.launch_tiles(m, n) <= SMS
    assert 64 * width < pick.tile_m * pick.tile_n
    assert decision.rule.endswith("the thin side in 64-row tiles")


def test_the_explain_line_counts_the_rows_columns_and_tiles():
    assert (
        "71 tiles of 128×112 on 132 SMs: the thin side's 112 rows in 2 of 64, 9016 in columns of 144, 126 tiles "
        "of 64×144 on Cᵀ"
    ) in decide(BF16, (9016, 112, 6096)).facts


PAIR_OF_FOUR = tuned_config(128, 112, 4, 1, Schedule.PINGPONG)


@pytest.mark.parametrize(
    "config,mnk,problem,why",
    [
        (tuned_config(64, 88, 4, 1, Schedule.PINGPONG), (4792, 88, 4256), BF16, "64 rows already: 0.875 → 0.609"),
        (tuned_config(128, 72, 4, 1, Schedule.PINGPONG), (8936, 72, 2840), BF16, "72 of 128 rows: 0.914 → 0.767"),
        (PAIR_OF_FOUR, (9016, 112, 6096), Problem("bf16", bias=True), "a bias: not swappable, not measured"),
        (PAIR_OF_FOUR, (1700, 112, 6096), BF16, "the long side under 16 × the thin one"),
        (PAIR_OF_FOUR, (16384, 112, 6096), BF16, "128 tiles: the pick keeps the SMs busy"),
        (tuned_config(128, 144, 4, 1, Schedule.PINGPONG), (9016, 144, 6096), BF16, "a side past 128"),
        (tuned_config(128, 112, 1, 2, Schedule.COOPERATIVE).with_split_k(2), (9016, 112, 6096), BF16, "split"),
    ],
)
def test_left_alone(config, mnk, problem, why):
    from gemm_modes.autotable import swappable

    assert thin_side_one_wave.replaces(config, mnk, SMS, swappable(problem)) is None, why


def test_without_the_swapped_tiles_or_widths_auto_keeps_its_pick():
    """``swap=False`` (the comm roles' and gated kernels' picks) and ``widths=False`` leave the step out."""
    for kwargs in ({"swap": False}, {"widths": False}):
        assert decide(BF16, (9016, 112, 6096), **kwargs).config.tile_m != 64, kwargs
