"""The epilogue → communication overlap of examples/epilogue_comm.py, measured in one run.

For each (shape, transport): torch.matmul, the copy of C to the receiver (``copy_`` to pinned host memory
or to a device buffer), the two back to back (the sequential baseline), the GEMM alone (no comm), the
fused kernel with transport ``none`` (T_gemm), the communication warps alone (T_comm) and the fused
kernel (T_fused), interleaved (kernel_tools.timing; identical randn inputs; median of rounds).

    E = (T_gemm + T_comm − T_fused) / min(T_gemm, T_comm)     overlap efficiency
    S = T_sequential / T_fused                                speedup over matmul-then-copy
    R = T_fused / T_gemm(none) − 1                            what shipping costs the GEMM

Targets: host at a shape where T_comm ≈ T_gemm (8192×8192×16384; 4096×4096×16384 too): E ≥ 0.85,
S ≥ 1.5; local at 8192³: R ≤ 0.03; the GEMM with ``none`` within 1% of the GEMM alone.

    python benchmarks/comm_overlap.py            # the target rows (about a minute on an H100)
    python benchmarks/comm_overlap.py --quick    # one small row per transport
    python benchmarks/comm_overlap.py --none-cost  # 'none' vs the GEMM alone, paired rounds (the 1 % row)

Prints the device and a table; writes comm_overlap.json (and a log) to $OUT when it is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("examples", "contrib")]

from hopper_gemm.config import GemmConfig, Schedule  # noqa: E402
from tile_comm.config import CommConfig  # noqa: E402


def pushed(ns: int) -> CommConfig:
    """The sm engine: the communication warps copy the tiles themselves, paced ``ns`` per step."""
    return CommConfig("host", pace_ns=ns)


#: The copy engine's steps as 1 MiB partial rows (the GEMM's own raster band of 8 cluster columns).
BAND_OF_8 = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE, group=8)

# (shape, transport, GEMM configuration, CommConfig): None = the transport's default (host: the copy
# engine on 2 streams, raster bands C's full width) / tile_comm.launcher.default_config.
ROWS = [
    ((8192, 8192, 16384), "host", None, None),  # T_comm ≈ T_gemm, 15.5 waves of tiles: the overlap target
    ((4096, 4096, 16384), "host", None, None),  # T_comm ≈ T_gemm, 3.9 waves: the last wave's 7 MiB is the tail
    ((4096, 4096, 16384), "host", BAND_OF_8, None),  # diagnostic: 1 MiB steps of 4 KiB rows
    ((8192, 8192, 16384), "host", BAND_OF_8, None),
    ((4096, 4096, 16384), "host", None, pushed(4000)),  # the sm engine (the comm warps copy)
    ((8192, 8192, 8192), "local", None, None),  # the regret target
    ((8192, 8192, 8192), "local", None, CommConfig("local", engine="copy")),  # the copy engine, device to device
    ((4096, 4096, 16384), "local", None, None),
]
#: The "none within 1 % of the GEMM alone" row: each shape above, both kernels with the GEMM's own config.
NONE_COST_SHAPES = [(4096, 4096, 16384), (8192, 8192, 8192), (8192, 8192, 16384)]
#: The regret row (local at 8192³) and the other local shape of the table.
REGRET_SHAPES = [(8192, 8192, 8192), (4096, 4096, 16384)]
#: Paired tables: the target's words and its limit on (ratio − 1).
TARGETS = {"none_cost": ("target ≤ +1 %", 0.01), "regret": ("target R ≤ 0.03 at 8192³", 0.03)}
QUICK = [((2048, 2048, 4096), "host", None, None), ((2048, 2048, 4096), "local", None, None)]


def heat(seconds: float) -> None:
    """Large matmuls for ``seconds``: the first row then runs at the clocks and power of the others
    (a cold H100 measured the first 3 ms kernels up to 10 % off the rest of the same run)."""
    import time

    import torch

    if seconds <= 0:
        return
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small shape per transport")
    parser.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--transport", choices=["host", "local", "peer"], help="peer: the two-GPU table")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds per row (median)")
    parser.add_argument(
        "--heat-s", type=float, default=10.0, help="run matmuls this long first: clocks settle before row 1"
    )
    parser.add_argument("--shape", help="only rows of this M×N×K (e.g. 8192x8192x16384)")
    parser.add_argument(
        "--none-cost", action="store_true", help="only 'none' vs the GEMM alone, in paired rounds (see --rounds)"
    )
    parser.add_argument(
        "--regret", action="store_true", help="only R (local vs none) at the regret shapes, in paired rounds"
    )
    args = parser.parse_args(argv)
    if args.transport == "peer":  # two GPUs, one process each: examples/tp_gemm_rs.py measures that table
        import tp_gemm_rs

        return tp_gemm_rs.main(["--check", "--bench"])
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU: benchmarks/comm_overlap.py needs one (the CPU tests compile every kernel)")
        return 0
    from tile_comm.measure import header, measure, none_cost, regret, row

    device = torch.cuda.get_device_name()
    if args.none_cost:
        return _paired_table(args, device, NONE_COST_SHAPES, none_cost, "none_cost", "'none' vs the GEMM alone")
    if args.regret:
        return _paired_table(args, device, REGRET_SHAPES, regret, "regret", "R: the fused kernel ('local') vs 'none'")
    print(f"device: {device}; torch {torch.__version__}; {args.dtype}, randn inputs; times in µs (median of rounds)")
    print("gemm = GEMM alone (no comm); none = fused kernel shipping nothing (T_gemm); alone = comm warps")
    print("without the GEMM (T_comm); fused = T_fused; copy = copy_ of C to the receiver; seq = matmul then copy")
    heat(args.heat_s)
    print(header(), flush=True)
    results = []
    for (m, n, k), transport, config, comm in QUICK if args.quick else ROWS:
        if args.transport and transport != args.transport:
            continue
        if args.shape and args.shape.replace("×", "x") != f"{m}x{n}x{k}":
            continue
        result = measure(m, n, k, transport, args.dtype, config=config, comm=comm, rounds=args.rounds)
        results.append(result)
        print(row(result), flush=True)
    print()
    for r in results:
        m, n, k = r.shape
        none_cost = r.us["gemm_none"] / r.us["gemm_plain"] - 1
        fused_cost = r.us["fused"] / r.us["gemm_plain"] - 1
        print(
            f"{m}×{n}×{k} {r.transport}: E {r.efficiency:.2f}, S {r.speedup:.2f}, R {r.regret:+.3f}; "
            f"'none' vs the GEMM alone {none_cost:+.3f}; fused vs the GEMM alone {fused_cost:+.3f} ({r.config})"
        )
    rows = [r.as_dict() for r in results]
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, "comm_overlap.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    return 0


def _paired_table(args: argparse.Namespace, device: str, shapes: list, measure_pair, name: str, what: str) -> int:
    """One paired-rounds row per shape (``tile_comm.measure.PairedCost``), the target line beside it."""
    target, limit = TARGETS[name]
    print(f"device: {device}; {args.dtype}, randn inputs; {what}, same configuration; per round both batches")
    print(f"back to back, order alternating; median and quartiles of the {args.rounds} per-round time ratios")
    heat(args.heat_s)
    rows = []
    for m, n, k in shapes:
        if args.shape and args.shape.replace("×", "x") != f"{m}x{n}x{k}":
            continue
        cost = measure_pair(m, n, k, dtype=args.dtype, rounds=args.rounds)
        rows.append(cost.as_dict())
        verdict = "✓" if cost.ratio.median <= 1 + limit else "✗"
        line = f"{m}×{n}×{k}: {cost.what} {cost.ratio.describe()} ({target} {verdict}) [{cost.config}]"
        print(line, flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, f"{name}.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
