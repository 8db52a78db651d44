"""Wide staged subtiles for tiles an odd multiple of 8 wide (``gemm_modes.wide_subtiles``): which subtile the
step takes, where it leaves the pick alone, and what the kernel compiles it to."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("contrib", "examples")]

from gemm_modes import wide_subtiles  # noqa: E402
from gemm_modes.autotable import decide  # noqa: E402
from gemm_modes.modes import tuned_config  # noqa: E402
from hopper_gemm.config import Problem  # noqa: E402

BF16 = Problem("bf16")


def test_subtile_widths_are_the_odd_multiples_of_8_that_divide_the_width():
    assert wide_subtiles.subtile_widths(88) == [88]
    assert wide_subtiles.subtile_widths(216) == [216, 72, 24]
    assert wide_subtiles.subtile_widths(200) == [200, 40]
    assert wide_subtiles.subtile_widths(168) == [168, 56, 24]
    assert wide_subtiles.subtile_widths(152) == [152]


@pytest.mark.parametrize(
    "tile,cluster,schedule,extra,subtile,stages",
    [
        ((128, 88), (1, 2), "pingpong", {}, (64, 88), 7),  # 2 × 11 KiB of staging: 8 → 7 stages
        ((64, 72), (4, 1), "pingpong", {}, (64, 72), 12),
        ((128, 216), (2, 1), "cooperative", {}, (128, 24), 4),  # 72 columns would leave 3
        ((128, 200), (1, 2), "cooperative", {}, (128, 40), 4),  # 200 columns: 4 × 50 KiB do not fit
        ((192, 144), (1, 2), "cooperative", {"wg_split": "n"}, (64, 72), 4),  # each warpgroup's half
        ((128, 120), (2, 1), "cooperative", {"split_k": 4, "staging_in_ring": True}, (128, 24), 7),
    ],
)
def test_the_widest_subtile_that_leaves_the_ring_four_stages(tile, cluster, schedule, extra, subtile, stages):
    pick = tuned_config(*tile, *cluster, schedule, **extra)
    assert pick.epi_n == 8
    wide = wide_subtiles.widened(pick, BF16)
    assert wide.epi_tile == subtile and wide.stages(BF16)[0] == stages
    assert wide.with_(epi_n=8) == pick  # nothing else changed
    assert f"subtiles of {subtile[0]}×{subtile[1]}" in wide_subtiles.describe(wide, pick)


def test_modes_keep_whole_subtiles_per_part_and_per_chunk():
    """Split-K's parts each store whole subtiles: 152 = 8 × 19 has no wide subtile that splits in 2; a
    deferred epilogue storing one subtile per chunk still does (216: 27 chunks → 9)."""
    split = tuned_config(128, 152, 2, 1, "cooperative", split_k=2)
    assert wide_subtiles.widened(split, BF16) is None
    deferred = tuned_config(128, 216, 2, 1, "cooperative", deferred_chunks=27)
    wide = wide_subtiles.widened(deferred, BF16)
    assert (wide.epi_n, wide.deferred_chunks, wide.subtiles) == (24, 9, 9)


def test_left_alone_where_the_subtiles_already_are_wide_or_c_is_column_major_or_the_tile_256_rows():
    for pick in (
        tuned_config(128, 96, 1, 2, "pingpong"),  # 32 columns
        tuned_config(128, 176, 1, 2, "pingpong"),  # 16 columns
        tuned_config(128, 88, 1, 2, "pingpong", swap_ab=True),  # Cᵀ column-major
        tuned_config(128, 96, 1, 2, "pingpong", epi_n=8),  # asked for 8 on an even width
        tuned_config(256, 104, 2, 1, "cooperative"),  # 256 rows: 128×104 subtiles ran at half speed
        tuned_config(256, 120, 2, 1, "cooperative", staging_in_ring=True),  # and 128×120 in the ring
    ):
        assert wide_subtiles.widened(pick, BF16) is None, pick.describe()
    assert wide_subtiles.widened(tuned_config(128, 88, 1, 2, "pingpong"), Problem("bf16", c_major="m")) is None


@pytest.mark.parametrize(
    "mnk,subtile", [((2744, 520, 4568), (64, 88)), ((5064, 640, 2072), (128, 24)), ((21264, 392, 9184), (128, 40))]
)
def test_auto_ends_with_the_wide_subtile_and_says_so(mnk, subtile):
    decision = decide(BF16, mnk)
    assert decision.config.epi_tile == subtile
    assert f"staged in subtiles of {subtile[0]}×{subtile[1]} (one TMA store each)" in decision.facts
    # the comm roles' picks (swap=False) keep the kernel's default subtiles
    assert decide(BF16, mnk, swap=False).config.epi_n in (8, 16, 32)


def test_a_widened_pick_in_the_ring_weighs_its_stages_again():
    """2744×520×4568: ping-pong 128×88 in the ring; its 88-column staging would leave 7 stages of its own,
    the ring holds 8, and at K = 4568 the plain count stays (``single_wave_staging``)."""
    config = decide(BF16, (2744, 520, 4568)).config
    assert config.staging_in_ring and config.stages(BF16)[0] == 7
    assert config.with_(ab_stages=None).stages(BF16)[0] == 8


def test_a_column_major_c_refuses_wide_subtiles_by_name():
    from gemm_modes.launch import compile_report

    with pytest.raises(ValueError, match=r"epi_n = 72 is invalid with Problem.c_major = 'm': allowed 8, 16, 32 or 64"):
        compile_report(tuned_config(128, 72, 1, 2, "pingpong", epi_n=72), Problem("bf16", c_major="m"))


@pytest.mark.parametrize(
    "config,stores",
    [
        (tuned_config(128, 88, 1, 2, "pingpong", epi_n=88), 2),  # 2 warpgroup row blocks of 64×88
        (tuned_config(128, 216, 2, 1, "cooperative", epi_n=24), 9),
        (tuned_config(128, 88, 1, 2, "pingpong"), 22),  # the 8-column subtiles, for contrast
    ],
    ids=lambda c: c.describe() if not isinstance(c, int) else str(c),
)
def test_a_wide_subtile_is_one_tma_store_of_plain_rows(config, stores):
    """Compiled for sm_90a: one 2-D TMA store per subtile, no spills."""
    from compiled_gemm import gemm_report

    report = gemm_report(config, BF16)
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", report.ptx)) == stores
    assert report.spill_bytes == 0
