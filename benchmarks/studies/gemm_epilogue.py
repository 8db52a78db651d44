"""What the cooperative GEMM's epilogue costs: the shipped kernel against variants that take parts of it away.

    python benchmarks/studies/gemm_epilogue.py                       # 4096³, 6144³, 8192²×1024 bf16, 256×128 c1×2
    python benchmarks/studies/gemm_epilogue.py --shapes 4096x4096x4096 --configs coop128x256c21
    python benchmarks/studies/gemm_epilogue.py --bias --shapes 8192x8192x4096 --configs coop128x256c21skrd8

Variants (only ``full`` computes the right result; the others exist to be timed):

=============  ====================================================================================
full           the kernel as shipped: 8 subtiles per 256×128 tile through 4 staging buffers, each
               ``acquire`` (the storing thread's ``wait_group.read 3``, a named-barrier sync),
               ``stmatrix``, ``publish`` (``fence.proxy.async``, a sync), TMA store, commit
one-subtile    every accumulator summed into one subtile, which alone is staged and stored: the
               wgmmas stay live, the epilogue's stores and syncs drop to 1/8. (Dropping the stores
               altogether lets ptxas delete the wgmmas too: that "kernel" is fast for the wrong
               reason — the CPU test checks every variant keeps the full kernel's HGMMAs.)
no-read-wait   ``acquire`` never waits for an older TMA store to have read its buffer (a race): the
               cost of the second half of the subtiles waiting for the first half's stores
no-barrier     the staging ring without its named barrier (a race): the cost of the two syncs per
               subtile
bias-inline    (``--bias`` only; a correct kernel) the bias read after the tile's last wgmma wait, as
               before ``ColumnBias.load``: what loading it under the last k-tile saves
=============  ====================================================================================

For each shape: identical randn inputs, every variant and torch.matmul interleaved (rotating order,
12 rounds × 10 launches, median of rounds). Prints the device, then per shape and configuration each
variant's µs and the share of the full kernel's time it saves.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import _paths  # noqa: F401
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from pipes.cute import TmaStoreStaging, TmaStoreStagingProducer

VARIANTS = ("full", "one-subtile", "no-read-wait", "no-barrier")
#: Variants of a problem with a bias term (``--bias``).
BIAS_VARIANTS = ("full", "bias-inline")
SHAPES = [(4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 1024)]
ROUNDS = 12
BATCH = 10


@cute.jit
def store_one_subtile(epi: cutlass.Constexpr, acc: cute.Tensor, staging: Any, tm: Any, tn: Any) -> Any:
    """``store_tile`` of the one-subtile variant: the sum of the tile's subtiles, stored as subtile 0."""
    from hopper_gemm.epilogue_store import store_partitions, tma_store

    subtiles = epi.r2s.retile(acc)
    per_sub = cute.size(epi.frag_shape)
    values = cute.make_rmem_tensor(epi.frag_shape, Float32)
    out = cute.make_rmem_tensor(epi.frag_shape, epi.kernel.out_dtype)
    for v in cutlass.range_constexpr(per_sub):
        values[v] = subtiles[v]
    for sub in cutlass.range_constexpr(1, epi.subtile_grid[0] * epi.subtile_grid[1]):
        for v in cutlass.range_constexpr(per_sub):
            values[v] = values[v] + subtiles[sub * per_sub + v]
    out.store(values.load().to(epi.kernel.out_dtype))
    slot = staging.acquire()
    cute.copy(epi.r2s, out, epi.smem_part[(None, None, None, slot)])
    staging.publish()
    return tma_store(epi, staging, store_partitions(epi, tm, tn), 0)


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """Build (compile) kernels as variant ``name`` inside this block; the compile cache is cleared on
    entry and exit, so no variant's kernel is reused for another."""
    import gemm_modes.hooks as modes_math
    import hopper_gemm.kernel as kernel_module
    from gemm_modes import launch

    if name not in (*VARIANTS, *BIAS_VARIANTS):
        raise ValueError(f"variant = {name!r} is invalid: allowed {list(dict.fromkeys(VARIANTS + BIAS_VARIANTS))}")
    # Both math roles: the teaching kernel's and the performance modes' (gemm_modes.hooks).
    roles = (kernel_module, modes_math)
    saved_roles = [(role.store_tile, role.load_operands) for role in roles]
    saved = (TmaStoreStaging.in_flight_for, TmaStoreStaging.producer)
    for role in roles:
        if name == "one-subtile":
            role.store_tile = store_one_subtile
        elif name == "bias-inline":  # no operand loaded early: every term reads its own inside apply
            role.load_operands = lambda terms, acc, coords, args: tuple(None for _ in terms)
    if name == "no-read-wait":
        TmaStoreStaging.in_flight_for = lambda self, slots: 63  # wait_group.read 63: never waits here
    elif name == "no-barrier":
        TmaStoreStaging.producer = lambda self, sync=None: TmaStoreStagingProducer(self, None)
    launch.compiled.cache_clear()
    try:
        yield
    finally:
        for role, (store, load) in zip(roles, saved_roles, strict=True):
            role.store_tile, role.load_operands = store, load
        TmaStoreStaging.in_flight_for, TmaStoreStaging.producer = saved
        launch.compiled.cache_clear()


