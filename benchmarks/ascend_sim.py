"""How fast the Ascend simulator checks the ping-pong GEMM (and the cube→vector hand-off) on one CPU core.

Prints a table: host CPU, K tiles (loop trips), instructions recorded, seconds to record the kernel, to run
one schedule, and to explore every default schedule; the baseline is numpy computing the same score tiles
in the same process (what the simulator's data path costs at minimum), with the ratio.

Run: ``python benchmarks/ascend_sim.py``. The target: 64 trips explored in under 2 s on one core.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

from pipes.ascend.kernels.attention import attention_simulator
from pipes.ascend.kernels.pingpong import PingPongProblem, pingpong_simulator

REPEATS = 5


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def median_seconds(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def numpy_baseline(iters: int) -> float:
    problem = PingPongProblem.random(iters)
    q, k = problem.q.astype(np.float32), problem.k.astype(np.float32)
    n = k.shape[0] // iters
    return median_seconds(lambda: [(q @ k[i * n : (i + 1) * n].T).astype(np.float16) for i in range(iters)])


def row(kernel: str, iters: int, build: Callable[[], object]) -> dict:
    record = median_seconds(build)
    sim = build()
    instructions = sum(len(p.instrs) for p in sim.programs)
    one = median_seconds(sim.run)
    report = sim.explore()
    assert report.ok, report.text()
    explore = median_seconds(sim.explore)
    base = numpy_baseline(iters)
    return {
        "kernel": kernel,
        "trips": iters,
        "instrs": instructions,
        "record s": record,
        "1 schedule s": one,
        "schedules": len(report.runs),
        "explore s": explore,
        "numpy ms": 1e3 * base,
        "explore/numpy": explore / base,
    }


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target states
    rows = [row("ping-pong GEMM", n, lambda n=n: pingpong_simulator(n)) for n in (16, 64, 256)]
    rows.append(row("cube→vector (2 AIV)", 64, lambda: attention_simulator(64)))
    print(f"host CPU: {cpu_name()} (pinned to one core), Python {platform.python_version()}, median of {REPEATS}")
    header = list(rows[0])
    widths = [max(len(h), 12) for h in header]
    widths[0] = 20
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        cells = [f"{v:.3f}" if isinstance(v, float) and k != "explore/numpy" else str(v) for k, v in r.items()]
        cells[-1] = f"{r['explore/numpy']:.0f}×"
        print(" | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    target = next(r for r in rows if r["kernel"] == "ping-pong GEMM" and r["trips"] == 64)
    verdict = "meets" if target["explore s"] < 2.0 else "MISSES"
    seconds, schedules = target["explore s"], target["schedules"]
    print(f"\n64-trip ping-pong, {schedules} schedules explored in {seconds:.2f} s: {verdict} the < 2 s target")
    print("\nEvery schedule (Simulator.prove: pipes.check's exploration engine, the simulator as hardware model)")
    print("kernel | trips | states | transitions | exhaustive | verdict | seconds")
    print("-|-|-|-|-|-|-")
    for kernel, trips, build in (
        ("ping-pong GEMM", 4, lambda: pingpong_simulator(4)),
        ("ping-pong GEMM", 16, lambda: pingpong_simulator(16)),
        ("cube→vector (2 AIV)", 2, lambda: attention_simulator(2)),
        ("cube→vector (2 AIV)", 4, lambda: attention_simulator(4)),
    ):
        report = build().prove(max_states=200_000)
        verdict = "OK" if report.ok else ", ".join(sorted(k.name for k in report.kinds()))
        print(
            f"{kernel} | {trips} | {report.states} | {report.transitions} | {report.exhaustive} | {verdict} | "
            f"{report.seconds:.2f}"
        )


if __name__ == "__main__":
    main()
