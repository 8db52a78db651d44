"""``gemm_modes.one_wave``: auto narrows a cooperative 192-row tile or a ping-pong one that leaves clusters
idle in its one wave until its tiles fill it, holds a ping-pong pick of more than one wave in one, and where
it must not (the arithmetic checked on the CPU; the
kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import pytest
from gemm_modes import clusters_of_eight, half_rows, one_wave, short_side, split_halves, tight_width
from gemm_modes.autotable import decide, table_decision
from gemm_modes.clusters_of_four import fetched_rows, load_bound
from gemm_modes.modes import tuned_config
from gemm_modes.tile_time import tile_time
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")


def shape_of(config):
    return config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, config.swap_ab


def test_candidates_are_compute_bound_192_row_tiles_with_the_warpgroups_along_the_width():
    for swap_ab in (False, True):
        tiles = one_wave.candidates(swap_ab)
        assert tiles and all(t.tile_m == 192 and t.wg_split == "n" and t.swap_ab == swap_ab for t in tiles)
        assert all(not load_bound(t) for t in tiles)
        # 192 × 144 = 27648 multiply-adds per k against 80 × 336 = 26880 loaded: the narrowest that keeps pace
        assert min(t.tile_n for t in tiles) == 144 and max(t.tile_n for t in tiles) == 256
        assert {t.cluster_size for t in tiles} == {2}


def test_busy_share_is_none_past_one_wave():
    tile = tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n")
    # 18736 rows in 98 tiles of 192: 49 cluster-tiles of 2×1 on 66 clusters
    assert one_wave.busy_share(tile, 18736, 176, 132) == pytest.approx(49 / 66)
    assert one_wave.busy_share(tile, 40000, 176, 132) is None  # 209 tiles: two waves


@pytest.mark.parametrize(
    "mnk,expected",
    [
        ((18736, 176, 6592), (192, 144, 1, 2, True)),  # N = 176 along 192 rows, M in 131 tiles of 144
        ((180, 18432, 7168), (192, 144, 1, 2, False)),  # the swapped 192×192 pick turned back
        ((9864, 360, 5072), (192, 160, 1, 2, True)),
        ((688, 7168, 18432), (192, 224, 1, 2, False)),
    ],
)
def test_auto_narrows_a_192_row_tile_until_its_one_wave_is_full(mnk, expected):
    m, n, _ = mnk
    before = table_decision(BF16, mnk).config
    decision = decide(BF16, mnk)
    assert shape_of(decision.config) == expected
    assert decision.rule.endswith("narrowed to fill one wave")
    assert one_wave.busy_share(before, m, n, 132) < one_wave.MIN_FILL <= one_wave.busy_share(decision.config, m, n, 132)
    narrowed = decision.config
    assert tile_time(narrowed, *narrowed.launch_shape(m, n), 132) * one_wave.MARGIN < tile_time(
        before, *before.launch_shape(m, n), 132
    )
    assert "one wave:" in decision.facts and "narrowed to 192×" in decision.facts


def test_the_explain_line_gives_the_arithmetic():
    decision = decide(BF16, (18736, 176, 6592))
    assert (
        "one wave: 192×176 2×1 keeps 74% of the clusters busy; narrowed to 192×144 1×2 (computed as Cᵀ = B·Aᵀ) "
        "in 66 cluster-tiles, 100%: per SM 27648 against 33792 (tile_time)"
    ) in decision.facts


@pytest.mark.parametrize(
    "mnk,why",
    [
        ((167, 10272, 3520), "the pick, 192×96, waits on its loads"),
        ((181, 23008, 4368), "the pick keeps 91 % of the clusters busy"),
        ((4096, 4096, 4096), "not a 192-row tile"),
        ((18736, 176, 2048), "K = 2048 is short"),
    ],
)
def test_auto_leaves_the_pick_alone(mnk, why):
    decision = decide(BF16, mnk)
    assert "narrowed" not in decision.rule, why


def test_replaces_leaves_load_bound_and_other_tiles():
    wide = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    assert one_wave.replaces(wide, 2048, 2048, 132, swappable=True) is None  # 128 rows: not narrowed
    narrow = tuned_config(192, 96, 1, 2, Schedule.COOPERATIVE, wg_split="n", swap_ab=True)
    assert load_bound(narrow) and one_wave.replaces(narrow, 167, 10272, 132, swappable=True) is None


def test_without_the_swap_only_unswapped_tiles_are_weighed():
    fit = one_wave.fitted(18736, 176, 132, swappable=False)
    assert fit is None or not fit[0].swap_ab
    assert one_wave.fitted(18736, 176, 132, swappable=True)[0].swap_ab


def test_pingpong_candidates_are_as_wide_as_one_warpgroup_holds():
    for swap_ab in (False, True):
        tiles = one_wave.pingpong_candidates(swap_ab)
        assert all(t.schedule is Schedule.PINGPONG and t.swap_ab == swap_ab and t.cluster_size == 2 for t in tiles)
        widest = {rows: max(t.tile_n for t in tiles if t.tile_m == rows) for rows in one_wave.PINGPONG_ROWS}
        # 192 rows × 128 columns / 128 threads = 192 fp32 accumulators each, the most a math thread holds
        assert widest == {64: 192, 128: 192, 192: 128}
        assert min(t.tile_n for t in tiles) == 64 and all(t.tile_n % 8 == 0 for t in tiles)


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((1048, 1048, 1048), (128, 112, 1, 2), (128, 80, 1, 2)),  # 9 × 10 tiles in 45 pairs → 9 × 14 in 63
        ((2128, 904, 4664), (128, 192, 1, 2), (192, 96, 1, 2)),  # a 192-row ping-pong tile, along the same side
        ((60, 12320, 6584), (64, 128, 1, 4), (64, 96, 1, 2)),  # clusters of four, 25 of 30, to 65 pairs of 66
    ],
)
def test_auto_narrows_a_pingpong_tile_until_its_one_wave_is_full(mnk, before, after, monkeypatch):
    m, n, _ = mnk
    monkeypatch.setattr(half_rows, "halved", lambda *_: None)  # the step after may turn 128×80 into 64 rows
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # and the last a ping-pong pair into 4×2
    pick = decide(BF16, mnk)
    assert shape_of(pick.config)[:4] == after and pick.rule.endswith("narrowed to fill one wave")
    with monkeypatch.context() as patched:
        patched.setattr(one_wave, "narrowed_pingpong", lambda *_: None)
        patched.setattr(tight_width, "tightened", lambda *_: None)  # the step after: the pick it narrowed
        unnarrowed = decide(BF16, mnk).config
    assert shape_of(unnarrowed)[:4] == before
    assert shape_of(one_wave.narrowed_pingpong(unnarrowed, m, n, 132)) == shape_of(pick.config)
    assert one_wave.busy_share(unnarrowed, m, n, 132) < one_wave.MIN_FILL
    assert_within_the_pingpong_bounds(pick.config, unnarrowed, m, n)


def assert_within_the_pingpong_bounds(chosen, pick, m, n):
    """The bounds both ping-pong steps hold the tile they take to (``one_wave``'s docstring)."""
    assert one_wave.busy_share(chosen, m, n, 132) >= one_wave.MIN_FILL
    assert fetched_rows(chosen, m, n) <= one_wave.MAX_FETCH_GROWTH * fetched_rows(pick, m, n)
    assert tile_time(chosen, m, n, 132) * one_wave.MARGIN < tile_time(pick, m, n, 132)
    assert one_wave.same_cluster_side(chosen, pick)


def test_the_explain_line_of_a_narrowed_pingpong_tile_counts_its_l2_fetches():
    decision = decide(BF16, (2128, 904, 4664))
    assert (
        "one wave: 128×192 1×2 keeps 77% of the clusters busy; narrowed to 192×96 1×2 in 60 cluster-tiles, 91%: "
        "per SM 23040 against 25600 (tile_time); 23040 rows from L2 per k-step against 26112"
    ) in decision.facts


@pytest.mark.parametrize(
    "mnk,why",
    [
        ((241, 3184, 4208), "64×104 in pairs would fetch 1.74 times the rows of 128×64 in fours"),
        ((2888, 528, 9056), "the faster tiles pair the other side (2×1 for the pick's 1×2)"),
        ((8192, 8192, 1024), "ping-pong 128×192 takes several waves"),
        ((1000, 1000, 1000), "128×64 in pairs keeps 91 % of the clusters busy"),
    ],
)
def test_auto_leaves_a_pingpong_pick_alone(mnk, why, monkeypatch):
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)  # a later step's split, not this one's
    decision = decide(BF16, mnk)
    assert decision.config.schedule is Schedule.PINGPONG and "narrowed" not in decision.rule, why


