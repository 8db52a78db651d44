"""Tensor-parallel GEMM + reduce-scatter on 2 or more GPUs, every other rank's rows shipped as they finish.

    torchrun --nproc-per-node 2 examples/tp_gemm_rs.py --rows 8192 --cols 8192 --k 4096 --check --bench
    python examples/tp_gemm_rs.py --check          # spawns the two processes itself
    python examples/tp_gemm_rs.py --world 4 --check --bench     # four GPUs
    python examples/tp_gemm_rs.py --engine sm --check --bench   # the comm warps store the tiles themselves
    python examples/epilogue_comm.py --transport peer --check   # the same

Engine ``copy`` (default): the communication warp counts each finished tile of another rank's row
block into its band, and the GPU's copy engines DMA every complete band over NVLink into that rank's
symmetric-memory buffer, raising the band's flag there; ``sm`` (two GPUs): the communication warps store
every tile themselves. ``--reduce epilogue`` (default, engine copy): the owner's GEMM waits for each
band's flags in its epilogue and adds the bands before storing; ``pass``: torch adds after the GEMM.
The symmetric-memory buffers (``pipes.comm.PeerChannel``), the copy engine's steps and parity-token flags
(``pipes.comm.CopyEngineShipper``), the step counts and the bounded flag waits (``pipes.cute.comm``) are
the comm library's (docs/comm.md).

Rank r holds the K-slice A[:, K_r], B[:, K_r] (K split over the GPUs); the result on rank r is row block r
of C = A·Bᵀ. Contenders, timed in one run and interleaved (both ranks in lockstep): torch.matmul per GPU,
NCCL ``reduce_scatter_tensor``, the two back to back (sequential), torch's
``torch.ops.symm_mem.fused_matmul_reduce_scatter`` when present, and ours (tile_comm.peer). Prints
E = (T_gemm + T_comm − T_fused) / min(T_gemm, T_comm) and S = T_sequential / T_fused, with T_gemm = our
GEMM alone and T_comm = NCCL's reduce-scatter. Writes JSON to $OUT when set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "contrib")]

from ranks import Rounds  # noqa: E402
from tile_comm.config import PEER_COPY_STREAMS  # noqa: E402

SHAPES = [(8192, 8192, 2048), (8192, 8192, 4096), (8192, 8192, 8192), (4096, 4096, 16384)]
REL_BOUND = 2e-2  # bf16 output, a bf16 partial added (ours) vs fp32 reference


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", "--rows", dest="m", type=int)  # --rows/--cols under torchrun (it takes --m, --n)
    p.add_argument("--n", "--cols", dest="n", type=int)
    p.add_argument("--k", type=int, help="the full K (each rank holds K / world)")
    p.add_argument("--world", type=int, default=2, help="self-spawned: GPUs to use (at least 2)")
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    Rounds.add_arguments(p)
    p.add_argument("--pace-ns", type=int, default=0, help="engine sm: nanosleep per copy step")
    p.add_argument(
        "--delay-ns",
        type=int,
        default=0,
        help="--check: rank 0's comm warp sleeps this long per tile (the other ranks must wait for its late bands)",
    )
    p.add_argument(
        "--copy-streams",
        default=str(PEER_COPY_STREAMS),
        help="engine copy: streams the steps alternate over; a list (2,4,8) times one launcher per count",
    )
    p.add_argument(
        "--copy-spread",
        default="steps",
        help="engine copy: how the steps are dealt over the streams: steps (round-robin) or targets (a stream per "
        "receiving GPU); a list (steps,targets) also times the others as ours_<spread>",
    )
    p.add_argument(
        "--reduce",
        default="epilogue",
        help="where the owner adds the received partial: epilogue (in the GEMM's epilogue, engine copy) or pass "
        "(a torch add after the GEMM); a list (epilogue,pass) also times the others as ours_<reduce>",
    )
    p.add_argument("--repeat", type=int, default=2, help="--check: launches back to back, each compared bitwise")
    p.add_argument(
        "--timeline",
        action="store_true",
        help="engine copy: print when rank 0's kernel ended, its credits were taken and each step's flag was raised "
        "(µs from the launch's start; CUDA events recorded by the copy work's graph)",
    )
    p.add_argument(
        "--step-rows",
        default=None,
        help="engine copy: row bands per copy step (default: the deepest of 4, 2, 1 that cuts the row blocks "
        "whole, tile_comm.peer.step_rows_for); a list (2,1) also times the others as ours_r<rows>",
    )
    p.add_argument(
        "--copy-sizes",
        default="1",
        help="engine copy: steps per copy as they come, e.g. 1,2,4 (the first steps at once, then larger copies; "
        "every step keeps its flag); schedules separated by / (1/1,2,4) also time the others as ours_g<schedule>",
    )
    p.add_argument(
        "--inbox-buffers",
        default="1",
        help="engine copy: 1, or 2 (double-buffered: a sender waits for its receiver's launch before the previous "
        "one); a list (1,2) also times the others as ours_b<buffers>",
    )
    p.add_argument(
        "--engine",
        choices=["copy", "sm"],
        default="copy",
        help="copy: the copy engines DMA each finished row band to the other GPU; sm: the comm warps store tiles",
    )
    return p.parse_args(argv)


def copy_sizes(text: str) -> list[tuple[int, ...]]:
    """``--copy-sizes``: schedules separated by ``/``, each steps per copy separated by commas (``1/1,2,4``)."""
    schedules = [tuple(int(z) for z in part.split(",")) for part in str(text).split("/")]
    if any(not g or min(g) < 1 for g in schedules):
        raise ValueError(f"copy sizes {text!r}: allowed ints >= 1")
    return schedules


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from ranks import gpus, spawned_or_run, start

    bad = [spread for spread in str(args.copy_spread).split(",") if spread not in ("steps", "targets")]
    if bad:
        print(f"error: --copy-spread {','.join(bad)}: allowed steps or targets (a comma list)", file=sys.stderr)
        return 2
    try:
        grouped = copy_sizes(args.copy_sizes) != [(1,)]
    except ValueError:
        print(
            f"error: --copy-sizes {args.copy_sizes}: allowed ints >= 1 (1,2,4), schedules separated by /",
            file=sys.stderr,
        )
        return 2
    if grouped and "targets" in str(args.copy_spread).split(","):
        print(
            "error: --copy-sizes groups the steps dealt in turn: allowed only with --copy-spread steps", file=sys.stderr
        )
        return 2
    bad = [b for b in str(args.inbox_buffers).split(",") if b not in ("1", "2")]
    if bad:
        print(f"error: --inbox-buffers {','.join(bad)}: allowed 1 or 2 (a comma list)", file=sys.stderr)
        return 2
    if "RANK" not in os.environ:
        if args.world < 2:
            print(f"error: --world {args.world}: allowed at least 2", file=sys.stderr)
            return 2
        if gpus() < args.world:
            print(
                f"error: the reduce-scatter over {args.world} GPUs needs torch and {args.world} GPUs; "
                f"{gpus()} visible here",
                file=sys.stderr,
            )
            return 2
    if spawned_or_run(main, argv, world=args.world, port=29517):
        return 0
    import torch.distributed as dist

    rank, device = start()
    shapes = [(args.m, args.n, args.k)] if args.m else SHAPES
    rows = []
    try:
        for m, n, k in shapes:
            rows.append(one_shape(m, n, k, rank, device, args))
    finally:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        report(rows)
    return 0


def one_shape(m: int, n: int, k: int, rank: int, device, args: argparse.Namespace) -> dict:  # noqa: ANN001
    import torch
    import torch.distributed as dist
    from tile_comm.peer import TensorParallelGemmRS

    world = dist.get_world_size()
    if k % world or m % world:
        raise ValueError(f"M = {m}, K = {k} are invalid on {world} GPUs: allowed multiples of the world size")
    g = torch.Generator(device=device).manual_seed(7)
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)  # the same on every rank
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16, generator=g)
    kr = k // world
    a_r = a[:, rank * kr : (rank + 1) * kr].contiguous()
    b_r = b[:, rank * kr : (rank + 1) * kr].contiguous()
    half = m // world
    counts = [int(c) for c in str(args.copy_streams).split(",")]
    reduces = str(args.reduce).split(",") if args.engine == "copy" else ["pass"]
    depths = [int(d) for d in str(args.step_rows).split(",")] if args.step_rows else [None]
    spreads = str(args.copy_spread).split(",")
    inboxes = [int(b) for b in str(args.inbox_buffers).split(",")] if args.engine == "copy" else [1]
    first = dict(engine=args.engine, copy_streams=counts[0], reduce=reduces[0], step_rows=depths[0], spread=spreads[0])
    first["inbox_buffers"] = inboxes[0]
    schedules = copy_sizes(args.copy_sizes) if args.engine == "copy" else [(1,)]
    first["copy_sizes"] = schedules[0]
    ours = TensorParallelGemmRS(a_r, b_r, rank, pace_ns=args.pace_ns, **first)
    ours.compile()
    variants = {f"ours_s{c}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"copy_streams": c}) for c in counts[1:]}
    variants |= {f"ours_{r}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"reduce": r}) for r in reduces[1:]}
    variants |= {f"ours_r{d}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"step_rows": d}) for d in depths[1:]}
    variants |= {f"ours_{t}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"spread": t}) for t in spreads[1:]}
    variants |= {
        f"ours_b{b}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"inbox_buffers": b}) for b in inboxes[1:]
    }
    variants |= {
        f"ours_g{','.join(map(str, g))}": TensorParallelGemmRS(a_r, b_r, rank, **first | {"copy_sizes": g})
        for g in schedules[1:]
    }
    # Every kernel compiled before any rank launches one: a kernel waiting for a peer still compiling (seconds)
    # would reach its bounded wait's timeout and trap.
    for variant in variants.values():
        variant.compile()
    dist.barrier()
    row = {"shape": [m, n, k], "device": torch.cuda.get_device_name(device), "buffers": ours.buffers.path}
    row["world"] = world
    row["engine"] = args.engine
    row["reduce"] = ours.reduce
    row["inbox_buffers"] = len(ours.inboxes)

    delay = args.delay_ns if rank == 0 else 0
    result = ours.launch(delay).clone()
    # Back to back, no synchronization: every launch must reproduce the first bit for bit (the inbox
    # flags' two tokens alternate; a launch that took the previous launch's flag would add stale rows).
    differing = torch.zeros((), dtype=torch.int64, device=device)  # launches unlike the first, counted on the GPU
    for _ in range(max(1, args.repeat - 1)):
        differing += torch.ne(ours.launch(delay), result).any()
    torch.cuda.synchronize(device)
    repeat_ok = differing.item() == 0
    ref = (a.float() @ b.float().t())[rank * half : (rank + 1) * half]
    err = ((result.float() - ref).abs().max() / ref.abs().max()).item()
    rs_out = torch.empty(half, n, device=device, dtype=torch.bfloat16)
    dist.reduce_scatter_tensor(rs_out, torch.matmul(a_r, b_r.t()))
    torch.cuda.synchronize(device)
    row.update(
        rel_err=err,
        bitwise_repeat=bool(repeat_ok),
        vs_nccl=((result.float() - rs_out.float()).abs().max() / rs_out.float().abs().max()).item(),
    )
    if args.check and (err > REL_BOUND or not row["bitwise_repeat"]):
        raise AssertionError(f"rank {rank} {m}×{n}×{k}: rel err {err:.3g}, bitwise repeat {row['bitwise_repeat']}")
    if args.timeline and ours.engine.value == "copy":
        row["timeline"] = timeline(ours)
    if args.bench or not args.check:
        row["us"] = timings(a_r, b_r, ours, rs_out, device, Rounds.of(args), variants)
        row.update(derived(row["us"]))
    return row


def timings(a_r, b_r, ours, rs_out, device, rounds: Rounds, variants: dict | None = None) -> dict:  # noqa: ANN001
    import torch
    import torch.distributed as dist
    from ranks import time_by_slower_rank, torch_op
    from tile_comm.measure import plain_gemm

    m, n = a_r.shape[0], b_r.shape[0]
    partial = torch.empty(m, n, device=device, dtype=torch.bfloat16)
    plain = plain_gemm(ours.gemm_a, b_r, ours.config)

    def fused(group: str):  # noqa: ANN202
        op, bt = torch.ops.symm_mem.fused_matmul_reduce_scatter, b_r.t()  # (K_r, N): the op computes A @ B
        return lambda: op(a_r, bt, "sum", 0, group)

    contenders = {
        "matmul": lambda: torch.matmul(a_r, b_r.t(), out=partial),
        "reduce_scatter": lambda: dist.reduce_scatter_tensor(rs_out, partial),
        "sequential": lambda: dist.reduce_scatter_tensor(rs_out, torch.matmul(a_r, b_r.t(), out=partial)),
        "our_gemm": plain,
        "ours": ours.launch,
    }
    contenders |= {name: variant.launch for name, variant in (variants or {}).items()}
    torch_fused = torch_op("fused_matmul_reduce_scatter", fused)
    if torch_fused is not None:
        contenders["torch_fused"] = torch_fused
    if ours.engine.value == "copy":  # our transport alone: the copy engines' DMA of the block, nothing to wait for
        contenders["our_dma"] = ours.ship_alone
    return time_by_slower_rank(contenders, device, rounds, batch=5)


def timeline(ours) -> dict:  # noqa: ANN001
    """:func:`ranks.steady_timeline` of the copy work (``CopyEngineShipper.timed``), µs from the launch's start."""
    from ranks import steady_timeline

    t, every = steady_timeline(ours.launch, ours.fused.shipper)
    return {"kernel_end": t.kernel, "credits_taken": t.credit, "steps": t.steps, "started": t.started, "ranks": every}


