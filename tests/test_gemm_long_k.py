"""``gemm_modes.long_k``: auto's split-K for a narrow N (or, swapped, a short M) over a long K, the uneven
shares of subtiles it needs (``SplitK.share``), and where the rule leaves the table's pick (the arithmetic on
the CPU; the kernels on the GPU runner)."""

from __future__ import annotations

import pytest
from gemm_modes import long_k
from gemm_modes.autotable import decide, table_decision
from gemm_modes.clusters_of_four import L2_ROW_COST, fetched_rows, resident_clusters
from gemm_modes.modes import tuned_config
from gemm_modes.splits import SplitK
from gemm_modes.tile_time import tile_time
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize("parts,subtiles,batch", [(7, 10, 1), (3, 4, 1), (5, 8, 1), (3, 8, 2), (2, 2, 1), (8, 8, 1)])
def test_shares_cover_every_subtile_once_in_whole_batches_as_evenly_as_they_go(parts, subtiles, batch):
    split = SplitK(parts)
    shares = [split.share(j, subtiles, batch) for j in range(parts)]
    assert shares[0][0] == 0 and shares[-1][1] == subtiles
    assert all(shares[j][1] == shares[j + 1][0] for j in range(parts - 1))  # contiguous, in part order
    sizes = [end - first for first, end in shares]
    assert all(
        first % batch == 0 and size % batch == 0 and size > 0 for (first, _), size in zip(shares, sizes, strict=True)
    )
    assert max(sizes) - min(sizes) <= batch
    if parts == 7:
        assert sizes == [1, 1, 2, 1, 2, 1, 2]


def test_with_split_k_narrows_the_subtile_only_where_the_parts_need_it():
    cooperative = tuned_config(128, 64, 2, 1, Schedule.COOPERATIVE)
    assert [cooperative.with_split_k(p).epi_n for p in (2, 3, 4, 5, 8)] == [32, 16, 16, 8, 8]
    wide = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    assert wide.with_split_k(8).epi_n == 32 and wide.with_split_k(8).subtiles == 8
    assert tuned_config(128, 80, 1, 1, Schedule.COOPERATIVE).with_split_k(7).subtiles == 10
    with pytest.raises(ValueError, match=r"split_k = 3 is invalid: allowed at most the tile's 2 subtiles"):
        tuned_config(128, 64, 2, 1, Schedule.COOPERATIVE, split_k=3)  # as asked: no narrowing


def test_the_class_is_a_narrow_n_under_a_long_m_with_k_for_two_parts():
    assert long_k.in_class((2088, 72, 10784)) and long_k.in_class((1024, 512, 2048))
    assert not long_k.in_class((1024, 520, 8192))  # N past two column tiles of 256
    assert not long_k.in_class((1000, 512, 8192))  # N more than half of M
    assert not long_k.in_class((72, 2088, 10784))  # M short: the class of Cᵀ (swaps)
    assert not long_k.in_class((4096, 128, 1984)) and long_k.in_class((4096, 128, 1985))  # 31 and 32 k-tiles


def test_a_short_m_is_weighed_swapped_where_the_problem_can_run_so_and_k_is_long_enough():
    assert long_k.swaps((2088, 72, 10784), swappable=True) is False  # a narrow N: unswapped
    assert long_k.swaps((72, 2088, 10784), swappable=True) is True  # Cᵀ = B·Aᵀ has the narrow side
    assert long_k.swaps((72, 2088, 10784), swappable=False) is None  # a bias, or B as (K, N)
    k_tiles = long_k.MIN_SWAPPED_K_TILES
    assert long_k.swaps((184, 4056, 64 * k_tiles), True) and long_k.swaps((184, 4056, 64 * k_tiles - 64), True) is None
    assert long_k.swaps((600, 4096, 8192), True) is None  # M past two column tiles of 256
    found = long_k.candidates((72, 2088, 10784), SMS, swap_ab=True)
    assert found and all(c.swap_ab and c.tile_n == 72 for c in found)  # M along the tile's columns
    assert all(c.one_wave_clusters(2088, 72) <= resident_clusters(c.cluster_size, SMS) for c in found)


