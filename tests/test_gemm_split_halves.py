"""``gemm_modes.split_halves``: auto turns a one-wave ping-pong 64- or 128-row pick in a pair, over a long K, into
192-row tiles whose warpgroups split N, split-K in 2–4 parts, and where it must not (the arithmetic on the
CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import clusters_of_eight, pingpong_192, split_halves  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.clusters_of_four import resident_clusters  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((2832, 600, 11496), (128, 152, (1, 2)), (160, (1, 2), 2)),  # 92 CTAs → 60 tiles × 2 parts = 120
        ((2864, 544, 10872), (128, 136, (1, 2)), (144, (1, 2), 2)),
        ((2240, 960, 8456), (128, 144, (2, 1)), (192, (2, 1), 2)),
        ((2656, 592, 13536), (128, 104, (1, 2)), (208, (2, 1), 3)),  # three parts of 70 k-tiles
        ((2352, 864, 12248), (128, 144, (1, 2)), (176, (1, 1), 2)),  # no cluster of two fills the wave
        ((2072, 688, 11832), (64, 176, (1, 2)), (176, (1, 2), 3)),  # cuBLAS's plan; parts of 61 k-tiles
        ((4032, 224, 14424), (64, 112, (1, 2)), (112, (1, 2), 3)),
        ((8192, 128, 13400), (64, 128, (2, 1)), (128, (2, 1), 3)),  # N in one column tile
    ],
)
def test_auto_splits_a_long_k_on_192_row_halves(mnk, before, after, monkeypatch):
    m, n, k = mnk
    decision = decide(BF16, mnk)
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)  # the pick the step replaced
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # (not the last step's 4×2 of it)
    pick = decide(BF16, mnk).config
    assert (pick.tile_m, pick.tile_n, (pick.cluster_m, pick.cluster_n)) == before
    assert pick.schedule is Schedule.PINGPONG
    assert pick.cluster_tiles(m, n) * pick.cluster_size <= SMS  # one wave: a tile per CTA
    split = decision.config
    width, cluster, parts = after
    assert (split.tile_m, split.tile_n, (split.cluster_m, split.cluster_n)) == (192, width, cluster)
    assert (split.schedule, split.wg_split, split.split_k) == (Schedule.COOPERATIVE, "n", parts)
    busy = split.one_wave_clusters(m, n)
    assert busy <= resident_clusters(split.cluster_size, SMS)
    assert busy * split.cluster_size >= split_halves.BUSY_SHARE * SMS
    assert -(-k // 64) // parts >= split_halves.MIN_PART_K_TILES
    assert 192 * width / parts <= pick.tile_m * pick.tile_n  # no more multiply-adds per CTA and k-step
    assert decision.rule.endswith("split over K on 192-row halves")


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((273, 5728, 13336), (80, (1, 2), True), (144, (1, 2), 2)),  # on Cᵀ: 30 × 2 tiles × 2 parts
        ((308, 5928, 11408), (80, (1, 2), True), (160, (1, 2), 2)),
        ((10912, 192, 9088), (96, (1, 2), False), (192, (2, 1), 2)),  # on C: N in one column tile
    ],
)
def test_auto_splits_a_narrow_192_row_pick_on_wider_halves(mnk, before, after, monkeypatch):
    """A cooperative 192-row pick at most 96 wide (each warpgroup an m64n48 or narrower) in one wave over a
    long K runs as wider 192-row tiles split over K, on the pick's own output (C or Cᵀ)."""
    m, n, k = mnk
    monkeypatch.setattr(clusters_of_eight, "replaces_split", lambda *_: None)  # the split, not a later 4×2
    decision = decide(BF16, mnk)
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)
    monkeypatch.setattr(pingpong_192, "replaces", lambda *_: None)  # unsplit, the last step runs it ping-pong
    pick = decide(BF16, mnk).config
    width, cluster, swapped = before
    assert (pick.tile_m, pick.tile_n, (pick.cluster_m, pick.cluster_n), pick.swap_ab) == (192, width, cluster, swapped)
    assert (pick.schedule, pick.wg_split, pick.split_k) == (Schedule.COOPERATIVE, "n", 1)
    assert pick.launch_tiles(m, n) <= SMS
    split = decision.config
    width, cluster, parts = after
    assert (split.tile_m, split.tile_n, (split.cluster_m, split.cluster_n)) == (192, width, cluster)
    assert (split.wg_split, split.split_k, split.swap_ab) == ("n", parts, swapped)
    assert split.launch_tiles(m, n) >= split_halves.BUSY_SHARE * SMS
    assert 192 * width / parts <= 192 * pick.tile_n
    assert decision.rule.endswith("split over K on 192-row halves")


