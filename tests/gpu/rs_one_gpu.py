"""The reduce-scatter over ``--world`` ranks with one GPU standing in for all of them: every rank's
:class:`tile_comm.peer.TensorParallelGemmRS` on its own stream, its buffers local
(:meth:`tile_comm.peer.PeerBuffers.on_one_gpu`), its grid a share of the SMs. The copy work, the slots,
the flags and the credits are the multi-GPU ones; only the pointers are local.

    python tests/gpu/rs_one_gpu.py --world 4 --m 8192 --n 4096 --k 2048 --launches 20 --slow-rank 2
    python tests/gpu/rs_one_gpu.py --inbox-buffers 2     # two inboxes per rank, launch e into e % 2

The owners add the received partials after their GEMM (``reduce="pass"``): in the epilogue variant each
rank's GEMM waits inside for the other ranks' GEMMs, which one GPU does not run beside it (measured on an
H100: every such launch timed out; on separate GPUs it is tested by test_gpu_peer.py). Each rank's block
must match the fp32 reference within bf16 tolerance and every launch the first bit for bit.
``--slow-rank r`` delays rank ``r``'s communication warp per tile (the others must wait for its bands).
Prints one line per rank; exits non-zero on any mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "contrib")]
# Every rank's copy work waits on device memory: give each stream its own hardware queue; and load every
# kernel up front: loading one lazily may wait for the device to be idle, while another rank's kernel on
# it waits for a rank whose next launch is not queued yet (before CUDA starts, both).
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

REL_BOUND = 2e-2


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--k", type=int, default=2048)
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--delay-ns", type=int, default=20_000)
    parser.add_argument("--clusters", type=int, default=0, help="per rank (0: a 1 / world share of the SMs)")
    parser.add_argument("--inbox-buffers", type=int, default=1, choices=(1, 2))
    parser.add_argument("--step-rows", type=int, default=None, help="row bands per copy step (default the example's)")
    parser.add_argument("--copy-sizes", default="1", help="steps per copy as they come, e.g. 1,2,4")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch
    from tile_comm.peer import PeerBuffers, TensorParallelGemmRS, copy_engine_config

    world, m, n, k = args.world, args.m, args.n, args.k
    device = torch.device("cuda", 0)
    g = torch.Generator(device=device).manual_seed(7)
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16, generator=g)
    kr, rows = k // world, m // world
    config = copy_engine_config(n)
    buffers = PeerBuffers.on_one_gpu(m, n, config, torch.bfloat16, device, world, args.inbox_buffers)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    share = args.clusters or sms // (world * config.cluster_size)
    ranks = [
        TensorParallelGemmRS(
            a[:, r * kr : (r + 1) * kr].contiguous(),
            b[:, r * kr : (r + 1) * kr].contiguous(),
            r,
            reduce="pass",
            buffers=buffers[r],
            max_clusters=share,
            step_rows=args.step_rows,
            copy_sizes=tuple(int(z) for z in args.copy_sizes.split(",")),
        )
        for r in range(world)
    ]
    for rank in ranks:  # compiled, and every rank's copy-work graphs built, before any kernel waits
        rank.compile()
        rank.fused.shipper.prepare()
    streams = [torch.cuda.Stream(device) for _ in range(world)]
    first: list = [None] * world
    differing = [torch.zeros((), dtype=torch.int64, device=device) for _ in range(world)]
    for launch in range(args.launches):
        for r, (rank, stream) in enumerate(zip(ranks, streams, strict=True)):
            with torch.cuda.stream(stream):
                own = rank.launch(args.delay_ns if r == args.slow_rank else 0)
                if launch == 0:
                    first[r] = own.clone()
                else:
                    differing[r] += torch.ne(own, first[r]).any()
    torch.cuda.synchronize(device)
    ref = a.float() @ b.float().t()
    failed = False
    for r in range(world):
        block = ref[r * rows : (r + 1) * rows]
        err = ((first[r].float() - block).abs().max() / block.abs().max()).item()
        same = differing[r].item() == 0
        print(f"rank {r}: rel err {err:.2e}, {args.launches} launches bit-exact: {same}")
        failed |= err > REL_BOUND or not same
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
