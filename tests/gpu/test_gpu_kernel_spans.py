"""GPU test: ``kernel_tools.timing.kernel_spans`` reads every kernel of a replayed CUDA graph from CUPTI
(torch.profiler), and its durations, gaps and names are what a kernel of known length gives."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

LAUNCHES = 5
REPLAYS = 3


def test_every_kernel_of_the_replays_is_seen_with_its_duration():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernel_tools.timing import graphed, kernel_spans

    # A matmul long enough (~0.2 ms on an H100) that CUPTI's microsecond timestamps resolve it well.
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    replay = graphed(lambda: torch.matmul(a, a), LAUNCHES)
    span = kernel_spans(replay, REPLAYS)
    assert span.kernels >= LAUNCHES * REPLAYS  # one replay before profiling is not counted
    assert 20.0 < span.duration < 20_000.0, span
    assert 0.0 <= span.gap < span.duration, span
    # cuBLAS's kernel, named as CUPTI names it (``gemm.py --sweep --torch-kernels`` prints these)
    assert span.names and all(isinstance(name, str) and name for name in span.names), span.names
    assert any("gemm" in name.lower() or "nvjet" in name for name in span.names), span.names
