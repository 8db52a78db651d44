"""``gemm_modes.half_rows``: auto turns a one-wave ping-pong 128-row pick into 64-row tiles twice as wide in
clusters of four along M (of two on a square-ish output), and where it must not (the arithmetic on the
CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import clusters_of_eight, half_rows, split_halves  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.clusters_of_four import resident_clusters  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,before,width,cluster",
    [
        ((1136, 1136, 1136), (128, 88), 192, 4),  # 18 × 6 tiles in 30 clusters of four: the most held at once
        ((1048, 1048, 1048), (128, 80), 176, 4),  # 192 would fit too: the narrowest that fits
        ((7120, 144, 2352), (128, 72), 144, 4),  # N in one column tile where 128×72 took two in 1×2
        ((462, 2112, 2048), (128, 64), 144, 4),  # 8 row tiles of 64: two cluster rows
        ((2208, 544, 7384), (128, 112), 184, 4),  # an odd multiple of 8 (wide subtiles)
        ((2328, 752, 8064), (128, 128), 256, 4),  # the widest wgmma
        ((677, 2392, 13648), (128, 112), 240, 4),
        ((1384, 1384, 1384), (128, 128), 232, 2),  # no four fits; square: 22 × 6 tiles in 66 pairs
        ((1632, 1136, 5888), (128, 128), 232, 2),  # M and N within 2×: 64×232 holds 0.906 of 128×128
    ],
)
def test_auto_takes_64_rows_twice_as_wide(mnk, before, width, cluster, monkeypatch):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    monkeypatch.setattr(half_rows, "halved", lambda *_: None)  # the pick the step replaced
    monkeypatch.setattr(split_halves, "splits", lambda *_: None)  # (not the step after it)
    monkeypatch.setattr(clusters_of_eight, "widened", lambda *_: None)  # (nor the last step's 4×2 of it)
    pick = decide(BF16, mnk).config
    assert (pick.tile_m, pick.tile_n, pick.schedule, pick.cluster_size) == (*before, Schedule.PINGPONG, 2)
    assert pick.cluster_tiles(m, n) <= SMS // 2  # one wave: a tile per CTA
    wide = decision.config
    assert (wide.tile_m, wide.tile_n, wide.cluster_m, wide.cluster_n, wide.schedule) == (
        64,
        width,
        cluster,
        1,
        Schedule.PINGPONG,
    )
    assert wide.cluster_tiles(m, n) <= resident_clusters(cluster, SMS)
    narrower = [tuned_config(64, w, cluster, 1, Schedule.PINGPONG) for w in half_rows.WIDTHS if w < width]
    assert all(other.cluster_tiles(m, n) > resident_clusters(cluster, SMS) for other in narrower)
    if cluster == 2:  # pairs only where no width's fours fit, and only on a square-ish output
        fours = [tuned_config(64, w, 4, 1, Schedule.PINGPONG) for w in half_rows.WIDTHS]
        assert all(f.cluster_tiles(m, n) > resident_clusters(4, SMS) for f in fours)
        assert max(m, n) <= half_rows.SQUARE_RATIO * min(m, n)
        assert 64 * width <= half_rows.PAIR_SHARE * pick.tile_m * pick.tile_n
    assert decision.rule.endswith("in 64-row tiles twice as wide")


def test_widths_step_by_8_to_the_widest_wgmma():
    assert half_rows.WIDTHS[0] == 144 and half_rows.WIDTHS[-1] == 256
    assert all(b - a == 8 for a, b in zip(half_rows.WIDTHS[:-1], half_rows.WIDTHS[1:], strict=True))


def test_the_explain_line_counts_the_tiles_and_the_clusters():
    assert (
        "one 128×88 tile per CTA: 64×192 tiles instead (18 × 6 in 30 clusters of four along M, ≤ 30 at once), "
        "one m64n192 wgmma per k-step where 128×88 takes two of n88"
    ) in decide(BF16, (1136, 1136, 1136)).facts
    assert (
        "one 128×128 tile per CTA: 64×232 tiles instead (22 × 6 in 66 clusters of two along M, ≤ 66 at once), "
        "one m64n232 wgmma per k-step where 128×128 takes two of n128"
    ) in decide(BF16, (1384, 1384, 1384)).facts


@pytest.mark.parametrize(
    "config,mnk,why",
    [
        (tuned_config(64, 128, 1, 2, Schedule.PINGPONG), (1024, 1024, 1024), "64 rows already: 64×160 ran 13 % slower"),
        (tuned_config(128, 128, 2, 1, Schedule.COOPERATIVE), (1024, 1024, 1024), "cooperative"),
        (tuned_config(128, 88, 1, 2, Schedule.PINGPONG, swap_ab=True), (1136, 1136, 1136), "swapped"),
        (tuned_config(128, 88, 4, 1, Schedule.PINGPONG), (1136, 1136, 1136), "a cluster of four already"),
        (tuned_config(128, 128, 1, 2, Schedule.PINGPONG), (4096, 4096, 4096), "more than one wave"),
        (tuned_config(128, 160, 1, 2, Schedule.PINGPONG), (1600, 1600, 1600), "no width fits in fours or pairs"),
        # pairs would fit (64×240 2×1), but off the squares they lost on 6 of 13 shapes
        (tuned_config(128, 120, 1, 2, Schedule.PINGPONG), (2680, 712, 2248), "no four fits; not square-ish"),
        # 64×224 pairs fit but hold as many outputs as 128×112: such pairs gained on squares, lost on 8 of 11 others
        (tuned_config(128, 112, 1, 2, Schedule.PINGPONG), (1304, 1304, 1304), "pairs no smaller than the pick"),
    ],
)
def test_left_alone(config, mnk, why):
    assert half_rows.halved(config, mnk[0], mnk[1], SMS) is None, why


@pytest.mark.parametrize(
    "mnk,problem,why",
    [
        ((1136, 1136, 1136), Problem("bf16", bias=True), "measured without a bias"),
        ((1024, 1024, 1024), BF16, "a 64-row pick"),
        ((128, 4096, 14336), BF16, "M in two 64-row tiles: the small-M rule's 64×64"),
    ],
)
def test_auto_keeps_its_pick(mnk, problem, why):
    decision = decide(problem, mnk)
    assert "64-row tiles twice as wide" not in decision.rule, why
    assert decision.config.tile_m != 64 or decision.config.cluster_size != 4 or decision.config.tile_n < 144, why


def test_comm_roles_keep_their_pick():
    """``swap=False`` (the comm roles' and gated kernels' picks): no cluster of four has run with them."""
    assert decide(BF16, (1136, 1136, 1136), swap=False).config.cluster_size == 2
