"""``gemm_modes.tight_width``: auto cuts the pick's width to the fewest columns, in 16-column steps, that keep
its count of column tiles, and where it must not (the arithmetic on the CPU; the kernels on the GPU runner,
``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import itertools

import pytest
from gemm_modes import tight_width
from gemm_modes.autotable import decide
from gemm_modes.modes import tuned_config
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")


def pick_before(mnk, monkeypatch):
    with monkeypatch.context() as patched:
        patched.setattr(tight_width, "tightened", lambda *_: None)
        return decide(BF16, mnk).config


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        ((1600, 1600, 1600), 176, 160),  # ping-pong, 10 column tiles: 160 idle columns → none
        ((1856, 1856, 1856), 256, 240),  # cooperative 128-row, 8 column tiles
        ((780, 9600, 7432), 176, 160),  # swapped 192-row (warpgroups along N): M = 780 in 5 column tiles
    ],
)
def test_auto_cuts_the_width_to_its_column_tiles(mnk, before, after, monkeypatch):
    m, n, _ = mnk
    pick, cut = pick_before(mnk, monkeypatch), decide(BF16, mnk)
    assert (pick.tile_n, cut.config.tile_n) == (before, after)
    assert cut.config == pick.with_(tile_n=after)  # the tile's rows, cluster, schedule and staging kept
    assert cut.config.cluster_tiles(*pick.launch_shape(m, n)) == pick.cluster_tiles(*pick.launch_shape(m, n))
    assert cut.rule.endswith("width cut to its column tiles")


def test_the_explain_line_counts_the_idle_columns():
    assert "width cut to its column tiles: N = 1600 in 10 column tiles of 160 (0 columns idle; of 176: 160)" in (
        decide(BF16, (1600, 1600, 1600)).facts
    )


@pytest.mark.parametrize("width", [64, 96, 128, 136, 176, 192, 208, 256])
def test_the_cut_is_the_narrowest_16_column_width_that_keeps_the_count(width):
    config = tuned_config(128, width, 2, 1, Schedule.PINGPONG if width <= 192 else Schedule.COOPERATIVE)
    for side in itertools.chain(range(57, 1200, 37), range(1200, 9000, 311)):
        count = -(-side // width)
        cut = tight_width.tightened(config, 4096, side)
        if cut is None:  # no narrower width in 16-column steps (and at least 64) keeps the count
            narrower = width - width % 16 if width % 16 else width - 16
            assert narrower < 64 or -(-side // narrower) > count, (width, side)
            continue
        assert cut.tile_n % 16 == 0 and 64 <= cut.tile_n < width and -(-side // cut.tile_n) == count
        assert cut.tile_n - 16 < 64 or -(-side // (cut.tile_n - 16)) > count  # the narrowest such


@pytest.mark.parametrize(
    "config",
    [
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, split_k=2),
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True),
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, deferred_chunks=8),
    ],
    ids=["split-K", "stream-K", "deferred"],
)
def test_splits_and_deferred_epilogues_keep_their_width(config):
    assert tight_width.tightened(config, 1856, 1856) is None


@pytest.mark.parametrize(
    "mnk,problem,why",
    [
        ((1664, 1664, 1664), BF16, "128×176 in 10 column tiles: 168 is no 16-column step"),
        ((2192, 80, 2232), BF16, "64×64 in 2 column tiles: 48 is below the narrowest width"),
        ((1600, 1600, 1600), Problem("bf16", bias=True), "measured without a bias"),
        ((8192, 8192, 8192), BF16, "stream-K"),
    ],
)
def test_auto_leaves_the_width_alone(mnk, problem, why):
    assert "width cut" not in decide(problem, mnk).rule, why
