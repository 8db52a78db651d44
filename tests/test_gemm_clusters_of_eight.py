"""A ping-pong pair in clusters of eight (``gemm_modes.clusters_of_eight``): which picks it widens, where one wave
holds them, and the explain line."""

from __future__ import annotations

import pytest
from gemm_modes import clusters_of_eight
from gemm_modes.autotable import decide
from gemm_modes.modes import TunedConfig
from hopper_gemm.config import GemmConfig, Problem, Schedule

BF16 = Problem("bf16")


def pingpong(rows: int, width: int, cluster: tuple[int, int] = (1, 2), **modes) -> TunedConfig:
    split = "m" if rows == 192 else None
    tile = GemmConfig(rows, width, *cluster, Schedule.PINGPONG, **({"wg_split": split} if split else {}))
    return TunedConfig(tile, **modes)


def test_a_pingpong_pair_goes_in_clusters_of_eight_where_they_fit_one_wave():
    """cuBLAS's 4×2 at 169×10368×4664: 54 row tiles of N × 2 column tiles of M are 14 clusters of eight, one wave of
    the 15 a 132-SM GPU holds (``clusters_of_four.resident_clusters``)."""
    eight = clusters_of_eight.widened(pingpong(192, 88, swap_ab=True), 169, 10368, 132)
    assert (eight.cluster_m, eight.cluster_n, eight.tile_n, eight.swap_ab) == (4, 2, 88, True)
    assert eight.cluster_tiles(10368, 169) == 14
    on_c = clusters_of_eight.widened(pingpong(192, 96), 9152, 184, 132)  # a short N on C: 48 row tiles of M × 2
    assert (on_c.cluster_m, on_c.cluster_n, on_c.swap_ab) == (4, 2, False)
    square = clusters_of_eight.widened(pingpong(128, 144, staging_in_ring=True), 1432, 1432, 132)
    assert (square.cluster_m, square.cluster_n, square.staging_in_ring) == (4, 2, False)  # 12 × 10 tiles: 15 eights
    assert square.cluster_tiles(1432, 1432) == 15


@pytest.mark.parametrize(
    "config,m,n,sms,why",
    [
        (pingpong(192, 88, swap_ab=True), 169, 10368, 110, "110 SMs hold 12 eights, not 14"),
        (pingpong(192, 104, swap_ab=True), 412, 18432, 132, "48 eights: more than one wave"),
        (pingpong(128, 144), 1448, 1448, 132, "12 × 11 tiles: 18 eights"),
        (pingpong(192, 88, (2, 1), swap_ab=True), 169, 10368, 132, "not a 1×2 pair"),
        (pingpong(64, 128), 1432, 1432, 132, "64 rows: unmeasured"),
        (
            TunedConfig(GemmConfig(192, 96, 1, 2, Schedule.COOPERATIVE, wg_split="n"), swap_ab=True),
            169,
            10368,
            132,
            "cooperative",
        ),
    ],
)
def test_other_picks_keep_their_cluster(config, m, n, sms, why):
    assert clusters_of_eight.widened(config, m, n, sms) is None, why


@pytest.mark.parametrize(
    "mnk,rows",
    [((169, 10368, 4664), 192), ((143, 8688, 3560), 192), ((9152, 184, 4872), 192)]
    + [((142, 6064, 2280), 128), ((2552, 816, 14712), 128), ((1432, 1432, 1432), 128)],
)
def test_auto_runs_the_measured_pairs_in_eights_and_says_so(mnk, rows):
    decision = decide(BF16, mnk)
    config = decision.config
    assert (config.tile_m, config.schedule, config.cluster_m, config.cluster_n) == (rows, Schedule.PINGPONG, 4, 2)
    assert "in clusters of 4×2:" in decision.line() and "one wave of the 15 held at once" in decision.line()