@pytest.mark.parametrize(
    "mnk,after",
    [((9248, 168, 12600), (176, (2, 1), 2)), ((151, 10304, 11768), (160, (2, 1), 2))]
    + [((2688, 880, 12872), (224, (1, 2), 2))],
)
def test_a_pick_that_keeps_few_sms_busy_is_split_on_as_many(mnk, after, monkeypatch):
    """Where the pick keeps fewer than ``BUSY_SHARE`` of the SMs busy (192×96 in 1×2 on 98 CTAs, 192×80 on Cᵀ
    on 108, ping-pong 128×176 on 105), a split need only keep as many: 192×176 in 2 parts on 98."""
    m, n, k = mnk
    monkeypatch.setattr(clusters_of_eight, "replaces_split", lambda *_: None)  # the split, not a later 4×2
    decision = decide(BF16, mnk)
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)
    pick = decide(BF16, mnk).config
    busy = split_halves.busy_ctas(pick, m, n, SMS)
    assert busy == pick.launch_tiles(m, n) < split_halves.BUSY_SHARE * SMS
    split = decision.config
    width, cluster, parts = after
    assert (split.tile_m, split.tile_n, (split.cluster_m, split.cluster_n)) == (192, width, cluster)
    assert (split.wg_split, split.split_k, split.swap_ab) == ("n", parts, pick.swap_ab)
    assert busy <= split.launch_tiles(m, n) < split_halves.BUSY_SHARE * SMS
    assert 192 * width / parts <= pick.tile_m * pick.tile_n
    assert f"on {split.launch_tiles(m, n)} of {SMS} SMs" in decision.facts


def test_a_stream_k_pick_keeps_every_sm_busy():
    """Stream-K shares its tiles out among every SM: a split of it must still keep ``BUSY_SHARE`` of them busy
    (9248×200×14696: 192×208 in 2 parts would keep 98)."""
    config = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True)
    assert split_halves.busy_ctas(config, 9248, 200, SMS) == SMS
    assert split_halves.splits(config, 9248, 200, 14696, SMS) is None


