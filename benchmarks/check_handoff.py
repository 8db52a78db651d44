"""How fast pipes.check proves the epilogue → communication hand-off (and a few neighbours) on one core.

The target (issue 2): the exhaustive check of the 4-stage, 3-agent, 8-iteration hand-off in under 10 s
on one core. The 3 agents are the epilogue producer (TMA store → notify, STORE_COMPLETE) and two
communication warps, two units of one consumer role that both read every finished tile from global
memory and release its slot; the producer's tail commits END_OF_STREAM, on which they stop.

Baseline in the same run: the same search with one move per operation (``reduction=False``), i.e.
without merging local operations (data accesses, bulk-copy bookkeeping) into the synchronising
operation before them. Each figure is the median of ``--repeat`` runs in this process.

    python benchmarks/check_handoff.py [--repeat 3] [--results benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pipes.check import Protocol, check
from pipes.check.catalogue import handoff, ping_pong, tma_pipeline

TARGET_SECONDS = 10.0
SECTION = "## CPU checker"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        core = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"pinned to core {core}"
    return "not pinned (no sched_setaffinity)"


def measure(build: Callable[[], Protocol], reduction: bool, repeat: int) -> dict:
    times, report = [], None
    for _ in range(repeat):
        protocol = build()
        started = time.perf_counter()
        report = check(protocol, reduction=reduction, max_states=5_000_000)
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    verdict = "OK" if report.ok else ", ".join(sorted(k.name for k in report.kinds()))
    return {
        "states": report.states,
        "transitions": report.transitions,
        "seconds": seconds,
        "rate": report.states / seconds,
        "verdict": verdict + ("" if report.exhaustive else " (bounded)"),
    }


CASES = [
    ("hand-off 4 stages, 8 tiles, epilogue + 2 comm warps, lag 3 (target)", lambda: handoff(4, 8, consumers=2)),
    ("hand-off 4 stages, 8 tiles, epilogue + 2 comm warps, lag 1", lambda: handoff(4, 8, consumers=2, lag=1)),
    (
        "hand-off 4 stages, 8 tiles, notify on smem read (bad)",
        lambda: handoff(4, 8, consumers=2, notify_on="smem_read"),
    ),
    ("hand-off 4 stages, 32 tiles, epilogue + 2 comm warps, lag 1", lambda: handoff(4, 32, consumers=2, lag=1)),
    ("ping-pong: TMA loads + 2 math warpgroups, 4 stages, 8 tiles × 2 k", lambda: ping_pong(4, 8, 2)),
    ("TMA-load pipeline, 4 stages, 16 items", lambda: tma_pipeline(4, 16)),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, help="rewrite the '## CPU checker' section of this file")
    args = parser.parse_args()
    pinning = pin_to_one_core()
    host = f"{cpu_name()} ({pinning}), Python {platform.python_version()}"
    rows = [
        "| protocol | moves | states | transitions | time s | states/s | verdict | vs baseline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    target = None
    for name, build in CASES:
        reduced = measure(build, True, args.repeat)
        plain = measure(build, False, args.repeat)
        target = target or reduced
        for label, row in (("merged", reduced), ("one per op (baseline)", plain)):
            ratio = (
                f"{plain['states'] / row['states']:.1f}× fewer states, {plain['seconds'] / row['seconds']:.1f}× faster"
                if row is reduced
                else "1×"
            )
            rows.append(
                f"| {name} | {label} | {row['states']} | {row['transitions']} | {row['seconds']:.3f} | "
                f"{row['rate']:.0f} | {row['verdict']} | {ratio} |"
            )
    met = target["seconds"] < TARGET_SECONDS and target["verdict"] == "OK"
    summary = (
        f"Target: the exhaustive check of the 4-stage, 3-agent, 8-tile hand-off in under {TARGET_SECONDS:.0f} s on "
        f"one core — {'met' if met else 'NOT met'} ({target['states']} states, {target['seconds']:.3f} s)."
    )
    text = "\n".join([f"host: {host}; median of {args.repeat} run(s)", "", *rows, "", summary])
    print(text)
    if args.results:
        write_section(args.results, host, args.repeat, rows, summary)
    return 0 if met else 1


def write_section(path: Path, host: str, repeat: int, rows: list[str], summary: str) -> None:
    body = [
        SECTION,
        "",
        f"`python benchmarks/check_handoff.py` — host CPU: {host}; median of {repeat} runs. Exhaustive",
        "breadth-first search with state hashing. The hand-off's 3 agents: the epilogue producer (TMA store →",
        "notify, STORE_COMPLETE) and two communication warps (two units of one consumer role, each reads every",
        "tile from global memory). Baseline in the same run: the same search with one move per operation.",
        "Each release of a TMA-load or store→notify pipeline carries its `fence.proxy.async` (an operation",
        "of its own in the baseline, merged into the release's move otherwise), and the epilogue fences each",
        "staged tile before its TMA store (`fence.proxy.async` after the `st.shared`, likewise).",
        "",
        *rows,
        "",
        summary,
        "",
    ]
    old = path.read_text() if path.exists() else "# Benchmark results\n\n"
    start = old.find(SECTION)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + "\n".join(body)
    else:
        end = old.find("\n## ", start + len(SECTION))
        new = old[:start] + "\n".join(body) + ("" if end < 0 else old[end:])
    path.write_text(new)


if __name__ == "__main__":
    sys.exit(main())
