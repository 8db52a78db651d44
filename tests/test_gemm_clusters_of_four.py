"""``gemm_modes.clusters_of_four``: auto widens a cluster of two to four along the long side of a small
output, and where it must not (the arithmetic checked on the CPU; the kernels on the GPU runner)."""

from __future__ import annotations

import pytest
from gemm_modes import clusters_of_eight, clusters_of_four, half_rows, pingpong_192, split_halves, thin_side_one_wave
from gemm_modes.autotable import decide, table_decision
from gemm_modes.choice import choose_config
from gemm_modes.clusters_of_four import (
    MIN_LONG_SIDE_TILES,
    fetched_rows,
    load_bound,
    resident_clusters,
    waits_on_loads,
    widened,
)
from gemm_modes.modes import tuned_config
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")


def shape_of(config):
    return config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, config.swap_ab


def test_resident_clusters_count_what_a_132_sm_gpu_holds():
    assert [resident_clusters(size, 132) for size in (1, 2, 4, 8)] == [132, 66, 30, 15]
    assert resident_clusters(4, 114) == 25 and resident_clusters(4, 1) == 1


def test_fetched_rows_count_one_a_tile_per_cluster_row_and_one_b_tile_per_cluster_column():
    pair = tuned_config(64, 64, 1, 2, Schedule.PINGPONG)  # 3824×96: 60 row tiles, 2 column tiles
    assert pair.cluster_tiles(3824, 96) == 60 and fetched_rows(pair, 3824, 96) == 60 * (64 + 2 * 64)
    four = pair.with_(cluster_m=4, cluster_n=1)  # 15 × 2 cluster-tiles, each four A tiles and one B tile
    assert fetched_rows(four, 3824, 96) == 30 * (4 * 64 + 64) < fetched_rows(pair, 3824, 96)


@pytest.mark.parametrize(
    "mnk,bias,expected",
    [
        ((3240, 256, 2472), False, (64, 128, 4, 1, False)),  # the pair ran along N; four along M
        ((68, 5032, 2608), False, (64, 72, 4, 1, True)),  # swapped: four along N, the rows of Cᵀ
        ((19936, 72, 7816), False, (192, 80, 4, 1, False)),  # cooperative 192-row tiles along M
        ((128, 7168, 18432), False, (128, 64, 1, 4, False)),  # 112 column tiles: 28 clusters, all held
    ],
)
def test_auto_widens_the_pair_along_the_long_side(mnk, bias, expected, monkeypatch):
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # a ping-pong four may go on to eights
    problem = Problem("bf16", bias=bias)
    decision, before = decide(problem, mnk), table_decision(problem, mnk)
    assert shape_of(decision.config) == expected, decision.line()
    assert before.config.cluster_size == 2 and shape_of(before.config)[:2] == expected[:2]
    assert decision.rule == f"{before.rule} in clusters of four"
    assert "clusters of four (≤ 30 at once)" in decision.line() and "multicast to four" in decision.line()
    # clusters of four have run with staging buffers of their own: the ring is never asked for them
    assert not decision.config.staging_in_ring
    assert not choose_config(problem, mnk, "auto", None, None).staging_in_ring


@pytest.mark.parametrize(
    "mnk,bias,widened,expected",
    [
        ((3824, 96, 3000), False, (64, 64, 4, 1, False), (64, 96, 4, 1, False)),  # N = 96 in 128 rows
        ((131, 4912, 12704), False, (64, 128, 1, 4, False), (64, 136, 4, 1, True)),  # M = 131 in 192 rows
        ((165, 8632, 15360), False, (128, 144, 1, 4, False), (128, 168, 4, 1, True)),
        ((5328, 88, 16176), True, (64, 128, 4, 1, False), (64, 88, 4, 1, False)),  # with a bias: N stays N
        ((131, 4912, 12704), True, (64, 128, 1, 4, False), (64, 128, 1, 4, False)),  # a bias: no Cᵀ = B·Aᵀ
    ],
)
def test_a_short_side_tile_replaces_a_widened_tile_that_pads_the_short_side(mnk, bias, widened, expected):
    problem = Problem("bf16", bias=bias)
    four = clusters_of_four.widened(table_decision(problem, mnk).config, *mnk[:2], 132)
    assert shape_of(four) == widened
    # before decide's last step, which splits K on Cᵀ at 131×4912×12704 (the table splits none of these)
    assert table_decision(problem, mnk, split=False) == table_decision(problem, mnk)
    decision = decide(problem, mnk, split=False)
    assert shape_of(decision.config) == expected, decision.line()
    if widened != expected:
        assert clusters_of_four.four_time(decision.config, *mnk[:2], 132) < clusters_of_four.four_time(
            four, *mnk[:2], 132
        )
        assert "in fours covers" in decision.line() and "(four_time)" in decision.line()


def test_four_time_is_the_longer_of_the_sm_and_the_l2():
    # 3824×96: 64×64 in fours, 30 cluster-tiles fetching 4 × 64 + 64 rows each: the L2 is the bound
    pair = tuned_config(64, 64, 4, 1, Schedule.PINGPONG)
    l2 = clusters_of_four.L2_ROW_COST * 30 * (4 * 64 + 64) / 132
    assert clusters_of_four.four_time(pair, 3824, 96, 132) == pytest.approx(l2) and l2 > 80 * (64 + 64)
    # 64×96: 15 cluster-tiles; its SM's loads are the bound (80 × 160 rows)
    assert clusters_of_four.four_time(pair.with_(tile_n=96), 3824, 96, 132) == 80 * (64 + 96)


