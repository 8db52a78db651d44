"""One launch of the GEMM and of torch.matmul for Nsight Compute (``ncu``) to profile side by side.

    ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \\
        --section WarpStateStats --launch-skip 2 python benchmarks/studies/gemm_profile.py --m 4096 --n 4096 --k 4096

Each contender runs twice for warm-up, then once more (the profiled launch). ``--raster`` / ``--group``
change the tile order of the configuration (``GemmConfig.raster``, ``group``), launched directly; the L2
request coalescer's merges (``lrc__request_sectors_op_read_coalescing_achieved_type_hardware``) show how
close in time the clusters ask for the same operand tiles (RESULTS.md, "Nsight Compute: 4096³ and 256×8192²").
"""

from __future__ import annotations

import argparse
import functools

import _paths  # noqa: F401


def _pair(text: str | None) -> tuple[int, int] | None:
    return None if text is None else tuple(int(v) for v in text.lower().split("x"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--schedule", default="auto")
    p.add_argument("--tile", help="e.g. 128x256 (default: the table's)")
    p.add_argument("--cluster", help="e.g. 2x1 (default: the table's)")
    p.add_argument("--stream-k", choices=["auto", "on", "off", "remainder", "aligned"], default="auto")
    p.add_argument("--raster", choices=["m", "n"], help="the tile order's direction (default: the table's)")
    p.add_argument("--group", type=int, help="cluster rows or columns per raster band (default: the table's)")
    args = p.parse_args(argv)
    order = {k: v for k, v in (("raster", args.raster), ("group", args.group)) if v is not None}
    if order:
        from hopper_gemm.config import GemmConfig

        try:
            GemmConfig().with_(**order)
        except ValueError as e:
            p.error(str(e))
    import torch
    from hopper_gemm.api import gemm

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(args.m, args.k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(args.n, args.k, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch.empty(args.m, args.n, device="cuda", dtype=torch.bfloat16)
    stream_k = {"auto": None, "on": True, "off": False}.get(args.stream_k, args.stream_k)
    choice = {"schedule": args.schedule, "tile": _pair(args.tile), "cluster": _pair(args.cluster), "stream_k": stream_k}
    run = functools.partial(gemm, a, b, out=out, **choice)
    if order:  # the same configuration in another tile order, launched as gemm() would launch it
        from gemm_modes.choice import choose_config
        from gemm_modes.launch import launcher
        from hopper_gemm.api import validate

        ops = validate(a, b, out=out)
        config = choose_config(ops.problem, ops.mnk, args.schedule, choice["tile"], choice["cluster"], stream_k)
        run = launcher(config.with_(pdl=True, **order), ops, out)
    for _ in range(3):
        run()
    for _ in range(3):
        torch.matmul(a, b.t())
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
