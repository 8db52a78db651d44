"""CUDA-event timing in one process: the kernel, torch, and a device-to-device copy of the same bytes.

Every figure is the median over ``repeats`` of (events around ``iters`` back-to-back calls) / ``iters``,
after a warm-up; tensors are larger than L2 for the bandwidth figures, so each call reads DRAM.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


def time_us(fn: Callable[[], Any], *, iters: int = 20, repeats: int = 5, warmup: int = 3) -> float:
    """Median microseconds per call of ``fn`` (back-to-back calls on the current stream)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(samples)


def host_us(fn: Callable[[], Any], *, iters: int = 50, repeats: int = 7, warmup: int = 3) -> float:
    """Median microseconds of host time per call: ``iters`` calls timed with ``perf_counter`` and no
    synchronization inside (the launch queue holds them), the GPU drained between repeats. Next to
    :func:`time_us` of the same calls it says what bounds them: equal means the host is the limit."""
    import time

    import torch

    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - start) * 1e6 / iters)
    torch.cuda.synchronize()
    return statistics.median(samples)


def graph_us(fn: Callable[[], Any], *, iters: int = 20, repeats: int = 5) -> float | None:
    """Median microseconds per call with ``iters`` calls captured in one CUDA graph (no host overhead);
    None when ``fn`` cannot be captured."""
    import torch

    try:
        fn()
        torch.cuda.synchronize()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
            for _ in range(iters):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - capture support varies; the figure is optional
        return None
    return time_us(graph.replay, iters=1, repeats=repeats) / iters


def copy_gbps(total_bytes: int, device: Any, *, iters: int = 20, repeats: int = 5) -> float:
    """Bandwidth of ``dst.copy_(src)`` moving ``total_bytes`` (half read, half written), GB/s."""
    import torch

    half = total_bytes // 2
    src = torch.empty(half, dtype=torch.uint8, device=device)
    src.random_()  # not zeros: a compressible pattern could flatter the copy
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), iters=iters, repeats=repeats)
    return 2 * half / us / 1e3
