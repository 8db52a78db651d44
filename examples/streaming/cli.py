"""Command line of ``examples/rmsnorm_tma.py``.

python examples/rmsnorm_tma.py                   # no GPU: compile-only report; GPU: --check
python examples/rmsnorm_tma.py --check --bench   # correctness sweep, then bandwidth vs copy and torch
python examples/rmsnorm_tma.py --bench --json    # one JSON document on stdout
python examples/rmsnorm_tma.py --compile-only    # compile every default kernel for sm_90a, print the plans
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .plan import Op, make_plan

BENCH_N = (1024, 4096, 8192, 32768)
BENCH_ELEMENTS = 1 << 28  # M × N of the bandwidth rows (≥ 2^26; larger keeps launch and tail effects small)
REPORT_N = (256, 1000, 1024, 4096, 8192, 32768)


def gpu_absent_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    major, minor = torch.cuda.get_device_capability(0)
    if major != 9:
        return f"GPU 0 has compute capability {major}.{minor}, not 9.x (Hopper)"
    return None


def compile_report(dtypes: list[str], ns: tuple[int, ...]) -> list[dict[str, Any]]:
    from .build import compile_kernel

    rows = []
    for op in Op:
        for dtype in dtypes:
            for n in ns:
                plan = make_plan(op, dtype, n)
                kernel = compile_kernel(plan, report=True)
                r = kernel.report
                rows.append(
                    {
                        "op": op.value,
                        "dtype": dtype,
                        "n": n,
                        "plan": plan.describe(),
                        "registers": r.registers,
                        "register_limit": plan.register_limit,
                        "spills": r.spills,
                        "tma_loads": r.tma_loads,
                        "tma_stores": r.tma_stores,
                        "nanosleeps": r.nanosleeps,
                        "compile_s": round(kernel.compile_seconds, 2),
                    }
                )
    return rows


def print_compile_report(rows: list[dict[str, Any]]) -> None:
    print("| op | dtype | N | plan | regs (limit) | spills | TMA ld/st in PTX | NANOSLEEP | compile s |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['op']} | {r['dtype']} | {r['n']} | {r['plan']} | {r['registers']} ({r['register_limit']}) "
            f"| {r['spills']} | {r['tma_loads']}/{r['tma_stores']} | {r['nanosleeps']} | {r['compile_s']} |"
        )


def run_check(dtypes: list[str]) -> list[dict[str, Any]]:
    from .check import CHECK_SHAPES, check_axpby, check_rmsnorm

    results = []
    for dtype in dtypes:
        for op, m, n in CHECK_SHAPES:
            fn = check_rmsnorm if op == "rmsnorm" else check_axpby
            results.append(fn(m, n, dtype).row())
    return results


def print_check(rows: list[dict[str, Any]]) -> None:
    print("| op | dtype | M | N | worst err / bound | bad | largest bad \\|ref\\| | repeatable | ok |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(
            f"| {r['op']} | {r['dtype']} | {r['m']} | {r['n']} | {r['worst']:.3f} | {r['bad']} | "
            f"{r['bad_ref_max']:.3g} | {r['repeatable']} | {'ok' if r['ok'] else 'FAIL'} |"
        )


def run_bench(dtype: str, ns: tuple[int, ...]) -> list[dict[str, Any]]:
    from .bench import bench_axpby, bench_rmsnorm, bench_small_m

    rows = [bench_axpby(BENCH_ELEMENTS // 8192, 8192, dtype).record()]
    rows += [bench_rmsnorm(BENCH_ELEMENTS // n, n, dtype).record() for n in ns]
    rows += [bench_small_m(m, 8192, dtype).record() for m in (1, 32)]
    return rows


def print_bench(rows: list[dict[str, Any]]) -> None:
    import torch

    print(f"device: {torch.cuda.get_device_name()}")
    print("| kernel | dtype | M × N | stages | µs | GB/s | copy GB/s | × copy | torch µs | × torch |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        vs = f"{r['vs_torch']:.2f}" if r["vs_torch"] else "–"
        torch_us = f"{r['torch_us']:.1f}" if r["torch_us"] else "–"
        print(
            f"| {r['kernel']} | {r['dtype']} | {r['m']} × {r['n']} | {r['stages']} | {r['us']:.1f} | "
            f"{r['gbps']:.0f} | {r['copy_gbps']:.0f} | {r['ratio']:.3f} | {torch_us} | {vs} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="correctness sweep against float64 (GPU)")
    parser.add_argument("--bench", action="store_true", help="bandwidth vs copy and torch (GPU)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--compile-only", action="store_true", help="compile for sm_90a and report (no GPU)")
    parser.add_argument(
        "--dtype",
        default=None,
        choices=["fp16", "bf16", "fp32"],
        help="one dtype (default: all for --check/--compile-only, bf16 for --bench)",
    )
    parser.add_argument("--n", default=None, help="comma-separated N for --bench / --compile-only")
    args = parser.parse_args(argv)
    absent = gpu_absent_reason()
    compile_only = args.compile_only or absent is not None
    dtypes = [args.dtype] if args.dtype else ["bf16", "fp16", "fp32"]
    ns = tuple(int(v) for v in args.n.split(",")) if args.n else None
    doc: dict[str, Any] = {}
    if compile_only:
        if absent and not args.compile_only:
            print(f"# {absent}: compile-only report (sm_90a)", file=sys.stderr)
        doc["compile"] = compile_report(dtypes, ns or REPORT_N)
        if not args.json:
            print_compile_report(doc["compile"])
    else:
        if args.check or not args.bench:
            doc["check"] = run_check(dtypes)
            if not args.json:
                print_check(doc["check"])
        if args.bench:
            doc["bench"] = run_bench(args.dtype or "bf16", ns or BENCH_N)
            if not args.json:
                print_bench(doc["bench"])
    if args.json:
        print(json.dumps(doc, indent=1))
    failed = [r for r in doc.get("check", []) if not r["ok"]]
    failed += [r for r in doc.get("compile", []) if r["spills"] or r["tma_loads"] == 0]
    return 1 if failed else 0
