"""benchmarks/gemm_small_m.py without a GPU: its candidates are the rule's, bad shapes are refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def test_every_pick_of_the_rule_is_a_candidate_and_every_shape_is_small_m():
    import gemm_small_m
    from hopper_gemm.autotable import SMALL_M, SMALL_M_TILES, small_m

    for shape in gemm_small_m.SHAPES:
        assert shape[0] <= SMALL_M
        assert gemm_small_m.name_of(small_m(shape)) in gemm_small_m.CANDIDATES
    assert gemm_small_m.OLD in gemm_small_m.CANDIDATES and len(gemm_small_m.CANDIDATES) == 2 * len(SMALL_M_TILES)


@pytest.mark.parametrize("shapes", ["64x64", "1024x64x64", "64xAx64"])
def test_malformed_shapes_are_refused_by_name(shapes, capsys):
    import gemm_small_m

    with pytest.raises(SystemExit):
        gemm_small_m.main(["--shapes", shapes])
    assert "--shapes" in capsys.readouterr().err
