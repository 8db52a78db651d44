"""A GEMM whose finished tiles a communication warp ships while the GEMM still runs.

    python examples/epilogue_comm.py                                   # small default, host transport
    python examples/epilogue_comm.py --m 4096 --n 4096 --k 16384 --transport host --check --bench
    python examples/epilogue_comm.py --transport local --trace timeline.png
    torchrun --nproc-per-node 2 examples/epilogue_comm.py --transport peer --check --bench   # two GPUs

The persistent Hopper GEMM (examples/hopper_gemm, cooperative schedule) TMA-stores each output tile and
commits (tm, tn) to a ``pipes.cute.StoreNotifyPipeline``; warp 1 of the producer warpgroup waits for
it, ships the tile and releases a per-tile ready flag (the launch's epoch) at the scope the receiver
needs, while the math warpgroups compute the next tiles. The flags, credits, copies, the copy-engine
shipper and the host consumer are the comm library's (``pipes.cute.comm``, ``pipes.comm``;
docs/comm.md); examples/tile_comm adds what is specific to this GEMM and its measurements.
Transports: ``host`` (page-locked host memory, system scope; a host thread checksums tiles as they
land), ``local`` (a second device buffer, GPU scope), ``none`` (the comm warp consumes tiles and ships
nothing). Engines (``--engine``): ``copy``
(``host``'s default: the comm warp counts finished tiles per step and the GPU's copy engines DMA each
complete step) or ``sm`` (the comm warp copies the tile itself, 16-byte loads and stores).
Without a GPU it compiles every kernel for sm_90a, reports their resources and checks the pipeline
protocol with pipes.check (exit 0). The role/pipeline table is in examples/hopper_gemm/kernel.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "contrib")]

from tile_comm.config import IMPLEMENTED, CommConfig, Engine, Transport  # noqa: E402

from pipes.epoch import as_int32  # noqa: E402


def comm_config(args: argparse.Namespace) -> CommConfig:
    """The transport's default communication warp, or the engine asked for (``ValueError`` if invalid)."""
    return CommConfig.default(Transport(args.transport), args.engine)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=2048)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--dtype", choices=["fp16", "bf16"], default="bf16")
    p.add_argument("--transport", choices=[t.value for t in IMPLEMENTED], default="host")
    p.add_argument(
        "--engine", choices=[e.value for e in Engine], help="who moves the bytes (default: the transport's own)"
    )
    p.add_argument("--check", action="store_true", help="compare C with torch (fp32) too")
    p.add_argument("--bench", action="store_true", help="measure E, S, R against the baselines (one run)")
    p.add_argument("--trace", help="draw a per-role timeline of 4 CTAs to this PNG")
    p.add_argument("--json", help="write the figures here")
    return p.parse_args(argv)


def no_gpu_report(args: argparse.Namespace) -> int:
    from hopper_gemm.config import Problem
    from hopper_gemm.roles import declare
    from tile_comm.build import alone_resources, fused_resources
    from tile_comm.launcher import default_config
    from tile_comm.protocol import BUGS, check_declarations
    from tile_comm.role import CommRole

    comm = comm_config(args)
    problem = Problem(args.dtype)
    config = default_config(args.m, args.n, args.k, args.dtype, comm)
    if comm.transport is Transport.PEER:
        from tile_comm.peer import PEER_GEMM, WORLD, copy_engine_config, step_rows_for

        if comm.engine is Engine.COPY or args.engine is None:  # the two-GPU example's default: the copy engine
            config = copy_engine_config(args.n)
            steps = step_rows_for(args.m, config, WORLD)
            comm = CommConfig(Transport.PEER, ship_blocks=WORLD, engine="copy", adds_received=True, step_rows=steps)
        else:
            comm, config = CommConfig(Transport.PEER, ship_blocks=WORLD, unroll=8), PEER_GEMM
        print("transport peer: two GPUs, one process each (examples/tp_gemm_rs.py); the kernel of one rank:")
    print("no CUDA GPU here: compiling for sm_90a instead (nothing runs)")
    print(f"  GEMM {config.describe()}; {comm.describe()}")
    print("  " + fused_resources(config, problem, comm).line())
    if comm.pushes:
        print("  " + alone_resources(config, comm, args.dtype).line())
    decl = declare(config, problem, comm=CommRole(comm, config))
    print("pipeline protocol (pipes.check, a CPU model of the kernel's declarations; 4 tiles of 3 subtiles):")
    engine = {"engine": "copy"} if comm.counts_steps and comm.transport is not Transport.PEER else {}
    if engine:
        print("  (the copy engine's protocol: comm warp counts per step, the copy stream ships the step)")
    report = check_declarations(decl, comm.scope, **engine)
    print(f"  {report}".splitlines()[0])
    for bug in BUGS:
        if comm.scope is None and bug != "notify_on_read":  # 'none' ships nothing to break
            continue
        found = check_declarations(decl, comm.scope, bug=bug, **engine)
        kind = found.findings[0].kind.name if found.findings else "nothing found"
        print(f"  planted {bug:<17}: {kind}")
    if comm.adds_received:  # the two GPUs' launch protocol across launches (credits, counters, inbox flags)
        from tile_comm.protocol_peer import PEER_BUGS, check_reduce_scatter

        streams = comm.copy_streams
        print(f"two-GPU launch protocol (pipes.check; 2 ranks × 3 launches × 2 bands, {streams} copy streams):")
        launches = check_reduce_scatter(3, 2, streams=streams)
        print(f"  {launches}".splitlines()[0])
        for bug in PEER_BUGS:
            found = check_reduce_scatter(3, 2, bug, streams=streams)
            kind = found.findings[0].kind.name if found.findings else "nothing found"
            print(f"  planted {bug:<19}: {kind}")
        report = report if not report.ok else launches
    return 0 if report.ok else 1


