"""``gemm_modes.half_rows``: auto turns a one-wave ping-pong 128-row pick into 64-row tiles twice as wide in
clusters of four along M, and where it must not (the arithmetic on the CPU; the kernels on the GPU runner,
``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import half_rows  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.clusters_of_four import resident_clusters  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem, Schedule  # noqa: E402

BF16 = Problem("bf16")
SMS = 132


@pytest.mark.parametrize(
    "mnk,before,width",
    [
        ((1136, 1136, 1136), (128, 88), 192),  # 18 × 6 tiles in 30 clusters of four: the most held at once
        ((1048, 1048, 1048), (128, 80), 176),  # 192 would fit too: the narrowest that fits
        ((7120, 144, 2352), (128, 72), 144),  # N in one column tile where 128×72 took two in 1×2
        ((462, 2112, 2048), (128, 64), 144),  # 8 row tiles of 64: two cluster rows
        ((2208, 544, 7384), (128, 112), 192),
    ],
)
def test_auto_takes_64_rows_twice_as_wide(mnk, before, width, monkeypatch):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    monkeypatch.setattr(half_rows, "halved", lambda *_: None)  # the pick the step replaced
    pick = decide(BF16, mnk).config
    assert (pick.tile_m, pick.tile_n, pick.schedule, pick.cluster_size) == (*before, Schedule.PINGPONG, 2)
    assert pick.cluster_tiles(m, n) <= SMS // 2  # one wave: a tile per CTA
    wide = decision.config
    assert (wide.tile_m, wide.tile_n, wide.cluster_m, wide.cluster_n, wide.schedule) == (
        64,
        width,
        4,
        1,
        Schedule.PINGPONG,
    )
    assert wide.cluster_tiles(m, n) <= resident_clusters(4, SMS)
    narrower = [w for w in half_rows.WIDTHS if w < width]
    assert all(wide.with_(tile_n=w).cluster_tiles(m, n) > resident_clusters(4, SMS) for w in narrower)
    assert decision.rule.endswith("in 64-row tiles twice as wide")


def test_the_explain_line_counts_the_tiles_and_the_clusters():
    assert (
        "one 128×88 tile per CTA: 64×192 tiles instead (18 × 6 in 30 clusters of four along M, ≤ 30 at once), "
        "one m64n192 wgmma per k-step where 128×88 takes two of n88"
    ) in decide(BF16, (1136, 1136, 1136)).facts


@pytest.mark.parametrize(
    "config,mnk,why",
    [
        (tuned_config(64, 128, 1, 2, Schedule.PINGPONG), (1024, 1024, 1024), "64 rows already: 64×160 ran 13 % slower"),
        (tuned_config(128, 128, 2, 1, Schedule.COOPERATIVE), (1024, 1024, 1024), "cooperative"),
        (tuned_config(128, 88, 1, 2, Schedule.PINGPONG, swap_ab=True), (1136, 1136, 1136), "swapped"),
        (tuned_config(128, 88, 4, 1, Schedule.PINGPONG), (1136, 1136, 1136), "a cluster of four already"),
        (tuned_config(128, 128, 1, 2, Schedule.PINGPONG), (4096, 4096, 4096), "more than one wave"),
        (tuned_config(128, 160, 1, 2, Schedule.PINGPONG), (1600, 1600, 1600), "no width's fours fit at once"),
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