def derived(us: dict) -> dict:
    t_gemm, t_comm, t_fused = us["our_gemm"], us["reduce_scatter"], us["ours"]
    return {
        "E": (t_gemm + t_comm - t_fused) / min(t_gemm, t_comm),
        "S": us["sequential"] / t_fused,
        "S_vs_torch_fused": us["torch_fused"] / t_fused if "torch_fused" in us else None,
    }


def report(rows: list[dict]) -> None:
    world = rows[0]["world"]
    print(f"device: {rows[0]['device']} × {world}; bf16 randn, K split over the GPUs; µs (slowest rank, median)")
    print(f"peer buffers: {rows[0]['buffers']}, {rows[0].get('inbox_buffers', 1)} inbox(es) per rank")
    cols = ["matmul", "reduce_scatter", "sequential", "torch_fused", "our_gemm", "our_dma", "ours"]
    cols += sorted({c for r in rows for c in r.get("us", {}) if c.startswith("ours_")})
    head = " ".join(f"{c:>14}" for c in cols)
    print(f"{'M×N×K':>18} {head} {'E':>5} {'S':>5} {'×torch':>6} {'rel err':>8} {'repeat':>6}")
    for r in rows:
        m, n, k = r["shape"]
        us = r.get("us", {})
        cells = " ".join(f"{us[c]:14.1f}" if c in us else f"{'–':>14}" for c in cols)
        e = f"{r['E']:5.2f}" if "E" in r else "    –"
        s = f"{r['S']:5.2f}" if "S" in r else "    –"
        vs = f"{r['S_vs_torch_fused']:6.2f}" if r.get("S_vs_torch_fused") else "     –"
        print(f"{f'{m}×{n}×{k}':>18} {cells} {e} {s} {vs} {r['rel_err']:8.1e} {str(r['bitwise_repeat']):>6}")
    from ranks import report_footer

    def steps(t: dict) -> str:
        spans = zip(t["started"], t["steps"], strict=True)
        return "steps (copy may begin→flag) " + " ".join(f"{b:.0f}→{e:.0f}" for b, e in spans)

    report_footer(rows, "S_vs_torch_fused", steps)
    out = os.environ.get("OUT")
    if out:
        Path(out, "tp_gemm_rs.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
