"""``gemm_modes.paired_rows``: auto takes a short M's swapped 192-row pick into 256-row tiles where they are
faster by ``tile_time`` and pad no pair with an idle CTA, and where it must not (the arithmetic checked on the
CPU; the kernels on the GPU runner, ``tests/gpu/test_gpu_gemm.py``)."""

from __future__ import annotations

import pytest
from gemm_modes import paired_rows, short_side
from gemm_modes.autotable import decide
from gemm_modes.modes import tuned_config
from gemm_modes.tile_time import tile_time
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")


def shape_of(config):
    return config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, config.swap_ab


@pytest.mark.parametrize(
    "mnk,before,after",
    [
        # cuBLAS's tile: N in 72 row tiles of 256 (96 of 192), M in 3 column tiles of 104, pairs along N
        ((298, 18432, 7168), (192, 160, 1, 2), (256, 104, 2, 1)),
        # from 192×192 in 2×1 (M in 3 column tiles) to 4 column tiles of 136, pairs along M
        ((541, 8192, 28672), (192, 192, 2, 1), (256, 136, 1, 2)),
        ((428, 22008, 8856), (192, 144, 2, 1), (256, 144, 2, 1)),  # 86 row tiles of 256 in 43 pairs
    ],
)
def test_auto_takes_a_short_m_into_256_row_tiles(mnk, before, after, monkeypatch):
    m, n, _ = mnk
    decision = decide(BF16, mnk)
    tile = decision.config
    assert shape_of(tile) == (*after, True) and decision.rule.endswith(", in 256-row tiles")
    assert tile.schedule is Schedule.COOPERATIVE and tile.wg_split == "m"  # each warpgroup 128 rows, all columns
    with monkeypatch.context() as patched:
        patched.setattr(paired_rows, "replaces", lambda *_: None)
        pick = decide(BF16, mnk).config
    assert shape_of(pick) == (*before, True) and pick.wg_split == "n"
    assert tile_time(tile, n, m, 132) * short_side.MARGIN < tile_time(pick, n, m, 132)
    assert paired_rows.pairs(tile, n)


def test_the_explain_line_counts_the_row_tiles_and_the_estimate():
    decision = decide(BF16, (298, 18432, 7168))
    assert decision.facts.endswith(
        "N = 18432 in 72 row tiles of 256 (cluster 2×1) against 96 of 192, M = 298 in 3 column tiles of 104: "
        "per SM 57600 against 61440 (tile_time)"
    )


@pytest.mark.parametrize(
    "problem,mnk,why",
    [
        (BF16, (301, 10456, 16272), "41 row tiles of 256 in pairs along N: one pair would idle a CTA"),
        (BF16, (324, 17000, 4048), "67 row tiles of 256: the same"),
        (Problem("bf16", bias=True), (298, 18432, 7168), "measured without a bias"),
        (BF16, (18432, 298, 7168), "a short N, not a short M"),
        (BF16, (4096, 4096, 4096), "no short side"),
    ],
)
def test_auto_leaves_the_pick_where_it_must(problem, mnk, why):
    assert "256-row tiles" not in decide(problem, mnk).rule, why


def test_pairs_counts_the_row_tiles_of_n_for_a_cluster_along_them():
    along_n = tuned_config(256, 104, 2, 1, Schedule.COOPERATIVE, swap_ab=True)
    along_m = tuned_config(256, 136, 1, 2, Schedule.COOPERATIVE, swap_ab=True)
    assert paired_rows.pairs(along_n, 18432)  # 72 row tiles
    assert not paired_rows.pairs(along_n, 10456)  # 41
    assert paired_rows.pairs(along_m, 10456)  # a pair of M's column tiles shares each row tile


def test_replaces_takes_swapped_192_row_picks_of_a_short_m_only():
    swapped_192 = tuned_config(192, 160, 1, 2, Schedule.COOPERATIVE, wg_split="n", swap_ab=True)
    assert shape_of(paired_rows.replaces(swapped_192, 298, 18432, 132)) == (256, 104, 2, 1, True)
    unswapped = tuned_config(192, 160, 1, 2, Schedule.COOPERATIVE, wg_split="n")
    assert paired_rows.replaces(unswapped, 298, 18432, 132) is None
    pingpong = tuned_config(128, 144, 1, 2, Schedule.PINGPONG, swap_ab=True)
    assert paired_rows.replaces(pingpong, 298, 18432, 132) is None
    assert paired_rows.replaces(swapped_192.with_split_k(2), 298, 18432, 132) is None  # a split keeps its tile
    assert paired_rows.replaces(swapped_192, 700, 18432, 132) is None  # past short_side.PADDING_ALONE_MAX
