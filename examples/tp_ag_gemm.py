"""All-gather + GEMM on two or more GPUs, the GEMM's load warp waiting only for the rows it is about to read.

    torchrun --nproc-per-node 2 examples/tp_ag_gemm.py --rows 8192 --cols 4096 --k 8192 --check --bench
    python examples/tp_ag_gemm.py --check --bench        # spawns one process per GPU itself (2 by default)
    python examples/tp_ag_gemm.py --world 3 --m 12288 --n 2048 --k 8192 --check   # any world size
    python examples/tp_ag_gemm.py --check --bench --pusher sm   # the GEMM's own warp 1 pushes (no copy engine)

Rank r holds A_r, the r-th block of M / world rows of A, and W_r (N_r × K, ``nn.Linear``'s layout); the
result on rank r is C_r = AG(A) · W_rᵀ (M × N_r), the first half of a tensor-parallel MLP.

==========================  ============================================  ====================================
who                         what                                          synchronization
==========================  ============================================  ====================================
launching stream            ``ChunkPusher.begin``: A_r into its own rows  stream order; start event
                            of the gathered buffer
copy engines (this rank)    A_r to every peer's gathered buffer, chunk    a peer's credit first (binary, its
                            by chunk (``ChunkPlan``), then the chunk's    ``grant`` after its kernel); flag:
                            flag there (``cuStreamWriteValue32``)         memory barrier, parity token
GEMM load warp              per tile row, own rows first: wait for each  ``ChunkGate``: ``ld.acquire.sys``
(``GemmKernel(gate=...)``)  chunk of it another rank pushes, once per     per chunk, ``fence.proxy.async.
                            launch; then the tile's TMA loads             global`` before the TMA loads
math warpgroups, epilogue   the GEMM as ``examples/persistent_gemm.py``   the kernel's own pipes objects
                            (every role walks its own rows first)
launching stream            ``ChunkPusher.push`` joins the copy work      stream order
granting stream             ``grant``: every sender's credit back         an event after the kernel
==========================  ============================================  ====================================

``--check``: the result within bf16 of fp32, bitwise equal over ``--launches`` back-to-back launches and
to our GEMM (the same configuration, no gate) on the all-gathered A.

The first waves compute the rank's own rows, in place before the kernel starts, while the copy engines
bring the others' rows. Contenders, interleaved in one run with both ranks in lockstep: torch.matmul on the
gathered A, NCCL ``all_gather_into_tensor``, the two back to back (sequential), torch's
``torch.ops.symm_mem.fused_all_gather_matmul``, our GEMM alone on a gathered A (the same kernel, no gate)
and ours. Prints S = T_sequential / T_ours and ours over our GEMM alone. Without enough GPUs it compiles the
gated kernel for sm_90a, reports its resources and proves the push/gate protocol with ``pipes.check``.
Writes JSON to $OUT when set. ``--pusher sm``: instead of the copy engines, warp 1 of every CTA
(``--push-warps`` up to 3) pushes its share of the rank's chunks to every peer
(``pipes.cute.comm.ChunkPushWarp``), flags and credits holding the launch's epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "contrib")]

from gated_gemm import GatedGemm, configuration, default_chunk_rows, gated_kernel  # noqa: E402
from ranks import Rounds  # noqa: E402

from pipes.comm.chunk_pusher import PUSH_STREAMS  # noqa: E402

#: C per rank = AG(A) · W_rᵀ: (M, N_r, K), by world size (the default shapes of ``--bench``); other world
#: sizes take these problems' W split ``world`` ways where they divide (:func:`default_shapes`).
SHAPES = {
    2: [(8192, 4096, 8192), (8192, 8192, 4096), (16384, 4096, 8192), (4096, 14336, 8192), (8192, 4096, 2048)],
    4: [(8192, 2048, 8192), (8192, 4096, 4096), (16384, 2048, 8192), (4096, 7168, 8192), (8192, 2048, 2048)],
}
#: What a default shape must divide into on ``world`` ranks: each rank's rows whole 1024-row chunks (the
#: copy engines' chunk), each rank's columns whole 256-column tiles.
SHAPE_ROWS, SHAPE_COLS = 1024, 256
REL_BOUND = 2e-2  # bf16 output against an fp32 reference


def default_shapes(world: int) -> list[tuple[int, int, int]]:
    """The default shapes on ``world`` ranks: :data:`SHAPES`, else the two-GPU problems (W of 2·N_r rows)
    with W split ``world`` ways, those whose rows and columns divide; empty when none does (then the
    shape must be given)."""
    if world in SHAPES:
        return SHAPES[world]
    return [
        (m, 2 * n // world, k)
        for m, n, k in SHAPES[2]
        if m % (world * SHAPE_ROWS) == 0 and (2 * n) % (world * SHAPE_COLS) == 0
    ]


def _chunk_rows(text: str) -> list[int]:
    """``--chunk-rows``: one count, or a comma list whose first is ours and the others variants."""
    try:
        rows = [int(r) for r in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed ints (256 or 256,1024)") from None
    if min(rows) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed ints >= 1")
    return rows


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", "--rows", dest="m", type=int, help="the gathered rows M (each rank holds M / world)")
    p.add_argument("--n", "--cols", dest="n", type=int, help="this rank's columns of W (N_r)")
    p.add_argument("--k", type=int)
    p.add_argument("--world", type=int, default=2, help="self-spawned: GPUs to use (at least 2)")
    p.add_argument(
        "--chunk-rows",
        type=_chunk_rows,
        help="rows per pushed chunk (default: 1024 for the copy engines; --pusher sm: about one push per push warp); "
        "a list (256,1024) also times the others as ours_c<rows>",
    )
    p.add_argument(
        "--copy-streams", type=int, default=PUSH_STREAMS, help="copy streams the chunk pushes alternate over"
    )
    p.add_argument(
        "--no-push-graph",
        dest="push_graph",
        action="store_false",
        default=None,
        help="queue each launch's pushes call by call instead of replaying them from a CUDA graph (the default up "
        "to 3 copy streams)",
    )
    p.add_argument(
        "--pusher",
        choices=["copy", "sm"],
        default="copy",
        help="who pushes each rank's rows: the copy engines, or warps of the GEMM itself (SM copies, --push-warps)",
    )
    p.add_argument(
        "--push-warps",
        type=int,
        choices=[1, 2, 3],
        default=1,
        help="--pusher sm: warps per CTA that push (beside the load warp, from warp 1)",
    )
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--launches", type=int, default=3, help="--check: back-to-back launches, each compared")
    Rounds.add_arguments(p)
    p.add_argument(
        "--timeline",
        action="store_true",
        help="copy engines: print when rank 0's kernel ended, its credits were taken and each chunk copy could "
        "begin and raised its flag (µs from the launch's start; CUDA events on the copy streams), and for every "
        "rank the chunks its load warps waited for (the gated kernel then records its waits)",
    )
    args = p.parse_args(argv)
    shape = (args.m, args.n, args.k)
    if None in shape and shape != (None, None, None):
        p.error("--m, --n and --k go together: give all three, or none for the default shapes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from ranks import gpus, spawned_or_run

    if "RANK" not in os.environ:
        if args.world < 2:
            print(f"error: --world {args.world}: allowed at least 2", file=sys.stderr)
            return 2
        if not args.m and not default_shapes(args.world):
            print(
                f"error: --world {args.world}: no default shape splits into {args.world} row blocks of whole "
                f"{SHAPE_ROWS}-row chunks and {SHAPE_COLS}-column tiles; give --m, --n and --k",
                file=sys.stderr,
            )
            return 2
        if gpus() < args.world:
            why = f"needs {args.world} GPUs; {gpus()} visible" if _has_torch() else "torch is not installed"
            return no_gpu_report(args, why)
    if spawned_or_run(main, argv, world=args.world, port=29531):
        return 0
    return run(args)


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def no_gpu_report(args: argparse.Namespace, why: str) -> int:
    """The gated kernel compiled for sm_90a and the push/gate protocol proven with ``pipes.check``."""
    from gemm_modes.launch import hooks_for
    from hopper_gemm.config import Problem
    from kernel_tools.report import compile_report

    from pipes.check import check
    from pipes.check.catalogue.all_gather import GATHER_BAD, GATHER_GOOD
    from pipes.chunks import ChunkPlan

    m, n, k = (args.m, args.n, args.k) if args.m else default_shapes(args.world)[0]
    print(f"no multi-GPU run here ({why}): compiling for sm_90a instead (nothing runs)")
    config = configuration(m, n, k, args.world)
    ctas = min(config.cluster_tiles(m, n), 132 // config.cluster_size) * config.cluster_size  # an H100's grid
    rows = (
        args.chunk_rows[0]
        if args.chunk_rows
        else default_chunk_rows(args.pusher, m, args.world, ctas * args.push_warps)
    )
    plan = ChunkPlan(rows=m, world=args.world, chunk_rows=rows)
    _, gate, push = gated_kernel(config, Problem("bf16"), plan, k, args.pusher, args.push_warps)
    report = compile_report(config.config, Problem("bf16"), hooks_for(config), gate, push)
    for line in report.lines():
        print("  " + line)
    print(f"  gate          : {plan.chunks} chunks of {plan.chunk_rows} rows, {plan.rows_per_rank} rows per rank")
    if push is not None:
        pushes = plan.chunks_per_rank * push.peers
        workers = f"{'warp 1' if push.warps == 1 else f'warps 1–{push.warps}'} of each of {ctas} CTAs"
        print(f"  push warps    : {workers}: {pushes} pushes to {push.peers} peer(s), round-robin")
    print("push/gate protocol (pipes.check, two ranks; the copy engine's pushes and the SM's):")
    clean = [check(entry.build()) for entry in GATHER_GOOD]
    for result in clean:
        print(f"  {result}".splitlines()[0])
    for entry in GATHER_BAD:
        found = check(entry.build())
        print(f"  planted {entry.name:<34}: {found.findings[0].kind.name if found.findings else 'nothing found'}")
    return 0 if all(result.ok for result in clean) else 1


def run(args: argparse.Namespace) -> int:
    import torch.distributed as dist
    from ranks import start

    rank, device = start()
    world = dist.get_world_size()
    shapes = [(args.m, args.n, args.k)] if args.m else default_shapes(world)
    if not shapes:
        raise ValueError(f"no default shape splits over {world} ranks: give --m, --n and --k")
    rows = []
    try:
        for m, n, k in shapes:
            rows.append(one_shape(m, n, k, rank, world, device, args))
    finally:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        report(rows, world)
    return 0


def ungated_gemm(a, w_r, config):  # noqa: ANN001, ANN201
    """Our GEMM with ``config`` on the whole A, no gate: what all_gather + our GEMM gives."""
    import torch
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    out = torch.empty(a.shape[0], w_r.shape[0], device=a.device, dtype=a.dtype)
    launcher(config, validate(a, w_r, out=out), out)()
    torch.cuda.synchronize(a.device)
    return out


def one_shape(m: int, n: int, k: int, rank: int, world: int, device, args: argparse.Namespace) -> dict:  # noqa: ANN001
    import torch
    from kernel_tools.timing import paired_ratio

    if m % world:
        raise ValueError(f"M = {m} is invalid on {world} ranks: allowed a multiple of the world size")
    g = torch.Generator(device=device).manual_seed(11)
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)  # the same on every rank
    w = torch.randn(world * n, k, device=device, dtype=torch.bfloat16, generator=g)
    rows = m // world
    a_r = a[rank * rows : (rank + 1) * rows].contiguous()
    w_r = w[rank * n : (rank + 1) * n].contiguous()
    chunk_rows = args.chunk_rows or [None]
    options = (args.copy_streams, args.push_graph, args.pusher, args.push_warps)
    ours = GatedGemm(w_r, m, chunk_rows[0], *options, args.timeline)
    ours.a_r.copy_(a_r)
    variants = {f"ours_c{rows}": GatedGemm(w_r, m, rows, *options) for rows in chunk_rows[1:]}
    for variant in variants.values():
        variant.a_r.copy_(a_r)
    row = {"shape": [m, n, k], "device": torch.cuda.get_device_name(device), "config": ours.config.describe()}
    row["prepared"] = bool(ours.prepared) and all(p is not None for p in ours.prepared.values())
    ours.launch()
    first = ours.out.clone()
    differing = torch.zeros((), dtype=torch.int64, device=device)  # launches unlike the first, counted on the GPU
    for _ in range(max(1, args.launches) - 1):
        ours.launch()
        differing += torch.ne(ours.out, first).any()
    torch.cuda.synchronize(device)
    ref = a.float() @ w_r.float().t()
    err = ((first.float() - ref).abs().max() / ref.abs().max()).item()
    row.update(rel_err=err, bitwise_repeat=differing.item() == 0, launches=max(1, args.launches))
    # The same tiles as our GEMM without a gate on the gathered A (every rank holds the same A): bit for bit.
    row["bitwise_vs_gemm"] = torch.equal(first, ungated_gemm(a, w_r, ours.config))
    if args.check and (err > REL_BOUND or not row["bitwise_repeat"] or not row["bitwise_vs_gemm"]):
        raise AssertionError(
            f"rank {rank} {m}×{n}×{k}: rel err {err:.3g}, bitwise repeat {row['bitwise_repeat']}, bitwise equal "
            f"to our GEMM on the all-gathered A {row['bitwise_vs_gemm']}"
        )
    if args.timeline and ours.pusher is not None:
        row["timeline"] = timeline(ours)
    if args.bench or not args.check:
        per_round: dict = {}
        row["us"] = timings(a_r, w_r, ours, device, Rounds.of(args), per_round, variants)
        us = row["us"]
        row.update(S=us["sequential"] / us["ours"], over_gemm=us["ours"] / us["our_gemm"] - 1)
        if args.rounds >= 4:  # the same rounds' ratios: drift between rounds cancels (quartiles need 4)
            paired = paired_ratio(per_round["ours"], per_round["our_gemm"])
            row["over_gemm_rounds"] = [paired.median - 1, paired.q1 - 1, paired.q3 - 1]
        row["vs_torch_fused"] = us["torch_fused"] / us["ours"] if "torch_fused" in us else None
    return row


def timeline(ours: GatedGemm) -> dict:
    """:func:`ranks.steady_timeline` of the pushes (``ChunkPusher.timed``), µs from the launch's start, and
    every rank's gate waits in the timed launch (per chunk: the longest wait in µs, the load warps that
    waited; ``GateSpec(record_waits=True)``; zeroed right before it, so a late start does not count)."""
    import torch.distributed as dist
    from ranks import steady_timeline

    from pipes.cute.comm import gate_waits

    chunks = ours.plan.chunks
    counts = ours.buffers.local_flags[chunks:]
    # only this rank's kernel writes them; the flags before them stay as they are
    t, every = steady_timeline(ours.launch, ours.pusher, before_timed=counts.zero_)
    waits: list = [None] * dist.get_world_size()
    dist.all_gather_object(waits, gate_waits(ours.buffers.local_flags.tolist(), chunks))
    copies = [[c.peer, c.chunk] for c in ours.pusher.copies]
    return {"kernel_end": t.kernel, "credits_taken": t.credit, "flags": t.steps, "started": t.started} | {
        "copies": copies,
        "ranks": every,
        "gate_waits": waits,
    }


def gate_wait_line(waits: list[list[tuple[float, int]]]) -> str:
    """Every rank's chunks whose gate held a load warp (:data:`pipes.cute.comm.WAITED_NS`): chunk, the
    longest wait (µs) and how many load warps waited, in the timeline's timed launch."""
    each = []
    for rank, chunks in enumerate(waits):
        held = [f"#{c} {us:.1f}/{warps}" for c, (us, warps) in enumerate(chunks) if warps]
        each.append(f"{rank}: {' '.join(held) if held else 'none'}")
    return "  gate waits (chunk longest µs / load warps that waited): " + "; ".join(each)


