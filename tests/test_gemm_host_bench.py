"""benchmarks/gemm_host.py without a GPU: bad shapes are refused by name, no GPU is one line and exit 0."""

from __future__ import annotations

import pytest


@pytest.mark.usefixtures("torch_without_gpu")
def test_without_a_gpu_it_says_so_and_exits_0(capsys):
    import gemm_host

    assert gemm_host.main(["--shapes", "64x64x64"]) == 0
    assert "no CUDA GPU" in capsys.readouterr().out


@pytest.mark.parametrize("shapes", ["64x64", "64xAx64"])
def test_malformed_shapes_are_refused_by_name(shapes, capsys):
    import gemm_host

    with pytest.raises(SystemExit):
        gemm_host.main(["--shapes", shapes])
    assert "--shapes" in capsys.readouterr().err
