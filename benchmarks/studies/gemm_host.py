"""Host cost of launching the GEMM: ``gemm()``, a held ``launcher()``, the DSL's own call, torch.matmul.

A GEMM whose kernel is shorter than its launch's host work leaves the GPU idle between back-to-back
launches: the throughput measured is then the host's. Per contender and shape this prints

* host µs: Python time to issue one call (``CALLS`` calls back to back, no synchronization inside),
* wall µs: time per launch of the same ``CALLS`` calls including the GPU (what a loop of calls gets),
* ratio: torch.matmul's wall time over the contender's, torch measured in the same run.

``gemm()`` is called with new output tensors every call (same shape), so its launch cache must re-point
the launch rather than reuse a conversion; ``dsl call`` is the compiled kernel called directly, which
converts every argument every call (what ``gemm()`` did before the cache).

    python benchmarks/studies/gemm_host.py [--shapes 128x1024x1024,256x8192x8192]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import _paths  # noqa: F401
from needs_gpu import cuda_torch
from shape_arg import parse_shapes

SHAPES = [(128, 1024, 1024), (256, 8192, 8192)]
CALLS = 200
ROUNDS = 5


def measure(fn: Callable[[], object], torch) -> tuple[float, float]:
    """(host µs per call, wall µs per launch): medians over ROUNDS rounds of CALLS calls."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e6 / CALLS)
        wall.append((t2 - t0) * 1e6 / CALLS)
    return sorted(host)[ROUNDS // 2], sorted(wall)[ROUNDS // 2]


def contenders(shape: tuple[int, int, int], torch) -> dict[str, Callable[[], object]]:
    from gemm_modes.choice import choose_config, device_sms
    from gemm_modes.launch import (
        compiled,
        kernel_arguments,
        launcher,
        without_unheld_ring_staging,
        without_unheld_split_k,
    )
    from hopper_gemm.api import gemm, validate
    from hopper_gemm.launch import current_stream

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    ops = validate(a, w, out=outs[0])
    # The configuration gemm() launches (programmatic dependent launch included), for every contender.
    config = choose_config(ops.problem, ops.mnk, "auto", None, None, sms=device_sms(a.device.index or 0))
    config = without_unheld_split_k(config, m, n, a.device.index or 0)
    config = without_unheld_ring_staging(config, m, n, a.device.index or 0).with_(pdl=True)
    kernel = compiled(config, ops.problem)
    head = kernel_arguments(config, ops, outs[0])  # the workspace too, for a stream-K or split-K pick
    turn = iter(range(1 << 62))
    ref = a.float() @ w.float().t()
    held = launcher(config, ops, outs[0])
    calls = {
        "torch.matmul": lambda: torch.matmul(a, w.t()),
        "gemm()": lambda: gemm(a, w, out=outs[next(turn) % 4]),
        "launcher()": held,
        "dsl call": lambda: kernel(*head, current_stream()),
    }
    for name in ("gemm()", "launcher()", "dsl call"):
        for out in outs:
            out.fill_(float("nan"))
        for _ in range(4):
            calls[name]()
        torch.cuda.synchronize()
        checked = outs if name == "gemm()" else outs[:1]
        for out in checked:
            err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
            if not err < 2e-2:  # NaN too: an output the call never wrote
                raise SystemExit(f"{name} at {shape}: relative error {err} against torch")
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: 128x1024x1024,256x8192x8192)")
    args = parser.parse_args(argv)
    shapes = parse_shapes(parser, args.shapes) if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_host.py", "tests/test_gemm_call_cache.py checks the cache")
    if torch is None:
        return 0
    print(f"device: {torch.cuda.get_device_name()}; bf16 randn; {ROUNDS} rounds × {CALLS} calls, median")
    print(f"{'M×N×K':>16} {'contender':>14} {'host µs':>8} {'wall µs':>8} {'ratio':>6}")
    for shape in shapes:
        results = {name: measure(fn, torch) for name, fn in contenders(shape, torch).items()}
        base = results["torch.matmul"][1]
        for name, (host, wall) in results.items():
            print(f"{'×'.join(map(str, shape)):>16} {name:>14} {host:8.1f} {wall:8.1f} {base / wall:6.3f}")
    print("(ratio: torch.matmul's wall time per launch over the contender's)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
