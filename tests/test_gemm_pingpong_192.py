"""A narrow cooperative 192-row pick run ping-pong (``gemm_modes.pingpong_192``): which picks it takes, the
width it gives them, and the explain line."""

from __future__ import annotations

import pytest
from gemm_modes import pingpong_192
from gemm_modes.autotable import decide
from gemm_modes.modes import TunedConfig
from gemm_modes.short_side import pingpong_192_width
from hopper_gemm.config import GemmConfig, Problem, Schedule

BF16 = Problem("bf16")


def cooperative_192(width: int, cluster: tuple[int, int] = (1, 2), **modes) -> TunedConfig:
    return TunedConfig(GemmConfig(192, width, *cluster, Schedule.COOPERATIVE, wg_split="n"), **modes)


def test_the_width_is_the_share_in_8_column_steps_and_at_least_64():
    assert pingpong_192_width(144, 2) == 72  # the cooperative tile's 16-column step gives 80
    assert pingpong_192_width(351, 4) == 88  # 87.75 rounded up
    assert pingpong_192_width(412, 4) == 104
    assert pingpong_192_width(100, 2) == 64  # 50 rounded up to a 64-column wgmma


def test_a_narrow_cooperative_192_row_tile_in_two_or_more_column_tiles_runs_pingpong():
    swapped = pingpong_192.replaces(cooperative_192(80, swap_ab=True), 144, 9184)
    assert (swapped.tile_m, swapped.tile_n, swapped.schedule, swapped.wg_split) == (192, 72, Schedule.PINGPONG, "m")
    assert swapped.swap_ab and (swapped.cluster_m, swapped.cluster_n) == (1, 2)
    on_c = pingpong_192.replaces(cooperative_192(112, (2, 1)), 17328, 408)  # N in 4 column tiles of 102
    assert (on_c.tile_n, on_c.cluster_m, on_c.swap_ab, on_c.schedule) == (104, 2, False, Schedule.PINGPONG)
    assert pingpong_192.replaces(cooperative_192(128), 18824, 504).tile_n == 128  # the widest


@pytest.mark.parametrize(
    "config,m,n,why",
    [
        (cooperative_192(144), 9000, 288, "wider than PINGPONG_192_WIDEST"),
        (cooperative_192(96), 9000, 96, "one column tile"),
        (cooperative_192(96, (1, 4)), 9000, 180, "a cluster of four"),
        (cooperative_192(96, split_k=2), 9000, 180, "split-K"),
        (TunedConfig(GemmConfig(128, 96, 1, 2, Schedule.COOPERATIVE)), 9000, 180, "128 rows"),
        (TunedConfig(GemmConfig(192, 96, 1, 2, Schedule.PINGPONG, wg_split="m")), 9000, 180, "ping-pong already"),
    ],
)
def test_other_picks_keep_their_schedule(config, m, n, why):
    assert pingpong_192.replaces(config, m, n) is None, why


@pytest.mark.parametrize(
    "mnk,width,swapped",
    [((144, 9184, 2224), 72, True), ((351, 5816, 3520), 88, True), ((8800, 144, 2144), 72, False)]
    + [((6120, 336, 2832), 88, False), ((18824, 504, 2288), 128, False)],
)
def test_auto_runs_the_measured_picks_pingpong_and_says_why(mnk, width, swapped):
    decision = decide(BF16, mnk)
    config = decision.config
    assert (config.tile_m, config.tile_n, config.schedule, config.swap_ab) == (192, width, Schedule.PINGPONG, swapped)
    assert decision.rule.endswith("in ping-pong 192-row tiles")
    assert f"run ping-pong, each warpgroup a whole 192×{width} tile" in decision.line()
    assert "not half of a cooperative 192×" in decision.line()
