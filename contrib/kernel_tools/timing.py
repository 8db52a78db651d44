"""Interleaved GPU timing: every contender runs in each round, so clock and power drift hit all alike.

``time_interleaved({"torch": f, "ours": g})`` warms each up, then runs ``rounds`` rounds; in each
round every contender runs ``batch`` launches back to back between two CUDA events. The result per
contender is the median over rounds of the per-launch time in microseconds.

``rotate``: round r starts with the r-th contender (the order's own bias averages out over rounds).
``queue_ahead_us``: before ``settle``, the stream is held that long by a spinning kernel (so before the
batch's first event), so the host queues the whole batch while the GPU waits: the batch then measures the GPU
alone, not the host's time to queue its first launches (which a short batch of a launch made of several
calls, e.g. a kernel plus copy-stream graph replays, would otherwise carry).
``settle``: run (untimed) before every batch, so each batch starts from the same power state. Without it
a contender inherits its predecessor's: on an H100 at its power cap, 3 ms GEMMs timed right after a copy
(the GPU cooler) ran up to 10 % faster than the same kernel timed right after another GEMM.

``time_paired(base, other)`` answers the narrower question "how much slower is ``other`` than ``base``?"
for two kernels of the same power profile: each round times the two batches back to back (alternating
which goes first) and keeps the round's ratio, so drift between rounds cancels; the result is the median
ratio and its quartiles.
"""

from __future__ import annotations

import statistics
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

ROUNDS = 10
BATCH = 10
WARMUP = 3


def graphed(fn: Callable[[], object], repeat: int = 1) -> Callable[[], object]:
    """``repeat`` calls of ``fn`` (each one kernel launch, e.g. ``torch.matmul``) captured in one CUDA graph:
    the returned callable replays them on the current stream. Timed as one batch of ``repeat`` launches it
    measures the GPU alone: a call through torch's dispatcher costs the host 10–40 µs (host-dependent) and
    even a graph replay about 5 µs, longer than the smallest GEMMs."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (library handles, workspaces)
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(repeat):
            fn()
    return graph.replay


_CYCLES_PER_US: list[float] = []


def hold_stream(us: float) -> None:
    """Queue a kernel that spins about ``us`` µs on the current stream (``torch.cuda._sleep``; its clock
    rate measured once with CUDA events, the spin counting SM clock cycles)."""
    import torch

    if not hasattr(torch.cuda, "_sleep"):  # a private torch API: without it the batch is not held
        warnings.warn("this torch has no torch.cuda._sleep: batches are timed without queue_ahead_us", stacklevel=3)
        return
    if not _CYCLES_PER_US:
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # warm: the first launch carries module loading
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        _CYCLES_PER_US.append(cycles / (start.elapsed_time(end) * 1000))
    torch.cuda._sleep(int(us * _CYCLES_PER_US[0]))


def _batch_us(
    fn: Callable[[], object],
    batch: int,
    settle: Callable[[], object] | None = None,
    queue_ahead_us: float = 0,
    label: str = "a contender",
) -> float:
    import torch

    if queue_ahead_us > 0:
        hold_stream(queue_ahead_us)
    if settle is not None:  # after the hold: a collective settle aligns the ranks the spins left apart
        settle()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    last, starved = start, False
    for _ in range(batch):
        fn()
        if queue_ahead_us > 0:
            # the GPU reached the end of what was queued before the host queued this launch: it waited
            starved |= last.query()
            last = torch.cuda.Event()
            last.record()
    end.record()
    if starved:
        warnings.warn(
            f"{label}: the GPU waited for the host within a batch of {batch} "
            f"(queue_ahead_us={queue_ahead_us:g} too short, or a launch that waits for the GPU)",
            stacklevel=3,
        )
    end.synchronize()
    return start.elapsed_time(end) * 1000 / batch


def time_interleaved(
    contenders: Mapping[str, Callable[[], object]],
    rounds: int = ROUNDS,
    batch: int = BATCH,
    settle: Callable[[], object] | None = None,
    rotate: bool = False,
    *,
    queue_ahead_us: float = 0,
) -> dict[str, float]:
    """The median over rounds of each contender's µs per launch (:func:`interleaved_samples`)."""
    samples = interleaved_samples(contenders, rounds, batch, settle, rotate, queue_ahead_us=queue_ahead_us)
    return {name: statistics.median(values) for name, values in samples.items()}