def test_the_pingpong_step_keeps_the_cluster_side_and_narrows_pingpong_picks_only():
    pick = tuned_config(128, 136, 1, 2, Schedule.PINGPONG)
    assert one_wave.same_cluster_side(tuned_config(128, 112, 1, 2, Schedule.PINGPONG), pick)
    assert not one_wave.same_cluster_side(tuned_config(128, 112, 2, 1, Schedule.PINGPONG), pick)
    four = tuned_config(64, 128, 1, 4, Schedule.PINGPONG)
    assert one_wave.same_cluster_side(tuned_config(64, 96, 1, 2, Schedule.PINGPONG), four)
    coop = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    assert one_wave.narrowed_pingpong(coop, 1048, 1048, 132) is None


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((63, 18136, 12880), (64, 128, 1, 2), (64, 144, 1, 2)),  # 142 tiles on 132 SMs → 126 one wider
        ((64, 22808, 12872), (64, 64, 1, 2), (64, 176, 1, 2)),  # 357 tiles in three waves → 130 in one
        ((190, 10352, 3776), (64, 128, 1, 2), (192, 80, 1, 2)),  # three 64-row tile rows → one of 192
        ((311, 6368, 6048), (64, 128, 1, 2), (128, 152, 1, 2)),  # five 64-row tile rows → three of 128
    ],
)
def test_auto_holds_a_pingpong_pick_of_more_than_one_wave_in_one(mnk, before, after, monkeypatch):
    # over three or more 64-row tiles the small-M rule now swaps first where 15 % faster (190×10352 and
    # 311×6368: test_gemm_rule_facts); the step holds such a pick wherever the rule leaves it
    monkeypatch.setattr(short_side, "RESTREAMING_ROW_TILES", 10**6)
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    held = decision.config
    assert shape_of(held)[:4] == after and decision.rule == "small M, held in one wave"
    assert held.schedule is Schedule.PINGPONG and not held.swap_ab
    with monkeypatch.context() as patched:
        patched.setattr(one_wave, "held_in_one_wave", lambda *_: None)
        pick = decide(BF16, mnk).config
    assert shape_of(pick)[:4] == before
    assert one_wave.busy_share(pick, m, n, 132) is None  # more than one wave
    assert_within_the_pingpong_bounds(held, pick, m, n)


