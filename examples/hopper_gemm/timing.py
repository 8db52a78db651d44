"""Interleaved GPU timing: every contender runs in each round, so clock and power drift hit all alike.

``time_interleaved({"torch": f, "ours": g})`` warms each up, then runs ``rounds`` rounds; in each
round every contender runs ``batch`` launches back to back between two CUDA events. The result per
contender is the median over rounds of the per-launch time in microseconds.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

ROUNDS = 10
BATCH = 10
WARMUP = 3


def _batch_us(fn: Callable[[], object], batch: int) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(batch):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / batch


def time_interleaved(
    contenders: Mapping[str, Callable[[], object]], rounds: int = ROUNDS, batch: int = BATCH
) -> dict[str, float]:
    import torch

    for fn in contenders.values():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            samples[name].append(_batch_us(fn, batch))
    return {name: statistics.median(values) for name, values in samples.items()}
