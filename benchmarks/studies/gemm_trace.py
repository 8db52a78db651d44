"""Trace-mode timelines of the GEMM, cooperative vs ping-pong, for the docs (needs a Hopper GPU).

    python benchmarks/studies/gemm_trace.py [--out DIR]    # DIR defaults to $OUT or the working directory

Draws ``gemm_trace_<schedule>.png`` (2 SMs each: the load warp's slots, each math warp's k-tiles,
epilogues and ping-pong turns) and prints, per schedule, how much of the kernel the math warps spent
in epilogues and how much of it overlapped another warpgroup's mainloop (ping-pong's point).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import _paths  # noqa: F401
from gemm_modes.autotable import COOPERATIVE_128x256, PINGPONG_128x128
from needs_gpu import cuda_torch

SHAPE = (2048, 2048, 512)  # several short tiles per CTA: epilogues are a visible share


def overlap_summary(log) -> tuple[float, float]:
    """(epilogue share of math-warp time, share of epilogue time under another warpgroup's mainloop)."""
    from pipes.cute.timeline import spans

    found = spans(log.records)
    epi = [s for s in found if s.pipeline == 3]
    main = [s for s in found if s.pipeline == 1 and s.side == "consumer"]
    if not epi:
        return 0.0, 0.0
    start = min(s.start for s in found)
    end = max(s.end for s in found)
    warps = {(s.sm, s.block, s.warp) for s in epi}
    epi_time = sum(s.end - s.start for s in epi)
    hidden = 0
    for e in epi:
        others = [m for m in main if m.sm == e.sm and (m.warp // 4) != (e.warp // 4)]
        for m in others:
            hidden += max(0, min(e.end, m.end) - max(e.start, m.start))
    return epi_time / ((end - start) * len(warps)), min(1.0, hidden / max(1, epi_time * 4))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(argv)
    torch = cuda_torch("studies/gemm_trace.py")
    if torch is None:
        return 0
    from kernel_tools.tracing import traced_run

    from pipes.cute.timeline import draw_timeline

    m, n, k = SHAPE
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    print(f"device: {torch.cuda.get_device_name()}; {m}×{n}×{k} bf16, globaltimer clock")
    for name, config in (("cooperative", COOPERATIVE_128x256), ("pingpong", PINGPONG_128x128)):
        log = traced_run(a, b, config)
        path = draw_timeline(log, Path(args.out) / f"gemm_trace_{name}.png", max_sms=2, spans_per_row=24)
        share, hidden = overlap_summary(log)
        print(
            f"{name:>12}: epilogue {share:.1%} of math-warp time, {hidden:.0%} of it under the other "
            f"warpgroup's mainloop; {len(log.records)} records, dropped {sum(log.dropped.values())} -> {path}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