def interleaved_samples(
    contenders: Mapping[str, Callable[[], object]],
    rounds: int = ROUNDS,
    batch: int = BATCH,
    settle: Callable[[], object] | None = None,
    rotate: bool = False,
    *,
    queue_ahead_us: float = 0,
) -> dict[str, list[float]]:
    """Each contender's µs per launch in every round, in round order (the module docstring)."""
    import torch

    for fn in contenders.values():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        # rotate: round r starts at contender r, so each one follows every other equally often.
        order = names[r % len(names) :] + names[: r % len(names)] if rotate else names
        for name in order:
            samples[name].append(_batch_us(contenders[name], batch, settle, queue_ahead_us, name))
    return samples


@dataclass(frozen=True)
class KernelSpan:
    """CUPTI's view of a replayed batch (torch.profiler): the median kernel duration and the median gap
    from one kernel's end to the next one's start, in µs, over ``kernels`` kernels, and the kernels'
    ``names``, most launched first (which kernel a library picked: cuBLAS's names encode tile and cluster)."""

    duration: float
    gap: float
    kernels: int
    names: tuple[str, ...] = ()


def kernel_spans(fn: Callable[[], object], replays: int = 3) -> KernelSpan:
    """Profile ``replays`` calls of ``fn`` (a graph replay of several launches) and read every kernel's GPU
    start and end: where a batch's time per launch goes — inside the kernels, or between them."""
    import json
    import tempfile
    from pathlib import Path

    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:  # the Chrome trace holds each kernel's ts, dur
        prof.export_chrome_trace(trace.name)
        events = json.loads(Path(trace.name).read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    if len(spans) < 2:
        raise RuntimeError(f"kernel_spans: CUPTI reported {len(spans)} kernel(s); is the profiler available?")
    durations = [end - start for start, end in spans]
    gaps = [later[0] - earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)]
    names = tuple(name for name, _ in Counter(e["name"] for e in kernels).most_common())
    return KernelSpan(statistics.median(durations), statistics.median(gaps), len(spans), names)


@dataclass(frozen=True)
class PairedRatio:
    """``other / base`` time per round: the median and the quartiles over ``rounds`` rounds."""

    median: float
    q1: float
    q3: float
    rounds: int

    def describe(self) -> str:
        return f"{self.median - 1:+.2%} (quartiles {self.q1 - 1:+.2%} … {self.q3 - 1:+.2%}, {self.rounds} rounds)"


def paired_ratio(other: Sequence[float], base: Sequence[float]) -> PairedRatio:
    """``other / base`` round by round (two contenders timed in the same rounds): the median and quartiles
    of the per-round ratios, so drift between rounds cancels. At least 4 rounds (quartiles need them)."""
    if len(other) != len(base) or len(base) < 4:
        raise ValueError(
            f"paired_ratio of {len(other)} and {len(base)} rounds is invalid: allowed the same count, at least 4"
        )
    ratios = [o / b for o, b in zip(other, base, strict=True)]
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return PairedRatio(q2, q1, q3, len(ratios))


def time_paired(
    base: Callable[[], object], other: Callable[[], object], rounds: int = 40, batch: int = BATCH
) -> PairedRatio:
    """How much longer ``other`` takes than ``base``: per round both batches back to back (even rounds
    ``base`` first, odd rounds ``other`` first), the round's ratio kept; median and quartiles of the ratios."""
    import torch

    if rounds < 4:
        raise ValueError(f"time_paired rounds = {rounds} is invalid: allowed >= 4 (quartiles need them)")
    for fn in (base, other):
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    bases, others = [], []
    for r in range(rounds):
        if r % 2 == 0:
            bases.append(_batch_us(base, batch))
            others.append(_batch_us(other, batch))
        else:
            others.append(_batch_us(other, batch))
            bases.append(_batch_us(base, batch))
    return paired_ratio(others, bases)
