"""A tensor-parallel MLP block on 2 or more GPUs, all-gather + GEMM → GELU → GEMM + reduce-scatter, both
communications hidden under the GEMMs.

    python examples/tp_mlp.py --check --bench                     # spawns the two processes itself
    python examples/tp_mlp.py --world 4 --check --bench          # four GPUs
    torchrun --nproc-per-node 2 examples/tp_mlp.py --tokens 8192 --check --bench

Rank r of W holds X_r (its T / W tokens × hidden), W1_r (its intermediate / W rows of W1) and W2_r (its
intermediate / W columns of W2); the block's output on rank r is its tokens' rows of
Y = GELU(X · W1ᵀ) · W2ᵀ.

=====================  =========================================================  ===========================
step                   ours                                                       torch, sequential / async TP
=====================  =========================================================  ===========================
X → H_r = X · W1_rᵀ    ``examples/tp_ag_gemm.py``: X_r pushed by the copy engine  ``all_gather_into_tensor`` +
(all-gather + GEMM)    in chunks, the GEMM's load warp gated per chunk            matmul / ``fused_all_gather_
                                                                                  matmul``
GELU                   in the first GEMM's epilogue, on the fp32 accumulator      one elementwise op
H_r · W2_rᵀ, summed    ``examples/tp_gemm_rs.py``: the other ranks' rows shipped  matmul + ``reduce_scatter_
over ranks             as they finish by the copy engine, added in the owner's    tensor`` / ``fused_matmul_
(GEMM + reduce-scat.)  epilogue                                                   reduce_scatter``
=====================  =========================================================  ===========================

Timed in one run, interleaved, all ranks in lockstep; prints µs of the slowest rank, ours against each,
and the ideal against the sequential block: its time without NCCL's all-gather and reduce-scatter (both
timed alone in the same rounds), what hiding both communications entirely would give at torch's compute
speed. Where ours falls short of it, the same rounds time each of our halves alone (the all-gather GEMM,
the GEMM + reduce-scatter) and torch's compute alone (matmul, GELU, matmul) to say which half. Writes
JSON to $OUT when set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "contrib")]

from ranks import Rounds  # noqa: E402

HIDDEN, INTERMEDIATE = 8192, 28672
TOKENS = (4096, 8192, 16384)
REL_BOUND = 3e-2  # two bf16 GEMMs and a bf16 activation against an fp32 reference


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, help=f"T (default: {', '.join(map(str, TOKENS))})")
    p.add_argument("--hidden", type=int, default=HIDDEN)
    p.add_argument("--intermediate", type=int, default=INTERMEDIATE)
    p.add_argument("--chunk-rows", type=int, help="rows per pushed chunk of X (default: tp_ag_gemm's for the pusher)")
    p.add_argument(
        "--pusher",
        choices=["copy", "sm"],
        default="copy",
        help="who pushes X's rows in the all-gather GEMM: the copy engines, or the GEMM's own warp (tp_ag_gemm)",
    )
    p.add_argument("--world", type=int, default=2, help="self-spawned: GPUs to use (at least 2)")
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    Rounds.add_arguments(p, queue_ahead_us=4000)  # a block is a dozen calls; three of them per batch
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from ranks import gpus, spawned_or_run, start

    if "RANK" not in os.environ and (args.world < 2 or gpus() < args.world):
        print(
            f"error: the tensor-parallel MLP needs --world ≥ 2 GPUs ({args.world} asked); {gpus()} visible here "
            "(nothing run). Without GPUs, examples/tp_ag_gemm.py and examples/tp_gemm_rs.py compile its two "
            "halves and prove their protocols.",
            file=sys.stderr,
        )
        return 2
    if spawned_or_run(main, argv, world=args.world, port=29543):
        return 0
    import torch.distributed as dist

    rank, device = start()
    rows = []
    try:
        for tokens in [args.tokens] if args.tokens else TOKENS:
            rows.append(one_block(tokens, rank, device, args))
    finally:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        report(rows)
    return 0


class FusedMlp:
    """Our block on this rank: the gated all-gather GEMM with GELU in its epilogue, then the GEMM +
    reduce-scatter reading its output in place."""

    def __init__(  # noqa: ANN001
        self, w1_r, w2_r, rank: int, tokens: int, chunk_rows: int | None, pusher: str = "copy"
    ) -> None:
        import torch.distributed as dist
        from gated_gemm import GatedGemm
        from tile_comm.peer import TensorParallelGemmRS

        self.up = GatedGemm(w1_r, tokens, chunk_rows, pusher=pusher, activation="gelu_tanh")
        self.x_r = self.up.a_r  # the layer before writes its tokens here
        # The second GEMM reads GELU(H) where the first wrote it, its row blocks in tile_comm.peer.block_order
        # (its own last), by rotating the rows its load warp reads.
        self.down = TensorParallelGemmRS(self.up.out, w2_r, rank, rotated_reads=True)
        self.down.compile()
        dist.barrier()  # both halves compiled on every rank: no kernel waits on a peer still compiling

    def launch(self):  # noqa: ANN201
        self.up.launch()
        return self.down.launch()


def one_block(tokens: int, rank: int, device, args: argparse.Namespace) -> dict:  # noqa: ANN001
    import torch
    import torch.distributed as dist

    hidden, inter = args.hidden, args.intermediate
    g = torch.Generator(device=device).manual_seed(13)
    x = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16, generator=g)
    w1 = torch.randn(inter, hidden, device=device, dtype=torch.bfloat16, generator=g) / hidden**0.5
    w2 = torch.randn(hidden, inter, device=device, dtype=torch.bfloat16, generator=g) / inter**0.5
    world = dist.get_world_size()
    if tokens % world or inter % world:
        raise ValueError(f"T = {tokens}, intermediate = {inter} are invalid on {world} GPUs: allowed multiples of it")
    half, inter_r = tokens // world, inter // world
    x_r = x[rank * half : (rank + 1) * half].contiguous()
    w1_r = w1[rank * inter_r : (rank + 1) * inter_r].contiguous()
    w2_r = w2[:, rank * inter_r : (rank + 1) * inter_r].contiguous()
    ours = FusedMlp(w1_r, w2_r, rank, tokens, args.chunk_rows, args.pusher)
    ours.x_r.copy_(x_r)
    row = {"tokens": tokens, "hidden": hidden, "intermediate": inter, "device": torch.cuda.get_device_name(device)}
    row["world"] = world
    first = ours.launch().clone()
    again = ours.launch().clone()
    torch.cuda.synchronize(device)
    hid = torch.nn.functional.gelu(x.float() @ w1.float().t(), approximate="tanh")
    ref = (hid @ w2.float().t())[rank * half : (rank + 1) * half]
    err = ((first.float() - ref).abs().max() / ref.abs().max()).item()
    row.update(rel_err=err, bitwise_repeat=bool(torch.equal(first, again)))
    if args.check and (err > REL_BOUND or not row["bitwise_repeat"]):
        raise AssertionError(f"rank {rank} T = {tokens}: rel err {err:.3g}, bitwise repeat {row['bitwise_repeat']}")
    if args.bench or not args.check:
        row["us"] = timings(x_r, w1_r, w2_r, ours, device, Rounds.of(args))
        us = row["us"]
        row["vs_sequential"] = us["torch_sequential"] / us["ours"]
        # Hiding both communications entirely, at torch's compute speed: the sequential block without them.
        row["ideal"] = us["torch_sequential"] / (us["torch_sequential"] - us["all_gather"] - us["reduce_scatter"])
        row["vs_async_tp"] = us["torch_async_tp"] / us["ours"] if "torch_async_tp" in us else None
    return row


def timings(x_r, w1_r, w2_r, ours: FusedMlp, device, rounds: Rounds) -> dict:  # noqa: ANN001
    import torch
    import torch.distributed as dist
    from ranks import time_by_slower_rank, torch_op

    tokens = dist.get_world_size() * x_r.shape[0]
    xg = torch.empty(tokens, x_r.shape[1], device=device, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(xg, x_r)  # torch's compute alone reads the gathered X
    y = torch.empty(x_r.shape[0], w2_r.shape[0], device=device, dtype=torch.bfloat16)

    def sequential() -> None:
        dist.all_gather_into_tensor(xg, x_r)
        h = torch.nn.functional.gelu(xg @ w1_r.t(), approximate="tanh")
        dist.reduce_scatter_tensor(y, h @ w2_r.t())

    def async_tp(group: str):  # noqa: ANN202
        gather, reduce = torch.ops.symm_mem.fused_all_gather_matmul, torch.ops.symm_mem.fused_matmul_reduce_scatter
        w1t, w2t = w1_r.t(), w2_r.t()

        def block():  # noqa: ANN202
            _, (h,) = gather(x_r, [w1t], 0, group)
            return reduce(torch.nn.functional.gelu(h, approximate="tanh"), w2t, "sum", 0, group)

        return block

    def torch_compute() -> None:
        h = torch.nn.functional.gelu(xg @ w1_r.t(), approximate="tanh")
        torch.matmul(h, w2_r.t(), out=partial)

    partial = torch.empty(tokens, w2_r.shape[0], device=device, dtype=torch.bfloat16)
    contenders = {
        "torch_sequential": sequential,
        "ours": ours.launch,
        "ours_up": ours.up.launch,  # the all-gather GEMM alone
        "ours_down": ours.down.launch,  # the GEMM + reduce-scatter alone
        "torch_compute": torch_compute,
        "all_gather": lambda: dist.all_gather_into_tensor(xg, x_r),  # the bound: what overlap can hide
        "reduce_scatter": lambda: dist.reduce_scatter_tensor(y, partial),
    }
    fused = torch_op("async-TP ops", async_tp)
    if fused is not None:
        contenders["torch_async_tp"] = fused
    return time_by_slower_rank(contenders, device, rounds, batch=3)


def report(rows: list[dict]) -> None:
    r0 = rows[0]
    print(
        f"device: {r0['device']} × {r0['world']}; bf16 randn; hidden {r0['hidden']}, intermediate "
        f"{r0['intermediate']}, GELU;"
    )
    print("µs of the slowest rank, median of rounds")
    head = f"{'torch seq.':>11} {'torch async':>11} {'ours':>9} {'×seq.':>6} {'ideal':>6} {'×async':>6}"
    print(f"{'tokens':>7} {head} {'rel err':>8} repeat")
    for r in rows:
        us = r.get("us", {})
        cells = " ".join(f"{us[c]:11.1f}" if c in us else f"{'–':>11}" for c in ("torch_sequential", "torch_async_tp"))
        ours = f"{us['ours']:9.1f}" if "ours" in us else f"{'–':>9}"
        seq = f"{r['vs_sequential']:6.2f} {r['ideal']:6.2f}" if "vs_sequential" in r else "     –      –"
        asy = f"{r['vs_async_tp']:6.2f}" if r.get("vs_async_tp") else "     –"
        print(f"{r['tokens']:7d} {cells} {ours} {seq} {asy} {r['rel_err']:8.1e} {r['bitwise_repeat']}")
    for r in rows:
        us = r.get("us", {})
        if {"ours_up", "ours_down", "torch_compute"} <= us.keys():
            print(
                f"  T = {r['tokens']}: our halves alone, all-gather GEMM {us['ours_up']:.1f} + GEMM + reduce-scatter "
                f"{us['ours_down']:.1f} µs; torch's compute alone (matmul, GELU, matmul) {us['torch_compute']:.1f} µs"
            )
    out = os.environ.get("OUT")
    if out:
        Path(out, "tp_mlp.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
