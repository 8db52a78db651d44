"""The GEMM's per-launch floor: the GPU time of a launch with almost nothing to compute, against cuBLAS.

Each contender is replayed from a CUDA graph of ``LAUNCHES`` launches (no host dispatch timed), interleaved
over ``ROUNDS`` rounds; the figure is the median per launch. At 128×128×64 (one tile, one k-tile) what is
left is the kernel's fixed cost: its launch, set-up (barrier init, cluster sync, descriptor prefetch) and
the store's completion before it exits. The variants vary what a fixed cost could hang on: the schedule,
the cluster, the A/B stage count (the shared memory a CTA asks for) and programmatic dependent launch.
``--cupti`` also prints each contender's kernel duration and the gap between kernels as CUPTI sees them
(``kernel_tools.timing.kernel_spans``): time spent inside the kernel, or between launches.
(None of them moves it much; a peek at a k-tile that never comes would, by ~4 µs per launch: it blocks
until ``mbarrier.try_wait``'s time limit, docs/cute-async.md.)

    python benchmarks/studies/gemm_floor.py [--shapes 128x128x64,1024x1024x1024]
"""

from __future__ import annotations

import argparse

import _paths  # noqa: F401
from needs_gpu import cuda_torch
from shape_arg import parse_shapes

SHAPES = [(128, 128, 64), (1024, 1024, 1024)]
LAUNCHES = 20
ROUNDS = 10


def variants() -> dict:
    """The configurations timed: (name, TunedConfig)."""
    from gemm_modes.modes import tuned_config
    from hopper_gemm.config import Schedule

    cooperative, pingpong = Schedule.COOPERATIVE, Schedule.PINGPONG
    return {
        "ping-pong 128×64 c1×2, PDL": tuned_config(128, 64, 1, 2, pingpong, pdl=True),
        "ping-pong 128×64 c1×1": tuned_config(128, 64, 1, 1, pingpong),
        "ping-pong 128×64 c1×1, 2 stages": tuned_config(128, 64, 1, 1, pingpong, ab_stages=2, epi_stages=2),
        "cooperative 128×128 c1×1": tuned_config(128, 128, 1, 1, cooperative),
        "cooperative 128×256 c2×1": tuned_config(128, 256, 2, 1, cooperative),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: 128x128x64,1024x1024x1024)")
    parser.add_argument("--cupti", action="store_true", help="also CUPTI's kernel durations and gaps (torch.profiler)")
    args = parser.parse_args(argv)
    shapes = parse_shapes(parser, args.shapes) if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_floor.py", "the CPU tests compile the kernels")
    if torch is None:
        return 0
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate
    from kernel_tools.timing import graphed, kernel_spans, time_interleaved

    print(f"device: {torch.cuda.get_device_name()}; {LAUNCHES} launches per graph, median of {ROUNDS} rounds, µs")
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ops = validate(a, w, out=out)
        replays = {"torch.matmul": graphed(lambda a=a, w=w: torch.matmul(a, w.t()), LAUNCHES)}
        replays |= {name: graphed(launcher(config, ops, out), LAUNCHES) for name, config in variants().items()}
        times = time_interleaved(replays, ROUNDS, 1)
        print(f"{m}×{n}×{k}: " + " | ".join(f"{name} {us / LAUNCHES:.2f}" for name, us in times.items()), flush=True)
        if args.cupti:
            for name, replay in replays.items():
                span = kernel_spans(replay)
                print(f"  {name}: kernel {span.duration:.2f}, gap {span.gap:.2f} ({span.kernels} kernels)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
