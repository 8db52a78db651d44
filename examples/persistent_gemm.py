"""A persistent warp-specialized Hopper GEMM written only with pipes objects, against torch.matmul.

    python examples/persistent_gemm.py --m 8192 --n 8192 --k 8192 --dtype bf16 --schedule pingpong --check --bench
    python examples/persistent_gemm.py --bias --check              # nn.Linear: a @ w.T + bias
    python examples/persistent_gemm.py --trace timeline.png        # who held which slot when, 4 SMs

The kernel (examples/hopper_gemm/kernel.py; its docstring holds the role/pipeline table): a TMA load
warp feeds two math warpgroups through a multicast ``TmaLoadPipeline``; the epilogue stages its tiles
through a ``TmaStoreStaging`` ring; ping-pong alternates the warpgroups with an ``OrderedBarrier``.
Without a GPU the example says so, compiles the kernel for sm_90a and prints its resources (exit 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "contrib")]

from gemm_modes.choice import choose_config, device_sms  # noqa: E402
from hopper_gemm.api import gemm  # noqa: E402
from hopper_gemm.config import Problem  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--dtype", choices=["fp16", "bf16"], default="bf16")
    p.add_argument("--b-layout", choices=["nk", "kn"], default="nk", help="B as (N, K) (x @ W.T) or (K, N)")
    p.add_argument("--schedule", choices=["auto", "cooperative", "pingpong"], default="auto")
    p.add_argument("--tile", type=lambda s: tuple(int(x) for x in s.split("x")), help="e.g. 128x256")
    p.add_argument("--cluster", type=lambda s: tuple(int(x) for x in s.split("x")), help="e.g. 2x1")
    p.add_argument(
        "--stream-k",
        choices=["auto", "on", "off", "remainder", "aligned"],
        default="auto",
        help="cooperative: split the last wave and a half by k-tiles (on), only the partial wave (remainder), "
        "the partial wave's tiles at one k, their later parts on the idle clusters (aligned), or not (off); "
        "auto: the measured table",
    )
    p.add_argument(
        "--split-k",
        type=int,
        help="cooperative: parts per tile (past one wave: per tile of the last wave), each on its own "
        "cluster (1: none); default: the table",
    )
    p.add_argument(
        "--swap-ab",
        choices=["auto", "on", "off"],
        default="auto",
        help="compute Cᵀ = B·Aᵀ into C read column by column (on; --tile is then along N, along M), never "
        "(off), or where the table does (auto)",
    )
    p.add_argument("--bias", action="store_true", help="add a per-column bias (compared with F.linear)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--no-pdl", action="store_true", help="launch without programmatic dependent launch")
    p.add_argument("--check", action="store_true", help="compare with torch in fp32")
    p.add_argument("--bench", action="store_true", help="time against torch in the same run")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--explain", action="store_true", help="say in one line what auto picks for the shape and why")
    p.add_argument("--trace", help="draw a trace-mode timeline of 4 SMs to this PNG")
    args = p.parse_args(argv)
    args.stream_k = {"auto": None, "on": True, "off": False}.get(args.stream_k, args.stream_k)
    args.swap_ab = {"auto": None, "on": True, "off": False}[args.swap_ab]
    return args


def explain(args: argparse.Namespace, sms: int | None = None) -> str:
    """One line: the configuration ``gemm()`` launches for these arguments and why (auto's reason, or
    what was asked for)."""
    from gemm_modes.autotable import H100_SMS, decide

    problem = Problem(args.dtype, "k" if args.b_layout == "nk" else "n", bias=args.bias, scaled=args.alpha != 1.0)
    mnk = (args.m, args.n, args.k)
    overrides = (args.tile, args.cluster, args.stream_k, args.split_k, args.swap_ab)
    if args.schedule == "auto" and all(o is None for o in overrides):
        line = decide(problem, mnk, sms or H100_SMS).line()
    else:
        choice = (args.schedule, args.tile, args.cluster, args.stream_k)
        chosen = choose_config(problem, mnk, *choice, split_k=args.split_k, swap_ab=args.swap_ab)
        line = f"as asked: {chosen.describe()}"
    return line + ("" if sms else f" (on an H100's {H100_SMS} SMs)")


def no_gpu_report(args: argparse.Namespace, why: str = "") -> int:
    from gemm_modes.launch import compile_report

    problem = Problem(args.dtype, "k" if args.b_layout == "nk" else "n", bias=args.bias, scaled=args.alpha != 1.0)
    choice = (args.schedule, args.tile, args.cluster, args.stream_k)
    config = choose_config(problem, (args.m, args.n, args.k), *choice, split_k=args.split_k, swap_ab=args.swap_ab)
    config = config.with_(pdl=not args.no_pdl)  # what gemm() launches
    print(f"no CUDA GPU here{f' ({why})' if why else ''}: compiling for sm_90a instead (nothing runs)")
    if args.explain:
        print(explain(args))
    if config.swap_ab:  # the kernel of Cᵀ = B·Aᵀ, stored column by column
        problem = dataclasses.replace(problem, c_major="m")
    for line in compile_report(config, problem).lines():
        print("  " + line)
    if config.stream_k:  # the fix-up between clusters, on a small walk of the same split arithmetic
        from gemm_modes.stream_k_protocol import STREAM_K_BUGS, StreamKWalk, check_stream_k

        mode = "aligned" if config.stream_k_aligned else "remainder" if config.stream_k_remainder else "waves"
        walk = StreamKWalk(*STREAM_K_MODEL[mode], remainder=config.stream_k_remainder, aligned=config.stream_k_aligned)
        print(
            f"stream-K fix-up (pipes.check; {walk.cluster_tiles} tiles on {walk.clusters} clusters, "
            f"{walk.k_tiles} k-tiles, {walk.launches} launches):"
        )
        report = check_stream_k(walk)
        print(f"  {report}".splitlines()[0])
        for bug in STREAM_K_BUGS:
            found = check_stream_k(walk, bug=bug)
            print(f"  planted {bug:<9}: {found.findings[0].kind.name if found.findings else 'nothing found'}")
        return 0 if report.ok else 1
    if config.split_k > 1:  # the parallel fix-up, on one tile cut into the same number of parts
        from gemm_modes.split_k_protocol import SPLIT_K_BUGS, SplitKWalk, check_split_k

        walk = SplitKWalk(1, min(config.split_k, 3), 4)
        print(f"split-K fix-up (pipes.check; one tile in {walk.parts} parts, {walk.launches} launches):")
        report = check_split_k(walk)
        print(f"  {report}".splitlines()[0])
        for bug in SPLIT_K_BUGS:
            found = check_split_k(walk, bug=bug, max_states=20_000)
            print(f"  planted {bug:<11}: {found.findings[0].kind.name if found.findings else 'nothing found'}")
        return 0 if report.ok else 1
    return 0


#: The walks the stream-K model checks in the compile-only report (by mode): 7 tiles on 3 clusters, 3
#: k-tiles (two tiles split in two); 6 tiles on 4 clusters, 5 k-tiles (one in three); 2 tiles under a
#: wave of 3 clusters, 7 k-tiles (leads of 6, one follower with both follow parts).
STREAM_K_MODEL = {"waves": (7, 3, 3), "remainder": (6, 4, 5), "aligned": (2, 3, 7)}


def torch_contender(a: Any, b_nk: Any, bias: Any, alpha: float) -> Callable[[], Any]:
    """torch's one-call equivalent of ``gemm(a, b, bias=bias, alpha=alpha)``: cuBLAS(Lt) applies alpha and the
    bias in its own epilogue, as ours does (a separate scale or add would time extra kernels)."""
    import torch

    b_t = b_nk.t()
    if bias is not None:
        if alpha == 1.0:
            return lambda: torch.nn.functional.linear(a, b_nk, bias)
        return lambda: torch.addmm(bias, a, b_t, alpha=alpha)
    if alpha == 1.0:
        return lambda: torch.matmul(a, b_t)
    unused = a.new_empty(a.shape[0], b_nk.shape[0])
    return lambda: torch.addmm(unused, a, b_t, beta=0, alpha=alpha)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        return run(args)
    except ValueError as error:  # bad input: the message names the argument and what is allowed
        print(f"persistent_gemm.py: {error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Check and time ``gemm()`` on a GPU (``--check``, ``--bench``), or the compile-only report without one."""
    try:
        import torch
    except ImportError:  # a CPU-only install: the compile-only report needs no torch
        return no_gpu_report(args, why="torch is not installed")
    if not torch.cuda.is_available():
        return no_gpu_report(args)
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(args.m, args.k, device="cuda", dtype=tdt, generator=g)
    b_shape = (args.n, args.k) if args.b_layout == "nk" else (args.k, args.n)
    b = torch.randn(b_shape, device="cuda", dtype=tdt, generator=g)
    bias = torch.randn(args.n, device="cuda", dtype=tdt, generator=g) if args.bias else None
    options = dict(
        bias=bias,
        alpha=args.alpha,
        b_layout=args.b_layout,
        schedule=args.schedule,
        tile=args.tile,
        cluster=args.cluster,
        stream_k=args.stream_k,
        split_k=args.split_k,
        swap_ab=args.swap_ab,
        pdl=not args.no_pdl,
    )
    out = gemm(a, b, **options)
    torch.cuda.synchronize()
    problem = Problem(args.dtype, "k" if args.b_layout == "nk" else "n", bias=args.bias, scaled=args.alpha != 1.0)
    choice = (args.schedule, args.tile, args.cluster, args.stream_k)
    sms = device_sms(torch.cuda.current_device())
    config = choose_config(
        problem, (args.m, args.n, args.k), *choice, sms=sms, split_k=args.split_k, swap_ab=args.swap_ab
    )
    config = config.with_(pdl=not args.no_pdl)
    print(f"{torch.cuda.get_device_name()}: {args.m}×{args.n}×{args.k} {args.dtype}, {config.describe()}")
    if args.explain:
        print(explain(args, sms))
    figures: dict[str, object] = {"device": torch.cuda.get_device_name(), "config": config.describe()}
    b_nk = b if args.b_layout == "nk" else b.t()

    reference = torch_contender(a, b_nk, bias, args.alpha)

    if args.check:
        ref = args.alpha * (a.float() @ b_nk.float().t()) + (bias.float() if bias is not None else 0)
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        nan = int(torch.isnan(out).sum())
        print(f"check: max |err| / max |ref| = {err:.2e} (fp32 reference), NaN outputs: {nan}")
        figures["rel_err"] = err
    if args.bench:
        from kernel_tools.timing import time_interleaved

        result = torch.empty_like(out)
        times = time_interleaved({"torch": reference, "pipes": lambda: gemm(a, b, out=result, **options)})
        flops = 2 * args.m * args.n * args.k
        baseline = "torch.addmm" if args.alpha != 1.0 else "F.linear" if bias is not None else "torch.matmul"
        print(f"{'contender':>14} {'µs':>9} {'TFLOP/s':>8} {'ratio':>6}")
        for name, us in (("pipes gemm", times["pipes"]), (baseline, times["torch"])):
            print(f"{name:>14} {us:9.1f} {flops / us / 1e6:8.0f} {times['torch'] / us:6.3f}")
        print("(includes the Python launch path of gemm(); benchmarks/gemm.py times the kernel alone)")
        figures.update(us=times["pipes"], torch_us=times["torch"], ratio=times["torch"] / times["pipes"])
    if args.trace:
        from gemm_modes.launch import hooks_for
        from kernel_tools.tracing import traced_run

        from pipes.cute.timeline import draw_timeline

        first, second = (b_nk.contiguous(), a) if config.swap_ab else (a, b_nk.contiguous())
        draw_timeline(traced_run(first, second, config.config, modes=hooks_for(config)), args.trace)
        swapped = " (the swapped launch's operands, Cᵀ stored row-major)" if config.swap_ab else ""
        print(f"trace: {args.trace}{swapped}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