@pytest.mark.parametrize(
    "mnk,after",
    [((5848, 392, 12288), (208, (1, 2), 2)), ((11888, 208, 12904), (208, (2, 1), 2))]
    + [((6200, 440, 12240), (224, (1, 2), 2))],
)
def test_auto_splits_a_stream_k_pick_of_less_than_a_wave_on_192_row_halves(mnk, after, monkeypatch):
    """A stream-K pick whose whole tiles are fewer than the SMs (128×256 over a narrow N: the last wave's
    aligned split) runs as 192-row tiles split over K where each CTA then does fewer multiply-adds than the
    stream-K tiles' share per SM."""
    m, n, k = mnk
    decision = decide(BF16, mnk)
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)
    pick = decide(BF16, mnk).config
    assert pick.stream_k and (pick.tile_m, pick.tile_n) == (128, 256)
    whole = -(-m // 128) * -(-n // 256)
    assert whole < SMS
    split = decision.config
    width, cluster, parts = after
    assert (split.tile_m, split.tile_n, (split.cluster_m, split.cluster_n)) == (192, width, cluster)
    assert (split.wg_split, split.split_k, split.stream_k) == ("n", parts, False)
    assert 192 * width / parts <= whole * 128 * 256 / SMS
    assert f"{whole} stream-K tiles of 128×256 shared by {SMS} SMs over a long K" in decision.facts


@pytest.mark.parametrize(
    "config,mnk,parts",
    [
        (tuned_config(192, 96, 1, 2, Schedule.COOPERATIVE, wg_split="n"), (6144, 328, 5880), 2),  # 92 k-tiles
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True), (5912, 440, 6112), 2),  # 96
    ],
)
def test_a_cooperative_pick_splits_into_shorter_parts(config, mnk, parts):
    """Parts of :data:`MIN_PART_K_TILES_COOPERATIVE` k-tiles from a cooperative pick (its epilogue already
    follows its k-loop), of :data:`MIN_PART_K_TILES` from a ping-pong one over the same K."""
    split = split_halves.splits(config, *mnk, SMS)
    k_tiles = -(-mnk[2] // 64)
    assert split.split_k == parts
    assert split_halves.MIN_PART_K_TILES_COOPERATIVE <= k_tiles // parts < split_halves.MIN_PART_K_TILES
    pingpong = tuned_config(128, 152, 1, 2, Schedule.PINGPONG)
    assert split_halves.splits(pingpong, 2832, 600, 5880, SMS) is None  # parts of 46: too short after ping-pong
    assert split_halves.splits(pingpong, 2832, 600, 11496, SMS) is not None


def test_the_fewest_multiply_adds_per_cta_win():
    """At 2832×600×11496 192×160 in 2 parts (15360 per CTA and k) beats 192×208 in 2 (19968) and
    192×304 is past the widest wgmma; three parts of 192×160 would need 180 CTAs."""
    split = split_halves.splits(tuned_config(128, 152, 1, 2, Schedule.PINGPONG), 2832, 600, 11496, SMS)
    assert (split.tile_n, split.split_k) == (160, 2)
    wider = tuned_config(192, 208, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(2)
    assert wider.one_wave_clusters(2832, 600) * 2 <= SMS  # it fits, but each CTA does more
    three = tuned_config(192, 160, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(3)
    assert three.one_wave_clusters(2832, 600) > resident_clusters(2, SMS)


def test_the_explain_line_counts_tiles_parts_and_multiply_adds():
    assert (
        "one 128×152 tile per CTA over a long K: 192×160 tiles whose warpgroups split N, 60 tiles × 2 parts on "
        "120 of 132 SMs, per CTA 15360 multiply-adds per k against 19456"
    ) in decide(BF16, (2832, 600, 11496)).facts


@pytest.mark.parametrize(
    "config,mnk,why",
    [
        (tuned_config(128, 128, 1, 2, Schedule.PINGPONG), (3064, 624, 2632), "parts of 20 k-tiles: 1.134 → 0.994"),
        (tuned_config(64, 104, 4, 1, Schedule.PINGPONG), (5512, 104, 3784), "a cluster of four: 0.950 → 0.641"),
        (tuned_config(64, 64, 2, 1, Schedule.PINGPONG), (8000, 64, 13248), "halves 64 wide: 1.161 → 1.109"),
        (tuned_config(128, 144, 4, 1, Schedule.PINGPONG), (12296, 144, 11392), "a cluster of four: a wash"),
        (tuned_config(128, 152, 1, 2, Schedule.COOPERATIVE), (2832, 600, 11496), "cooperative"),
        (tuned_config(128, 152, 1, 2, Schedule.PINGPONG, swap_ab=True), (2832, 600, 11496), "swapped ping-pong"),
        (tuned_config(128, 144, 1, 2, Schedule.PINGPONG, swap_ab=True), (567, 4096, 14336), "swapped: 0.976 → 0.959"),
        (tuned_config(192, 112, 1, 2, Schedule.COOPERATIVE, wg_split="n"), (12416, 224, 10920), "192 rows, 112 wide"),
        (tuned_config(192, 80, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(2), (5688, 296, 15824), "split"),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True), (20744, 464, 2840), "a wave and more"),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True), (9248, 200, 14696), "98 of 132 busy"),
        (tuned_config(128, 128, 1, 2, Schedule.PINGPONG), (8192, 8192, 8192), "more than one wave"),
        (tuned_config(128, 64, 1, 2, Schedule.PINGPONG), (4096, 64, 16384), "each CTA would do more"),
    ],
)
def test_left_alone(config, mnk, why):
    assert split_halves.splits(config, *mnk, SMS) is None, why


@pytest.mark.parametrize(
    "mnk,problem,why",
    [
        ((2832, 600, 11496), Problem("bf16", bias=True), "measured without a bias"),
        ((3064, 624, 2632), BF16, "K too short for parts of 60 k-tiles"),
        ((12344, 80, 10624), BF16, "a ping-pong pick in clusters of four"),
    ],
)
def test_auto_keeps_its_pick(mnk, problem, why):
    decision = decide(problem, mnk)
    assert "192-row halves" not in decision.rule, why
    assert decision.config.wg_split != "n" or decision.config.split_k == 1, why


def test_without_split_k_or_the_swapped_tiles_auto_keeps_its_pick():
    """``split=False`` leaves split-K out; ``swap=False`` (the comm roles' and gated kernels' picks) every
    step past the table."""
    for kwargs in ({"split": False}, {"swap": False}):
        assert decide(BF16, (2832, 600, 11496), **kwargs).config.split_k == 1, kwargs