def bench_shape(
    shape: tuple[int, int, int], names: list[str], torch: Any, bias: bool = False
) -> dict[str, dict[str, float]]:
    """µs per launch of torch (``F.linear`` with ``bias``) and of every (configuration, variant), interleaved."""
    from gemm import CANDIDATES
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate
    from kernel_tools.timing import time_interleaved

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g) if bias else None
    contenders: dict[str, Callable[[], object]] = {"torch": lambda: torch.nn.functional.linear(a, w, b)}
    variants = BIAS_VARIANTS if bias else VARIANTS
    for name in names:
        for v in variants:
            with variant(v):
                contenders[f"{name}/{v}"] = launcher(CANDIDATES[name], validate(a, w, bias=b, out=out), out)
    times = time_interleaved(contenders, ROUNDS, BATCH, rotate=True)
    return {name: {v: times[f"{name}/{v}"] for v in variants} | {"torch": times["torch"]} for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated M×N×K (default: 4096³, 6144³, 8192²×1024)")
    parser.add_argument("--configs", default="coop256x128c12", help="comma-separated cooperative CANDIDATES")
    parser.add_argument("--bias", action="store_true", help="a bias term (torch: F.linear); variants full, bias-inline")
    args = parser.parse_args(argv)
    from gemm import CANDIDATES
    from hopper_gemm.config import Schedule

    names = args.configs.split(",")
    for name in names:
        if name not in CANDIDATES or CANDIDATES[name].schedule is not Schedule.COOPERATIVE:
            parser.error(f"--configs: {name!r} is not a cooperative configuration of benchmarks/gemm.py")
    from needs_gpu import cuda_torch
    from shape_arg import parse_shapes

    shapes = parse_shapes(parser, args.shapes) if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_epilogue.py", "tests/test_gemm_epilogue_bench.py compiles the variants")
    if torch is None:
        return 0
    print(f"device: {torch.cuda.get_device_name()}; bf16 randn; {ROUNDS}×{BATCH} launches, rotating order, median")
    variants = BIAS_VARIANTS if args.bias else VARIANTS
    print(f"{'M×N×K':>16} {'config':>16} {'torch µs':>9} " + " ".join(f"{v:>18}" for v in variants))
    for shape in shapes:
        for name, t in bench_shape(shape, names, torch, args.bias).items():
            full = t["full"]
            cells = [f"{t[v]:8.1f} ({(full - t[v]) / full:+6.1%})" for v in variants]
            print(
                f"{'×'.join(map(str, shape)):>16} {name:>16} {t['torch']:9.1f} " + " ".join(f"{c:>18}" for c in cells)
            )
    print("(in brackets: the share of the full kernel's time the variant saves)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