def test_every_candidate_runs_in_one_wave_with_parts_of_sixteen_k_tiles_and_a_share_each():
    mnk = (2088, 72, 10784)
    found = long_k.candidates(mnk, SMS)
    assert found and {c.tile_n for c in found} == {72}  # N = 72 in one column tile (two would be under 64)
    assert {(c.cluster_m, c.cluster_n) for c in found} == {(1, 1), (2, 1), (1, 2)}
    for c in found:
        assert c.schedule is Schedule.COOPERATIVE and c.tile_m == 128 and 2 <= c.split_k <= 8
        assert c.one_wave_clusters(*mnk[:2]) <= resident_clusters(c.cluster_size, SMS)
        assert -(-mnk[2] // 64) // c.split_k >= long_k.MIN_PART_K_TILES
        assert c.subtiles // c.epi_batch >= c.split_k
    widths = {c.tile_n for c in long_k.candidates((2544, 312, 13464), SMS)}
    assert widths == {160}  # 312 is past 256: only two column tiles of 160


def test_split_time_divides_the_k_loop_by_the_parts_but_not_the_l2_traffic():
    mnk = (3000, 128, 12288)
    plain = tuned_config(128, 128, 2, 1, Schedule.COOPERATIVE)
    for parts in (2, 5):
        split = plain.with_split_k(parts)
        k_tiles = 12288 // 64
        l2 = L2_ROW_COST * fetched_rows(split, 3000, 128) * parts / SMS
        assert long_k.split_time(split, mnk, SMS) == pytest.approx(
            k_tiles / parts * max(tile_time(split, 3000, 128, SMS), l2)
        )
    # L2-bound at 3 parts and past: the same estimate, and the most parts win the tie (5 ran 1.189 of torch)
    assert long_k.fastest(mnk, SMS).split_k == 5
    assert long_k.fixup_time(plain.with_split_k(4)) == long_k.FIXUP_COST * 128 * 128 * 3 / 4


@pytest.mark.parametrize(
    "mnk,bias,expected",
    [
        ((2088, 72, 10784), False, (72, 2, 1, 7)),  # 0.514 → 1.067 of torch
        ((3000, 128, 12288), True, (128, 2, 1, 5)),  # with a bias: the epilogue adds it after the sum
        ((3384, 288, 15224), False, (144, 2, 1, 2)),  # replaces the split-K rule's 128×192: 0.839 → 1.117
        ((2544, 312, 13464), False, (160, 2, 1, 3)),
    ],
)
def test_auto_splits_a_narrow_n_over_a_long_k(mnk, bias, expected):
    problem = Problem("bf16", bias=bias)
    decision = decide(problem, mnk)
    c = decision.config
    assert (c.tile_n, c.cluster_m, c.cluster_n, c.split_k) == expected and c.tile_m == 128
    assert c.schedule is Schedule.COOPERATIVE and not c.swap_ab
    assert decision.rule == "split-K for a narrow N over a long K" and "(split_time)" in decision.line()
    table = table_decision(problem, mnk).config
    assert long_k.split_time(c, mnk, SMS) < long_k.split_time(table, mnk, SMS)
    assert decide(problem, mnk, split=False).config.split_k == 1  # comm roles and gates: no split
    assert decide(problem, mnk, swap=False).config == table_decision(problem, mnk, swap=False).config


@pytest.mark.parametrize(
    "mnk,expected",
    [
        ((72, 2088, 10784), (72, 2, 1, 7)),  # 0.585 → 1.0+ of torch: the mirror of 2088×72×10784
        ((148, 2584, 6648), (152, 2, 1, 6)),  # 0.654 → 1.200
        ((256, 5120, 13824), (256, 2, 1, 3)),  # a sweep shape: the small-M rule's aligned split 0.989 → 1.048
    ],
)
def test_auto_splits_a_short_m_over_a_long_k_on_the_swapped_launch(mnk, expected):
    decision = decide(BF16, mnk)
    c = decision.config
    assert (c.tile_n, c.cluster_m, c.cluster_n, c.split_k) == expected and c.tile_m == 128 and c.swap_ab
    assert decision.rule == "split-K for a short M over a long K"
    assert f"M = {mnk[0]} ≤ 512, computed as Cᵀ = B·Aᵀ, K = {mnk[2]}: " in decision.line()
    assert not decision.config.staging_in_ring  # a swapped launch stages apart
    # a bias adds along N, the rows of Cᵀ: no swapped launch, so no split of Cᵀ
    assert not decide(Problem("bf16", bias=True), mnk).config.swap_ab


@pytest.mark.parametrize(
    "mnk,why",
    [
        ((2528, 464, 3584), "the estimate: the table's 64×160 tiles fill the SMs (a split ran 0.737 against 0.970)"),
        ((2048, 512, 4096), "covers exactly: 128 ping-pong 64×128 tiles (the split ran 0.858 against 1.187)"),
        ((2048, 256, 8192), "covers exactly: the split-K rule's 64 of 66 clusters (0.956 against 1.114)"),
        ((184, 4056, 2304), "M short over 36 k-tiles: the swapped split ran 0.756 against the table's 1.307"),
        ((5328, 88, 16176), "the estimate"),
    ],
)
def test_the_rule_leaves_the_table_where_a_split_lost_or_has_not_run(mnk, why):
    decision = decide(BF16, mnk)
    assert not decision.rule.startswith("split-K for a"), why
    assert long_k.replaces(decision.config, mnk, SMS, swappable=True) is None, why  # the pick it weighed


def test_covers_exactly_counts_split_parts_and_padding():
    exact = tuned_config(64, 128, 1, 2, Schedule.PINGPONG)
    assert long_k.covers_exactly(exact, (2048, 512, 4096), SMS)  # 32 × 4 tiles = 128 CTAs
    assert not long_k.covers_exactly(exact, (2048, 520, 4096), SMS)  # a padded column tile
    assert not long_k.covers_exactly(exact, (1024, 512, 4096), SMS)  # 64 CTAs: half the SMs idle
    split = tuned_config(128, 128, 1, 2, Schedule.COOPERATIVE, split_k=4)
    assert long_k.covers_exactly(split, (2048, 256, 8192), SMS)  # 16 cluster-tiles × 4 parts × 2 CTAs


@pytest.mark.parametrize("mnk", [(4096, 8, 4096), (4096, 56, 4096), (8, 4096, 4096), (1, 4096, 8192), (4096, 1, 8192)])
def test_a_side_under_64_is_weighed_as_one_tile_of_64(mnk):
    """A split candidate as wide as a side under 64 would be no wgmma tile: it takes the narrowest tile,
    64 columns (auto used to fail on N = 8 with ``tile_n = 8 is invalid``)."""
    for swap_ab in (False, True):
        assert all(c.tile_n >= 64 for c in long_k.candidates(mnk, 132, swap_ab))
    for bias in (False, True):
        config = decide(Problem("bf16", bias=bias), mnk).config
        rows, cols = config.launch_shape(mnk[0], mnk[1])
        assert config.cluster_tiles(rows, cols) >= 1 and config.tile_n >= 64
