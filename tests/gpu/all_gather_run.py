"""Run the all-gather's library parts on ``--world`` GPUs: every rank pushes its row block with
:class:`pipes.comm.ChunkPusher`, a small kernel gated by :class:`pipes.cute.comm.ChunkGate` TMA-loads the
gathered A tile row by tile row (own rows first) and copies it out; ``out`` must equal every rank's block of
this launch, bit for bit, in every one of ``--launches`` back-to-back launches. ``--slow-rank r`` delays
rank ``r``'s pushes (a sleep on its launching stream before ``begin``), so the others' gates must wait.

    python tests/gpu/all_gather_run.py --world 2 --launches 50 --slow-rank 1

Prints one line per rank, ``rank R: N launches bit-exact``; exits non-zero on any mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--rows-per-rank", type=int, default=1024)
    parser.add_argument("--columns", type=int, default=64)
    parser.add_argument("--chunk-rows", type=int, default=256)
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--port", type=int, default=29650)
    return parser.parse_args(argv)


def pattern(torch, rank: int, epoch: int, rows: int, columns: int):  # noqa: ANN001, ANN201
    """Rank ``rank``'s block in launch ``epoch``: a value per element that names both."""
    base = (epoch % 1000) * 1_000_000 + rank * 100_000
    return base + torch.arange(rows * columns, dtype=torch.int32, device="cuda").view(rows, columns) % 100_000


def worker(rank: int, args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.world, device_id=torch.device("cuda", rank))
    try:
        run(rank, args)
    finally:
        dist.destroy_process_group()


def run(rank: int, args: argparse.Namespace) -> None:
    import cutlass.cute as cute
    import torch
    import torch.distributed as dist
    from cuda.bindings import driver as cu
    from cutlass.cute.runtime import from_dlpack
    from gather_kernels import TILE_M, build_gathered_copy

    from pipes.chunks import ChunkPlan
    from pipes.comm import ChunkPusher, Epochs, GatherBuffers
    from pipes.cute.comm import GateSpec
    from pipes.epoch import FIRST

    plan = ChunkPlan(rows=args.world * args.rows_per_rank, world=args.world, chunk_rows=args.chunk_rows)
    buffers = GatherBuffers.create(plan, args.columns, torch.int32)
    src = torch.zeros(plan.rows_per_rank, args.columns, dtype=torch.int32, device="cuda")
    pusher = ChunkPusher(src, plan, buffers)
    out = torch.zeros(plan.rows, args.columns, dtype=torch.int32, device="cuda")
    a = buffers.local.data
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    launch = build_gathered_copy(GateSpec(plan, tile_m=TILE_M), args.columns)
    views = (from_dlpack(a, assumed_align=16), from_dlpack(out, assumed_align=16))
    compiled = cute.compile(launch, *views, pusher.gate_args(FIRST), stream)
    torch.cuda.synchronize()
    dist.barrier()  # every rank compiled: no gate waits for a peer that is still compiling
    epochs = Epochs()
    for i in range(args.launches):
        epoch = epochs.next()
        src.copy_(pattern(torch, rank, epoch, plan.rows_per_rank, args.columns))
        if rank == args.slow_rank:
            torch.cuda._sleep(2_000_000)  # about a millisecond: this rank's pushes start late
        pusher.begin(epoch)
        if pusher.graph and len(pusher._graphs) != 2:  # built lazily mid-run, a graph deadlocked 4 ranks
            raise SystemExit(f"rank {rank}: {len(pusher._graphs)} push graph(s) built before the first kernel, want 2")
        compiled(*views, pusher.gate_args(epoch), stream)
        pusher.push(epoch)
        pusher.grant()
        want = torch.cat([pattern(torch, q, epoch, plan.rows_per_rank, args.columns) for q in range(args.world)])
        if not torch.equal(out, want):
            bad = (out != want).nonzero()
            where = f"{bad.shape[0]} elements, first {bad[:4].tolist()}"
            raise SystemExit(f"rank {rank}: launch {i} (epoch {epoch}) differs at {where}")
    torch.cuda.synchronize()
    print(f"rank {rank}: {args.launches} launches bit-exact", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < args.world:
        print(f"needs {args.world} GPUs, {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
