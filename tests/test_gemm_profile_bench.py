"""benchmarks/gemm_profile.py without a GPU: a tile order it cannot build is refused by name, before torch."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--group", "0"], "GemmConfig.group = 0 is invalid: allowed an int in [1, 64]"),
        (["--group", "65", "--raster", "n"], "GemmConfig.group = 65 is invalid"),
        (["--raster", "k"], "argument --raster: invalid choice: 'k'"),
        (["--stream-k", "sideways"], "argument --stream-k: invalid choice: 'sideways'"),
    ],
)
def test_a_tile_order_it_cannot_build_is_refused_by_name(argv, message, capsys, monkeypatch):
    import gemm_profile

    monkeypatch.setitem(sys.modules, "torch", None)  # refused before torch is needed
    with pytest.raises(SystemExit) as exit_info:
        gemm_profile.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
