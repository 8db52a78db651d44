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


def test_a_pingpong_tile_in_fours_along_the_rows_goes_in_eights_over_an_even_count_of_column_tiles():
    """cuBLAS's 128×88 in eights at 2960×344×2664: 24 row tiles × 4 column tiles, in 4×1 24 clusters of four, in 4×2
    12 clusters of eight."""
    four = pingpong(128, 88, (4, 1))
    eight = clusters_of_eight.widened(four, 2960, 344, 132)
    assert (eight.cluster_m, eight.cluster_n, eight.tile_n) == (4, 2, 88)
    assert eight.cluster_tiles(2960, 344) == 12
    assert clusters_of_eight.widened(pingpong(128, 120, (4, 1)), 2960, 344, 132) is None  # 3 column tiles: odd
    assert clusters_of_eight.widened(pingpong(192, 88, (4, 1)), 2960, 344, 132) is None  # 192 rows: unmeasured
    narrow = clusters_of_eight.widened(pingpong(64, 72, (4, 1)), 3648, 144, 132)  # 57 row tiles × 2: 15 eights
    assert (narrow.tile_m, narrow.cluster_m, narrow.cluster_n) == (64, 4, 2)
    assert clusters_of_eight.widened(pingpong(64, 208, (4, 1)), 1216, 1216, 132) is None  # past FOURS_64_WIDEST


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
    + [((142, 6064, 2280), 128), ((2552, 816, 14712), 128), ((1432, 1432, 1432), 128)]
    + [((2960, 344, 2664), 128), ((6960, 216, 4712), 128), ((409, 3056, 4744), 128)],  # from 4×1
)
def test_auto_runs_the_measured_pairs_in_eights_and_says_so(mnk, rows):
    decision = decide(BF16, mnk)
    config = decision.config
    assert (config.tile_m, config.schedule, config.cluster_m, config.cluster_n) == (rows, Schedule.PINGPONG, 4, 2)
    assert "in clusters of 4×2:" in decision.line() and "one wave of the 15 held at once" in decision.line()


def cooperative_split(rows: int, width: int, parts: int, **modes) -> TunedConfig:
    split = {"wg_split": "n"} if rows == 192 else {}
    return TunedConfig(GemmConfig(rows, width, 2, 1, Schedule.COOPERATIVE, **split), split_k=parts, **modes)


def test_a_split_over_a_short_side_of_129_to_256_runs_unsplit_in_eights():
    """cuBLAS's plan at 11456×168×12136: N = 168 in two column tiles of 88, 60 row tiles of 192 in 15 clusters of
    4×2, the 15 a 132-SM GPU holds."""
    eight = clusters_of_eight.replaces_split(cooperative_split(192, 176, 2), 11456, 168, 132, swappable=True)
    assert (eight.tile_m, eight.tile_n, eight.schedule, eight.wg_split) == (192, 88, Schedule.PINGPONG, "m")
    assert (eight.cluster_m, eight.cluster_n, eight.split_k, eight.swap_ab) == (4, 2, 1, False)
    assert eight.cluster_tiles(11456, 168) == 15
    on_ct = clusters_of_eight.replaces_split(cooperative_split(192, 176, 2), 163, 11296, 132, swappable=True)
    assert (on_ct.tile_n, on_ct.swap_ab) == (88, True)  # M = 163 on Cᵀ
    stream_k = TunedConfig(GemmConfig(128, 256, 2, 1, Schedule.COOPERATIVE), stream_k=True, stream_k_aligned=True)
    assert clusters_of_eight.replaces_split(stream_k, 9240, 200, 132, swappable=True).tile_n == 104


@pytest.mark.parametrize(
    "config,m,n,swappable,why",
    [
        (cooperative_split(192, 176, 2), 8000, 168, True, "42 row tiles in 11 eights: under 80 % of the 15"),
        (cooperative_split(192, 176, 2), 12000, 168, True, "63 row tiles in 16 eights: past one wave"),
        (cooperative_split(192, 128, 2), 11456, 120, True, "N = 120 fits one 192-row ping-pong tile"),
        (cooperative_split(192, 144, 2), 11456, 264, True, "N = 264: over two tiles of 128"),
        (cooperative_split(192, 176, 2), 163, 11296, False, "M short but no Cᵀ (a bias, or B as (K, N))"),
        (TunedConfig(GemmConfig(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n")), 11456, 168, True, "unsplit"),
    ],
)
def test_other_picks_keep_their_split(config, m, n, swappable, why):
    assert clusters_of_eight.replaces_split(config, m, n, 132, swappable) is None, why


@pytest.mark.parametrize("mnk,width,swapped", [((11456, 168, 12136), 88, False), ((163, 11296, 5112), 88, True)])
def test_auto_runs_the_measured_splits_unsplit_in_eights_and_says_why(mnk, width, swapped):
    decision = decide(BF16, mnk)
    config = decision.config
    assert (config.tile_m, config.tile_n, config.schedule, config.swap_ab) == (192, width, Schedule.PINGPONG, swapped)
    assert (config.cluster_m, config.cluster_n, config.split_k) == (4, 2, 1)
    assert decision.rule.endswith("unsplit in ping-pong 192-row tiles")
    assert "unsplit in place of split-K in 2:" in decision.line()
    assert decide(Problem("bf16", bias=True), mnk).config.cluster_size != 8  # measured without a bias
