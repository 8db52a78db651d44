"""The communication warp's pacing knob (CommConfig.pace_ns): a nanosleep per copy step, nothing without it."""

from __future__ import annotations

import re

import pytest


def test_pace_adds_one_nanosleep_per_copy_step_and_nothing_else():
    from hopper_gemm.config import Problem
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig
    from tile_comm.launcher import COOPERATIVE_FALLBACK

    plain = fused_resources(COOPERATIVE_FALLBACK, Problem("bf16"), CommConfig("host")).ptx
    paced = fused_resources(COOPERATIVE_FALLBACK, Problem("bf16"), CommConfig("host", pace_ns=4000))
    sleeps = re.findall(r"nanosleep\.u32\s+(\d+)", paced.ptx)
    assert "4000" in sleeps
    assert "4000" not in re.findall(r"nanosleep\.u32\s+(\d+)", plain)
    assert paced.spill_bytes == 0


def test_pace_is_validated():
    from tile_comm.config import CommConfig

    with pytest.raises(ValueError, match=r"pace_ns = -1 is invalid"):
        CommConfig("host", pace_ns=-1)