def test_the_explain_line_of_a_pick_held_in_one_wave_counts_its_waves_and_fetches():
    decision = decide(BF16, (63, 18136, 12880))
    assert (
        "more than one wave: 71 cluster-tiles of 64×128 1×2 on 66 clusters; 64×144 1×2 holds it in one wave of "
        "63, 95% of the clusters: per SM 16640 against 30720 (tile_time); 22176 rows from L2 per k-step against "
        "22720"
    ) in decision.facts


@pytest.mark.parametrize(
    "problem,mnk,why",
    [
        (Problem("bf16", bias=True), (63, 18136, 12880), "measured without a bias"),
        (BF16, (8192, 8192, 1024), "no ping-pong tile holds 8192² in one wave"),
        (BF16, (1048, 1048, 1048), "one wave already: narrowed_pingpong's"),
        (BF16, (59, 16352, 5704), "64×128 holds it in one wave (128 tiles)"),
    ],
)
def test_auto_holds_nothing_in_one_wave_where_it_must_not(problem, mnk, why):
    assert "held in one wave" not in decide(problem, mnk).rule, why


def test_the_hold_step_takes_pingpong_picks_of_more_than_one_wave_only():
    coop = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    assert one_wave.held_in_one_wave(coop, 63, 18136, 132) is None
    one_wave_pick = tuned_config(64, 144, 1, 2, Schedule.PINGPONG)
    assert one_wave.held_in_one_wave(one_wave_pick, 63, 18136, 132) is None
    spilled = tuned_config(64, 128, 1, 2, Schedule.PINGPONG)
    assert shape_of(one_wave.held_in_one_wave(spilled, 63, 18136, 132))[:4] == (64, 144, 1, 2)
    # on a GPU of 152 SMs 71 pairs of 64×128 fit in its 76 clusters: one wave, nothing to hold
    assert one_wave.held_in_one_wave(spilled, 63, 18136, 152) is None
