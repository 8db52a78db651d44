"""``gemm_modes.tight_width``: auto cuts the pick's width to the fewest columns, in 8-column steps (16 where an
odd multiple of 8 does not pay), that keep its count of column tiles, and where it must not (the arithmetic
on the CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import itertools

import pytest
from gemm_modes import tight_width, wide_subtiles
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
        ((2616, 608, 5336), 112, 104),  # ping-pong, 6 column tiles: 104 in 64×104 subtiles
        ((1648, 1648, 1648), 176, 168),  # ping-pong, 10 column tiles: 168 in 64×168 subtiles
        ((787, 7168, 18432), 96, 88),  # swapped cooperative 256-row: Cᵀ column-major, M = 787 in 9 tiles
    ],
)
def test_auto_cuts_the_width_to_its_column_tiles(mnk, before, after, monkeypatch):
    m, n, _ = mnk
    pick, cut = pick_before(mnk, monkeypatch), decide(BF16, mnk)
    assert (pick.tile_n, cut.config.tile_n) == (before, after)
    kept = cut.config.with_(epi_n=None, ab_stages=None)  # wide subtiles, last, may re-weigh the ring
    assert kept == pick.with_(tile_n=after, ab_stages=None)  # the tile's rows, cluster, schedule and staging kept
    assert cut.config.cluster_tiles(*pick.launch_shape(m, n)) == pick.cluster_tiles(*pick.launch_shape(m, n))
    assert cut.rule.endswith("width cut to its column tiles")


def test_the_explain_line_counts_the_idle_columns():
    assert "width cut to its column tiles: N = 1600 in 10 column tiles of 160 (0 columns idle; of 176: 160)" in (
        decide(BF16, (1600, 1600, 1600)).facts
    )


@pytest.mark.parametrize(
    "config",
    [tuned_config(128, w, 2, 1, Schedule.PINGPONG) for w in (64, 96, 112, 136, 176, 192)]
    + [tuned_config(128, w, 2, 1, Schedule.COOPERATIVE) for w in (208, 256)]
    + [tuned_config(128, 192, 4, 1, Schedule.PINGPONG), tuned_config(128, 112, 2, 1, Schedule.PINGPONG, swap_ab=True)]
    + [tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n")],
    ids=lambda c: c.describe(),
)
def test_the_cut_is_the_narrowest_width_that_keeps_the_count(config):
    """8-column steps where the odd multiple of 8 is taken, 16-column ones otherwise; never a wider tile or
    one that changes the count of column tiles."""
    width = config.tile_n
    for side in itertools.chain(range(57, 1200, 37), range(1200, 9000, 311)):
        m, n = (side, 4096) if config.swap_ab else (4096, side)
        count = -(-side // width)
        keeps = [w for w in range(64, width, 8) if -(-side // w) == count and taken(config, w)]
        cut = tight_width.tightened(config, m, n, BF16)
        assert (cut.tile_n if cut else None) == (min(keeps) if keeps else None), (width, side)
        assert cut is None or cut == config.with_(tile_n=cut.tile_n)


def taken(config, width):
    """Whether the rule may cut ``config`` to ``width`` (a 16-column multiple always)."""
    return width % 16 == 0 or tight_width.takes_odd_eights(config, width, BF16)


@pytest.mark.parametrize(
    "config,width,why",
    [
        (tuned_config(128, 192, 4, 1, Schedule.PINGPONG), 184, "a cluster of four"),
        (tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n"), 168, "halves of 84 columns"),
        (tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE), 248, "8-column subtiles: 248 leave the ring 3 stages"),
    ],
)
def test_odd_multiples_of_8_refused(config, width, why):
    assert not tight_width.takes_odd_eights(config, width, BF16), why


def test_odd_multiples_of_8_taken():
    assert tight_width.takes_odd_eights(tuned_config(128, 176, 1, 2, Schedule.PINGPONG), 168, BF16)
    assert tight_width.takes_odd_eights(tuned_config(256, 112, 2, 1, Schedule.COOPERATIVE, swap_ab=True), 104, BF16)
    assert wide_subtiles.widened(tuned_config(128, 168, 1, 2, Schedule.PINGPONG), BF16).epi_n == 168


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
    assert tight_width.tightened(config, 1856, 1856, BF16) is None


@pytest.mark.parametrize(
    "mnk,problem,why",
    [
        ((1960, 1960, 1960), BF16, "cooperative 128×256 in 8 column tiles: 248 would store 8-column subtiles"),
        ((13616, 168, 4472), BF16, "ping-pong 128×176 in clusters of four: 168 keeps no 16-column step"),
        ((2192, 80, 2232), BF16, "64×64 in 2 column tiles: 48 is below the narrowest width"),
        ((1600, 1600, 1600), Problem("bf16", bias=True), "measured without a bias"),
        ((8192, 8192, 8192), BF16, "stream-K"),
    ],
)
def test_auto_leaves_the_width_alone(mnk, problem, why):
    assert "width cut" not in decide(problem, mnk).rule, why