def timings(  # noqa: ANN201
    a_r,  # noqa: ANN001
    w_r,  # noqa: ANN001
    ours: GatedGemm,
    device,  # noqa: ANN001
    rounds: Rounds,
    per_round: dict | None = None,
    variants: dict[str, GatedGemm] | None = None,
) -> dict:
    """µs per contender, the slower rank's median (``per_round``: filled with each round's µs); ``variants``:
    other ``GatedGemm`` launches timed beside ours under their names."""
    import torch
    import torch.distributed as dist
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate
    from ranks import time_by_slower_rank, torch_op

    m, n = ours.out.shape
    gathered = torch.empty(m, a_r.shape[1], device=device, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(gathered, a_r)
    result = torch.empty(m, n, device=device, dtype=torch.bfloat16)
    alone = torch.empty_like(result)

    def sequential() -> None:
        dist.all_gather_into_tensor(gathered, a_r)
        torch.matmul(gathered, w_r.t(), out=result)

    def fused(group: str):  # noqa: ANN202
        op, wt = torch.ops.symm_mem.fused_all_gather_matmul, w_r.t()  # (K, N_r): the op computes A @ B
        return lambda: op(a_r, [wt], 0, group)

    our_gemm = launcher(ours.alone_config, validate(gathered, w_r, out=alone), alone)
    contenders = {
        "matmul": lambda: torch.matmul(gathered, w_r.t(), out=result),
        "all_gather": lambda: dist.all_gather_into_tensor(gathered, a_r),
        "sequential": sequential,
        "our_gemm": our_gemm,
        "ours": ours.launch,
    }
    if not ours.sm_push:
        # the gates' own cost: the gated kernel with every chunk already there; and the copies' cost to a
        # GEMM beside them, no gate waiting (ours can be no faster without moving fewer bytes)
        contenders["gated_only"] = ours.launch_gated_only
        contenders["beside_copies"] = lambda: ours.pusher.copy_only(beside=our_gemm)
        contenders["beside_flagged"] = lambda: ours.pusher.copy_only(beside=our_gemm, rewrite_flags=True)
        contenders["grant_launching"] = lambda: ours.launch(grant_beside=False)
    contenders |= {name: variant.launch for name, variant in (variants or {}).items()}
    torch_fused = torch_op("fused_all_gather_matmul", fused)
    if torch_fused is not None:
        contenders["torch_fused"] = torch_fused
    return time_by_slower_rank(contenders, device, rounds, batch=5, rounds_out=per_round)


def report(rows: list[dict], world: int) -> None:
    print(f"device: {rows[0]['device']} × {world}; bf16 randn; C_r = AG(A)·W_rᵀ; µs (slower rank, median of rounds)")
    cols = [
        "matmul",
        "all_gather",
        "sequential",
        "torch_fused",
        "our_gemm",
        "gated_only",
        "beside_copies",
        "beside_flagged",
        "grant_launching",
        "ours",
    ]
    cols += sorted({c for r in rows for c in r.get("us", {}) if c.startswith("ours_")})  # the variants
    width = {c: max(12, len(c)) for c in cols}
    head = " ".join(f"{c:>{width[c]}}" for c in cols)
    paired = "+gemm by round (quartiles)"
    print(
        f"{'M×N_r×K':>18} {head} {'S':>5} {'×torch':>6} {'+gemm':>6} {paired:>26} {'rel err':>8} {'repeat':>6}  "
        "configuration"
    )
    for r in rows:
        m, n, k = r["shape"]
        us = r.get("us", {})
        cells = " ".join(f"{us[c]:{width[c]}.1f}" if c in us else f"{'–':>{width[c]}}" for c in cols)
        s = f"{r['S']:5.2f}" if "S" in r else "    –"
        vs = f"{r['vs_torch_fused']:6.2f}" if r.get("vs_torch_fused") else "     –"
        over = f"{100 * r['over_gemm']:5.1f}%" if "over_gemm" in r else "     –"
        by_round = "–"
        if "over_gemm_rounds" in r:
            mid, q1, q3 = (100 * v for v in r["over_gemm_rounds"])
            by_round = f"{mid:+.1f}% ({q1:+.1f} … {q3:+.1f})"
        line = f"{f'{m}×{n}×{k}':>18} {cells} {s} {vs} {over} {by_round:>26} {r['rel_err']:8.1e}"
        line += f" {str(r['bitwise_repeat']):>6}"
        print(f"{line}  {r['config']}{'' if r['prepared'] else ' (the DSL call)'}")
    from ranks import report_footer

    def copies(t: dict) -> str:
        spans = zip(t["copies"], t["started"], t["flags"], strict=True)
        return "copies (to rank#chunk, may begin–flag) " + " ".join(
            f"→{peer}#{chunk} {b:.0f}–{e:.0f}" for (peer, chunk), b, e in spans
        )

    report_footer(rows, "vs_torch_fused", copies)
    for r in rows:
        if "gate_waits" in r.get("timeline", {}):
            print(f"{'×'.join(map(str, r['shape']))}:{gate_wait_line(r['timeline']['gate_waits'])}")
    out = os.environ.get("OUT")
    if out:
        Path(out, "tp_ag_gemm.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
