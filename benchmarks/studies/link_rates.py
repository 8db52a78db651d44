"""How fast the copy engines move a rank's blocks to its peers, by the way the copies are dealt.

The reduce-scatter over more than two GPUs ships each peer its own row block (``examples/tp_gemm_rs.py``):
the copy engines, steps of a few MiB alternating over two streams, the peers in turn (block p to rank
r + p + 1). How close that comes to what the links can carry decides how much of the GEMM it can hide.
Every rank moves the same bytes, (world − 1) blocks, into torch symmetric memory on its peers, all ranks
at once, each contender interleaved in rotating order and timed by the slowest rank:

* ``ring``: all of it to rank r + 1, one copy (each GPU sends to one and receives from one);
* ``ring pull``: the same bytes read by the receiver's copy engines from rank r − 1;
* ``in turn``: block by block to r + 1, r + 2, … on one stream (one copy per block);
* ``in turn, S streams, C MiB``: the blocks cut into C MiB steps dealt over S streams in turn (the
  reduce-scatter's way);
* ``at once``: each peer's block on a stream of its own, all started together (each GPU sends to every
  peer and receives from every peer at once);
* ``pull in turn``: each receiver reads its block from r − 1, r − 2, … on one stream.

    python benchmarks/studies/link_rates.py --world 4 [--block-mib 32]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import _paths  # noqa: F401
import ranks

ROUNDS = 10
BATCH = 5


def contenders(block: int, rank: int, world: int, device, torch) -> tuple[dict[str, Callable[[], None]], tuple]:  # noqa: ANN001
    """Each contender queues one launch's copies on side streams and joins them to the current stream; and
    what must stay alive while they run (the contenders hold raw pointers: the symmetric memory is unmapped
    once its handle is collected)."""
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    from cuda.bindings import runtime as cudart

    from pipes.comm.stream_ops import check_cuda

    total = (world - 1) * block
    src = torch.randn(total // 2, device=device).to(torch.bfloat16).view(torch.uint8)[:total]
    name = ranks.symm_mem_group()
    inbox = symm_mem.empty(total, dtype=torch.uint8, device=device)
    handle = symm_mem.rendezvous(inbox, name)
    peer = {r: handle.get_buffer(r, (total,), torch.uint8, 0).data_ptr() for r in range(world) if r != rank}
    mine = inbox.data_ptr()
    dist.barrier()
    streams = [torch.cuda.Stream(device) for _ in range(max(world - 1, 4))]
    kind = cudart.cudaMemcpyKind.cudaMemcpyDefault

    def slot(sender: int, receiver: int) -> int:  # the sender's slot in the receiver's inbox
        return ((sender - receiver - 1) % world) * block

    def copies(jobs: list[tuple[int, int, int, int]]) -> None:
        """``jobs``: (stream, dst, src, bytes), queued in order, then joined to the current stream."""
        current = torch.cuda.current_stream(device)
        used = sorted({j[0] for j in jobs})
        for k in used:
            streams[k].wait_stream(current)
        for k, dst, from_, size in jobs:
            check_cuda(cudart.cudaMemcpyAsync(dst, from_, size, kind, streams[k].cuda_stream)[0], "cudaMemcpyAsync")
        for k in used:
            current.wait_stream(streams[k])

    def push_in_turn(step: int, n_streams: int) -> Callable[[], None]:
        jobs, i = [], 0
        for p in range(world - 1):
            to = (rank + p + 1) % world
            for off in range(0, block, step):
                size = min(step, block - off)
                jobs.append((i % n_streams, peer[to] + slot(rank, to) + off, src.data_ptr() + p * block + off, size))
                i += 1
        return lambda: copies(jobs)

    nxt, prv = (rank + 1) % world, (rank - 1) % world
    ring_dst = handle.get_buffer(nxt, (total,), torch.uint8, 0).data_ptr()
    ring_src = handle.get_buffer(prv, (total,), torch.uint8, 0).data_ptr() if world > 1 else mine
    mib = 1 << 20
    out = {
        "ring": lambda: copies([(0, ring_dst, src.data_ptr(), total)]),
        "ring pull": lambda: copies([(0, mine, ring_src, total)]),
        "in turn": push_in_turn(block, 1),
    }
    for n_streams, step_mib in ((1, 16), (1, 8), (2, 8), (2, 16), (2, 4), (3, 8), (4, 8)):
        out[f"in turn, {n_streams} streams, {step_mib} MiB"] = push_in_turn(step_mib * mib, n_streams)
    at_once = [
        (p, peer[(rank + p + 1) % world] + slot(rank, (rank + p + 1) % world), src.data_ptr() + p * block, block)
        for p in range(world - 1)
    ]
    out["at once"] = lambda: copies(at_once)
    pull = [
        (0, mine + slot((rank - p - 1) % world, rank), peer[(rank - p - 1) % world] + p * block, block)
        for p in range(world - 1)
    ]
    out["pull in turn"] = lambda: copies(pull)
    return out, (src, inbox, handle, streams)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=None, help="GPUs (default: all)")
    parser.add_argument("--block-mib", type=int, default=32, help="bytes per peer block (MiB)")
    ranks.Rounds.add_arguments(parser)
    parser.set_defaults(rounds=ROUNDS)
    args = parser.parse_args(argv)
    world = args.world or ranks.gpus()
    if world < 2 or world > ranks.gpus():
        print(f"link_rates needs {max(world, 2)} GPUs; this machine has {ranks.gpus()}")
        return 1
    if ranks.spawned_or_run(main, argv, world, 29533):
        return 0
    import torch

    rank, device = ranks.start(world)
    block = args.block_mib << 20
    runs, _alive = contenders(block, rank, world, device, torch)
    for run in runs.values():
        run()
    torch.cuda.synchronize()
    us = ranks.time_by_slower_rank(runs, device, ranks.Rounds.of(args), BATCH)
    if rank == 0:
        total = (world - 1) * block
        print(
            f"device: {torch.cuda.get_device_name(device)} × {world}; each rank sends "
            f"{total >> 20} MiB ({world - 1} blocks of {args.block_mib} MiB); µs of the slowest rank"
        )
        print(f"{'how':<28} {'µs':>9} {'GB/s per GPU':>13}")
        for how, t in us.items():
            print(f"{how:<28} {t:9.1f} {total / t / 1e3:13.1f}")
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", ranks.CONNECTIONS)
    raise SystemExit(main())