def test_tightest_keeps_a_tile_that_covers_the_short_side():
    # 285×5120: swapped 128×96 covers M = 285 with 288 rows (1 % idle); 128×144 in two ran 18 % slower
    four = decide(BF16, (285, 5120, 13824)).config
    assert shape_of(four) == (128, 96, 4, 1, True)
    assert clusters_of_four.tightest(four, 285, 5120, 132, swappable=True) == four


def test_the_explain_line_names_the_tiles_clusters_and_shared_operand(monkeypatch):
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # 3240×256 goes on to eights
    line = decide(BF16, (3240, 256, 2472)).line()
    assert line.endswith(
        "51 ping-pong tiles along M × 2 across in 26 clusters of four (≤ 30 at once), "
        "each B tile multicast to four of them"
    )
    line = decide(BF16, (68, 5032, 2608)).line()  # Cᵀ's rows are N: four row tiles share the user's A
    assert line.endswith(
        "79 ping-pong tiles along N in 20 clusters of four (≤ 30 at once), each A tile multicast to four of them"
    )


@pytest.mark.parametrize(
    "mnk,why",
    [
        ((200, 1024, 16384), "16 column tiles: fewer than MIN_LONG_SIDE_TILES"),
        ((128, 9000, 8192), "swapped 192×64 in fours fetches each 192-row tile once per CTA"),
        ((2070, 648, 14832), "17 row tiles padded to 20: more rows fetched"),
        ((331, 3760, 8408), "128×88 in fours: 32 cluster-tiles, more than the 30 held at once"),
        ((4096, 4096, 4096), "128×256 is compute-bound, and in several waves"),
        ((512, 1024, 8192), "split-K"),
    ],
)
def test_auto_keeps_the_pair_where_four_lost_or_cannot_pay(mnk, why, monkeypatch):
    monkeypatch.setattr(half_rows, "halved", lambda *_: None)  # a later step's 64-row tiles in fours, not these
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)  # nor the 192-row halves after them
    monkeypatch.setattr(thin_side_one_wave, "replaces", lambda *_: None)  # nor the thin side's 64-row tiles
    monkeypatch.setattr(pingpong_192, "replaces", lambda *_: None)  # nor a narrow 192-row pair run ping-pong
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # nor a ping-pong pair in eights
    decision = decide(BF16, mnk)  # the pair, or the long-K split decide's last step puts in its place
    assert decision.config.cluster_size <= 2 and "in clusters of four" not in decision.rule, why
    assert decision.config == table_decision(BF16, mnk).config or decision.rule.startswith("split-K for a short M")


def test_a_cooperative_192_row_tile_near_the_load_bound_widens_too():
    """192×144 (warpgroups along the width) is 1.03 of the load bound: it widens to four, where 192×160 (1.09),
    128×216 (1.005, not a 192-row tile) and the compute-bound 128×256 do not; cuBLAS's plan at 132×18184×3016."""
    near = tuned_config(192, 144, 2, 1, Schedule.COOPERATIVE, wg_split="n")
    assert not load_bound(near) and waits_on_loads(near)
    assert widened(near.with_(swap_ab=True), 132, 18184, 132).cluster_m == 4
    assert not waits_on_loads(tuned_config(192, 160, 2, 1, Schedule.COOPERATIVE, wg_split="n"))
    assert not waits_on_loads(tuned_config(128, 216, 2, 1, Schedule.COOPERATIVE))
    assert widened(tuned_config(128, 216, 2, 1, Schedule.COOPERATIVE), 14816, 216, 132) is None
    decision = decide(BF16, (132, 18184, 3016))
    config = decision.config
    assert (config.tile_m, config.tile_n, config.cluster_m, config.swap_ab) == (192, 144, 4, True)
    assert decision.rule == "small M in clusters of four"
    assert "95 cooperative tiles along N in 24 clusters of four" in decision.line()


def test_the_rule_conditions_one_by_one():
    pingpong = tuned_config(64, 64, 2, 1, Schedule.PINGPONG)
    assert load_bound(pingpong) and not load_bound(tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE))
    long_side = MIN_LONG_SIDE_TILES * 64
    assert widened(pingpong, long_side, 64, 132).cluster_m == 4
    assert widened(pingpong, long_side - 64, 64, 132) is None  # one tile short of the bound
    assert widened(pingpong, 30 * 4 * 64, 64, 132) is not None  # 30 clusters of four: all held at once
    assert widened(pingpong, 31 * 4 * 64, 64, 132) is None
    assert widened(pingpong, 30 * 4 * 64, 64, 120) is None  # fewer SMs hold fewer clusters
    cooperative = tuned_config(128, 128, 2, 1, Schedule.COOPERATIVE)
    assert widened(cooperative, long_side * 2, 128, 132).cluster_m == 4
    assert widened(cooperative.with_(split_k=2), long_side * 2, 128, 132) is None
    assert widened(cooperative.with_(stream_k=True, stream_k_aligned=True), long_side * 2, 128, 132) is None
    assert widened(pingpong.with_(cluster_m=1), long_side, 64, 132) is None  # a single CTA: not the rule's
    # no comm role, gate or mode has run in clusters of four: those calls keep the pair
    assert decide(BF16, (3240, 256, 2472), swap=False).config.cluster_size == 2
