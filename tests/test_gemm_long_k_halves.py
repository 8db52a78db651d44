"""``gemm_modes.long_k_halves``: auto runs ``long_k``'s split-K on cooperative 128-row tiles as 192-row tiles
whose warpgroups split N, in 1×2 pairs, as many parts or fewer, where each CTA then does fewer multiply-adds,
and where it must not (the arithmetic on the CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import long_k, long_k_halves  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.clusters_of_four import resident_clusters  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


def _without_the_step(mnk, monkeypatch):
    """Auto's pick for ``mnk`` were the step not there: ``long_k``'s split."""
    monkeypatch.setattr(long_k_halves, "replaces", lambda *_: None)
    return decide(BF16, mnk)


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((2864, 432, 7216), (216, 2, False), (112, 2)),  # 92 CTAs → 15 × 4 tiles × 2 parts = 120
        ((4144, 232, 2720), (232, 2, False), (128, 2)),  # N in one column tile → two of 128
        ((2064, 504, 4192), (256, 3, False), (128, 3)),
        ((254, 2088, 15320), (256, 7, True), (128, 6)),  # on Cᵀ, one part fewer
        ((3024, 216, 9680), (216, 5, False), (112, 4)),
    ],
)
def test_auto_runs_a_long_k_split_on_192_row_halves(mnk, before, after, monkeypatch):
    m, n, k = mnk
    decision = decide(BF16, mnk)
    split = _without_the_step(mnk, monkeypatch).config
    width, parts, swapped = before
    assert (split.tile_m, split.tile_n, split.split_k, split.swap_ab) == (128, width, parts, swapped)
    assert split.schedule is Schedule.COOPERATIVE
    halves = decision.config
    width, parts = after
    assert (halves.tile_m, halves.tile_n, (halves.cluster_m, halves.cluster_n)) == (192, width, (1, 2))
    assert (halves.schedule, halves.wg_split, halves.split_k) == (Schedule.COOPERATIVE, "n", parts)
    assert halves.swap_ab == split.swap_ab
    assert 2 <= parts <= split.split_k
    assert -(-k // 64) // parts >= long_k.MIN_PART_K_TILES
    rows, cols = halves.launch_shape(m, n)
    assert halves.one_wave_clusters(rows, cols) <= resident_clusters(2, SMS)
    assert halves.launch_tiles(m, n) >= split.launch_tiles(m, n)  # at least as many CTAs busy
    assert 192 * width / parts < split.tile_m * split.tile_n / split.split_k  # fewer multiply-adds per CTA
    assert decision.rule.endswith("over a long K, on 192-row halves")


def test_the_explain_line_counts_ctas_and_multiply_adds():
    facts = decide(BF16, (2864, 432, 7216)).facts
    assert (
        "on 192-row halves: 192×112 tiles whose warpgroups split N, 2 parts on 120 CTAs (the 128-row split: 92), "
        "per CTA 10752 multiply-adds per k against 13824"
    ) in facts
    assert facts.startswith("N = 432 ≤ 512, K = 7216")  # long_k's clause first


@pytest.mark.parametrize(
    "mnk,why",
    [
        ((2464, 520, 12600), "only 1×1 halves keep 240 CTAs busy: 1.372 → 0.987"),
        ((506, 2264, 6184), "only 2×1 halves, in fewer parts: 0.958 → 0.789"),
    ],
)
def test_halves_outside_a_pair_along_n_are_left_out(mnk, why, monkeypatch):
    split = _without_the_step(mnk, monkeypatch).config
    assert long_k_halves.replaceable(split)
    monkeypatch.undo()
    assert decide(BF16, mnk).config == split, why
    assert long_k_halves.replaces(split, mnk, SMS) is None


@pytest.mark.parametrize(
    "config,mnk,why",
    [
        (tuned_config(128, 152, 1, 2, Schedule.PINGPONG), (2832, 600, 11496), "not split"),
        (tuned_config(192, 80, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(2), (5688, 296, 15824), "192"),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True), (5848, 392, 12288), "stream-K"),
        (tuned_config(256, 128, 2, 1, Schedule.COOPERATIVE).with_split_k(2), (2832, 600, 11496), "256 rows"),
    ],
)
def test_only_cooperative_128_row_splits_are_weighed(config, mnk, why):
    assert not long_k_halves.replaceable(config), why
    assert long_k_halves.replaces(config, mnk, SMS) is None


def test_halves_of_as_many_multiply_adds_are_left_out():
    """128×192 in 2 parts and 192×128 in 2 both do 12288 multiply-adds per CTA and k-step: no gain to take."""
    split = tuned_config(128, 192, 1, 2, Schedule.COOPERATIVE).with_split_k(2)
    assert long_k_halves.per_cta_work(split) == 192 * 128 / 2
    assert long_k_halves.replaces(split, (2880, 256, 8192), SMS) is None
    wider = tuned_config(128, 256, 1, 2, Schedule.COOPERATIVE).with_split_k(2)
    assert long_k_halves.replaces(wider, (2880, 256, 8192), SMS).tile_n == 128


def test_parts_keep_long_ks_fewest_k_tiles():
    """Parts under ``long_k.MIN_PART_K_TILES`` k-tiles are not weighed: 2 parts of 16 at K = 2048, none at
    K = 1984 (31 k-tiles)."""
    split = tuned_config(128, 256, 1, 2, Schedule.COOPERATIVE).with_split_k(2)
    assert long_k_halves.replaces(split, (2880, 256, 2048), SMS).split_k == 2
    assert long_k_halves.replaces(split, (2880, 256, 1984), SMS) is None


@pytest.mark.parametrize(
    "mnk,problem,widths,why",
    [
        ((2864, 432, 7216), Problem("bf16", bias=True), True, "measured without a bias"),
        ((2864, 432, 7216), BF16, False, "the halves' widths lie between the powers of two"),
    ],
)
def test_auto_keeps_the_128_row_split(mnk, problem, widths, why):
    decision = decide(problem, mnk, widths=widths)
    assert decision.config.tile_m != 192, why
    assert not decision.rule.endswith("on 192-row halves")