def run(args: argparse.Namespace) -> int:
    import torch
    from tile_comm.consumer import HostConsumer
    from tile_comm.launcher import EpilogueComm

    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(args.m, args.k, device="cuda", dtype=tdt, generator=g)
    b = torch.randn(args.n, args.k, device="cuda", dtype=tdt, generator=g)
    fused = EpilogueComm(a, b, args.transport, comm=comm_config(args))
    fused.compile()
    print(f"{torch.cuda.get_device_name()}: {args.m}×{args.n}×{args.k} {args.dtype}, {fused.config.describe()}")
    print(f"  {fused.comm.describe()}; {fused.ctas} CTAs, {fused.receiver.tiles} tiles")
    figures: dict[str, object] = {"device": torch.cuda.get_device_name(), "config": fused.config.describe()}
    ok = True
    fused.launch()  # warm-up: module load and first-touch costs stay out of the observed launch
    torch.cuda.synchronize()
    consumer = None
    epoch = fused.receiver.next_epoch()
    if args.transport == "host":
        consumer = HostConsumer(fused.receiver, epoch, fused.ctas)
        consumer.start()
        consumer.started_polling.wait()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    launched = time.perf_counter_ns()
    fused.launch(stamps=bool(args.trace), epoch=epoch)
    end.record()
    if consumer is not None:
        consumer.result.launched_ns = launched
        consumer.join()
    torch.cuda.synchronize()
    print(f"  kernel: {start.elapsed_time(end) * 1000:.0f} µs (CUDA events), epoch {epoch}")
    if consumer is not None:
        for line in consumer.result.summary():
            print("  " + line)
        problems = consumer.verify()
        ok &= not problems
        print(
            "  host checksums as tiles landed: "
            + ("all match the final buffer" if not problems else "; ".join(problems))
        )
    if args.transport != "none":
        got = fused.receiver.untiled(args.m, args.n).to(fused.out.device)
        same = torch.equal(got, fused.out)
        flags = fused.receiver.tile_flags()
        advanced = int((flags == as_int32(epoch)).sum())
        ok &= same and advanced == fused.receiver.tiles
        print(f"  receiver == C bit for bit: {same}; flags at epoch {epoch}: {advanced}/{fused.receiver.tiles}")
    if args.check:
        ref = a.float() @ b.float().t()
        err = ((fused.out.float() - ref).abs().max() / ref.abs().max()).item()
        print(f"  check: max |err| / max |ref| = {err:.2e} (fp32 reference)")
        figures["rel_err"] = err
        ok &= err < (2e-3 if args.dtype == "fp16" else 1.6e-2)
    if args.trace:
        from tile_comm.timeline import overlap_summary, render

        found = render(
            fused.receiver.stamps,
            fused.receiver,
            fused.ctas,
            args.trace,
            f"{args.m}×{args.n}×{args.k} {args.dtype}, transport {args.transport}",
            consumer.result if consumer is not None else None,
        )
        summary = overlap_summary(found)
        print(
            f"  trace: {args.trace} (last epilogue ends at {summary['gemm_end_us']:.0f} µs; "
            f"{summary['push_before_gemm_end_us']:.0f} of {summary['push_us']:.0f} µs of pushing ran before it)"
        )
    if args.bench:
        from tile_comm.measure import header, measure, row

        result = measure(args.m, args.n, args.k, args.transport, args.dtype, comm=comm_config(args))
        print("times in µs; E, S, R as in docs/epilogue-comm.md")
        print(header())
        print(row(result))
        figures["bench"] = result.as_dict()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        comm_config(args)
    except ValueError as error:
        print(f"epilogue_comm.py: {error}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:  # a CPU-only install: the compile-only report needs no torch
        return no_gpu_report(args)
    if args.transport == "peer" and torch.cuda.is_available():
        # Two GPUs, one process each: examples/tp_gemm_rs.py (under torchrun, or it spawns the two itself).
        import tp_gemm_rs

        forwarded = ["--m", str(args.m), "--n", str(args.n), "--k", str(args.k)]
        forwarded += ["--check"] * args.check + ["--bench"] * args.bench
        forwarded += ["--engine", args.engine] if args.engine else []
        return tp_gemm_rs.main(forwarded)
    if not torch.cuda.is_available():
        return no_gpu_report(args)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
