"""How fast auto's GEMM would run if its operands cost nothing: the ceiling behind the rows that miss their target.

For each shape, auto's configuration (with PDL, as ``gemm()`` launches it) runs three ways, interleaved
with torch.matmul (``F.linear`` with a bias) in ``ROUNDS`` rounds of ``BATCH`` launches, rotating order,
median:

- ``ours``: the kernel as it is (checked against torch once);
- ``L2-resident``: every load of a tile reads the first k-tile of its range again (the tile's, or a
  stream-K unit's), so the same wgmmas run on real operand tiles that stay in L2 (no DRAM reads after
  the first, every TMA load still made);
- ``no loads``: after the first ring fill the load warp arms each stage's full barrier with 0 bytes and
  copies nothing, so the wgmmas re-read the random k-tiles the ring holds (no operand traffic at all).

Both variants compute wrong products by design (not checked); everything else (the ring protocol, the
wgmmas, the epilogue and its stores, stream-K's partials) is the kernel's own. The variants are
:func:`variant_load_k_tiles`, installed in place of ``hopper_gemm.load_warp.load_k_tiles`` only while
compiling. One row per shape: torch's time and the three ratios (ours / torch throughput), and the share
of our time the operand traffic costs (1 − ours / no loads).

    python benchmarks/studies/gemm_ceiling.py [--shapes 4096x4096x4096,...] [--dtype bf16] [--bias]
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import _paths  # noqa: F401
from gemm import SHAPES as ISSUE_ROWS
from gemm import TARGETS, shape_inputs
from needs_gpu import cuda_torch, device_with_sms
from shape_arg import parse_shapes

#: (M, N, K, dtype, bias): benchmarks/gemm.py's rows with a 1.05 target, and 8192³ bf16 for comparison.
SHAPES = [row for row in ISSUE_ROWS if TARGETS[row[:3]] >= 1.05 or row == (8192, 8192, 8192, "bf16", False)]
NO_LOADS, L2_RESIDENT = "no loads", "L2-resident"
VARIANTS = (L2_RESIDENT, NO_LOADS)
ROUNDS = 10
BATCH = 10


def variant_load_k_tiles(variant: str) -> Callable[..., Any]:
    """A stand-in for ``load_warp.load_k_tiles`` (same signature) that loads ``variant``'s k-tiles."""
    import cutlass
    import cutlass.cute as cute
    from hopper_gemm.load_warp import _tma_copy

    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is invalid: allowed {VARIANTS}")

    @cute.jit
    def load_k_tiles(
        cfg: cutlass.Constexpr, producer: Any, src: Any, tm: Any, tn: Any, k_begin: Any, k_end: Any
    ) -> Any:
        for k in cutlass.range(k_begin, k_end, unroll=1):
            if cutlass.const_expr(variant == NO_LOADS):
                # The first ring fill loads real (random) k-tiles; afterwards each stage is armed with 0 bytes.
                loads = cutlass.Int32(producer.acquire_state.count < producer.ops.decl.stages)
                slot = producer.acquire(extra_tx_bytes=(loads - 1) * producer.ops.decl.stage_tx_bytes)
            else:
                loads = cutlass.Int32(1)
                slot = producer.acquire()
            bar = producer.barrier(slot)
            # L2-resident: the tile's first k-tile of its range every time; no loads: the real one (first fill).
            source_k = k_begin if cutlass.const_expr(variant == L2_RESIDENT) else k
            if loads == 1:
                a_dst, b_dst = src.sa[(None, slot)], src.sb[(None, slot)]
                a_src, b_src = src.ga[(None, tm, source_k)], src.gb[(None, tn, source_k)]
                _tma_copy(src.atom_a, a_src, a_dst, (bar, src.a_policy), src.a_mask, cfg.cluster_n > 1)
                _tma_copy(src.atom_b, b_src, b_dst, (bar, src.b_policy), src.b_mask, cfg.cluster_m > 1)
            producer.commit()
        return producer

    return load_k_tiles


@contextlib.contextmanager
def installed(variant: str) -> Iterator[None]:
    """Kernels traced inside load ``variant``'s k-tiles: :func:`variant_load_k_tiles` in place of
    ``hopper_gemm.load_warp.load_k_tiles``."""
    from hopper_gemm import load_warp

    with mock.patch.object(load_warp, "load_k_tiles", variant_load_k_tiles(variant)):
        yield


def compile_variant(config: Any, problem: Any, variant: str) -> Any:
    """``config``'s kernel for ``problem`` loading ``variant``'s k-tiles (compiled apart from
    ``gemm_modes.launch.compiled``'s cache, which keeps the real kernel)."""
    from gemm_modes.launch import compiled

    with installed(variant):
        return compiled.__wrapped__(config, problem)


def bench_shape(row: tuple, torch: Any) -> dict[str, float]:
    """torch's µs under "torch", and ours / torch throughput for ours and each variant."""
    from checked_launch import checked_launcher
    from gemm_modes.autotable import pick
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate
    from hopper_gemm.config import Problem
    from kernel_tools.timing import time_interleaved

    m, n, k, dtype, bias = row
    a, w, b, _, ref, torch_fn = shape_inputs(row, torch)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    config = pick(Problem(dtype, bias=bias), (m, n, k), sms, swap=False)  # the variants build the unswapped kernel
    config = config.with_(pdl=True)
    contenders = {"torch": torch_fn, "ours": checked_launcher(config, (a, w, b), ref.float(), f"ours at {m}×{n}×{k}")}
    for variant in VARIANTS:
        out = torch.empty(m, n, device="cuda", dtype=a.dtype)
        ops = validate(a, w, bias=b, out=out)
        contenders[variant] = launcher(config, ops, out, kernel=compile_variant(config, ops.problem, variant))
    times = time_interleaved(contenders, ROUNDS, BATCH, rotate=True)
    return {"torch": times["torch"]} | {name: times["torch"] / t for name, t in times.items() if name != "torch"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: the rows with a 1.05 target)")
    parser.add_argument("--dtype", choices=["fp16", "bf16"], default="bf16", help="of --shapes (default bf16)")
    parser.add_argument("--bias", action="store_true", help="with a bias term (the --shapes given)")
    args = parser.parse_args(argv)
    rows = [(*s, args.dtype, args.bias) for s in parse_shapes(parser, args.shapes)] if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_ceiling.py", "tests/test_gemm_ceiling_bench.py compiles its variants")
    if torch is None:
        return 0
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem

    device, sms = device_with_sms(torch)
    print(f"device: {device}; randn, auto's pick with PDL; {ROUNDS}×{BATCH}")
    print("launches interleaved, median; ratio = ours / torch.matmul (F.linear with a bias) throughput")
    print(f"| shape | dtype | auto's pick | torch µs | ours | {L2_RESIDENT} | {NO_LOADS} | operand traffic's share |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        m, n, k, dtype, bias = row
        r = bench_shape(row, torch)
        config = pick(Problem(dtype, bias=bias), (m, n, k), sms, swap=False)
        share = 1 - r["ours"] / r[NO_LOADS]
        print(
            f"| {m}×{n}×{k}{' + bias' if bias else ''} | {dtype} | {config.describe()} | {r['torch']:.1f} | "
            f"{r['ours']:.3f} | {r[L2_RESIDENT]:.3f} | {r[NO_LOADS]:.3f} | {share:+.1%} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
