"""Hand-off round trip: acquire → commit → wait → release, pipes vs hand-written cutlass.pipeline.

One CTA per SM; in each, a producer role and a consumer role hand ``stages`` slots back and forth
``iters`` times (the ordered kind: two warpgroups take turns). A round trip is one slot going
producer → consumer → producer; with one stage that is pure hand-off latency, with more stages the
two sides overlap and the figure is the per-slot cost of the busier side. Every kernel also checks
its own hand-offs: the consumer sums what the producer put in the slots (or the groups count their
turns) and the host compares that to the exact expected value, so a broken protocol cannot post a
time.

Both versions of a kind are compiled and timed in the same process, launches interleaved, median of
CUDA-event timings after warm-up; the table gives ns per round trip and pipes / cutlass.

"TMA load multicast" runs 2-CTA clusters (grid rounded down to whole clusters): each CTA multicasts half
of every tile to both, two consumer warpgroups per CTA release on both CTAs' empty barriers — pipes with
an ELECTED_PER_WARP × 8 role (16 remote arrivals per stage, the stock form); ``--diagnostics`` adds
"pipes WARPGROUP" (2 × WARPGROUP: 512) and, for every kind, the wait flavour its default is not
("pipes suspending waits" for async / TMA load / ordered, "pipes polling waits" for store-notify).

    python benchmarks/handoff.py                    # on the GPU: table (+ --markdown for RESULTS.md)
    python benchmarks/handoff.py --markdown --diagnostics --repeats 41   # the RESULTS.md run
    python benchmarks/handoff.py --compile-only     # on the CPU: loop-body PTX of each pair, diffed
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass.cute as cute  # noqa: E402
from cutlass import Int32  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import handoff_kernels as hk  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One table row: a kind at a stage count (store-notify: lag = stages - 1; ordered: sections)."""

    kind: str
    stages: int

    @property
    def label(self) -> str:
        if self.kind == "ordered":
            return f"ordered ({self.stages} section{'s' if self.stages > 1 else ''})"
        if self.kind == "store-notify":
            return f"store-notify ({self.stages} st, lag {self.stages - 1})"
        return f"{self.kind} ({self.stages} stage{'s' if self.stages > 1 else ''})"

    def launchers(self, blocks: int, diagnostics: bool = False) -> dict[str, Callable]:
        make_cutlass, make_pipes = hk.KINDS[self.kind]
        found = {"cutlass": make_cutlass(self.stages, blocks), "pipes": make_pipes(self.stages, blocks)}
        if diagnostics:
            for name, make in hk.DIAGNOSTICS.get(self.kind, {}).items():
                found[name] = make(self.stages, blocks)
        return found

    @property
    def outputs(self) -> int:
        return hk.OUTPUTS_PER_BLOCK[self.kind]


CASES = [Case(kind, stages) for kind in hk.KINDS for stages in (1, 2 if kind in ("ordered", "store-notify") else 4)]


# --------------------------------------------------------------------------------------------------
# CPU: loop bodies side by side
# --------------------------------------------------------------------------------------------------
LOOP_RE = re.compile(r"^(\$L__\w+):\s*\n\s*\.pragma \"nounroll\";(.*?)^\s*(?:@%p\d+ )?bra(?:\.uni)?\s+\1;", re.M | re.S)


def loop_bodies(ptx: str) -> list[list[str]]:
    """Instructions of each non-unrolled loop, comments and inline-asm braces dropped."""
    bodies = []
    for match in LOOP_RE.finditer(ptx):
        lines = [ln.strip() for ln in match.group(2).splitlines()]
        bodies.append([ln for ln in lines if ln and not ln.startswith("//") and ln not in ("{", "}")])
    return bodies


def compile_only(blocks: int, verbose: bool) -> None:
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    options = f"--gpu-arch sm_90a --keep-ptx --dump-dir={tempfile.mkdtemp(prefix='pipes-handoff-')}"
    for case in CASES:
        out = make_fake_compact_tensor(Int32, (blocks * case.outputs,))
        aux = make_fake_compact_tensor(Int32, hk.aux_shape(case.kind, case.stages, blocks), stride_order=(1, 0))
        bodies = {}
        for name, launch in case.launchers(blocks, diagnostics=True).items():
            ptx = cute.compile(launch, out, aux, Int32(10), make_fake_stream(), options=options).artifacts.PTX
            bodies[name] = loop_bodies(ptx)
        sizes = {name: [len(b) for b in found] for name, found in bodies.items()}
        print(f"{case.label:28s} loop-body PTX instructions: " + "  ".join(f"{n} {v}" for n, v in sizes.items()))
        if verbose:
            for name, found in bodies.items():
                for i, body in enumerate(found):
                    print(f"  -- {name} loop {i}")
                    print("\n".join(f"      {line}" for line in body))


# --------------------------------------------------------------------------------------------------
# GPU: timing
# --------------------------------------------------------------------------------------------------
def measure(case: Case, blocks: int, iters: int, repeats: int, warmup: int, diagnostics: bool) -> dict:
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    stream = current_stream()
    out = torch.full((blocks * case.outputs,), -1, dtype=torch.int32, device="cuda")
    rows, cols = hk.aux_shape(case.kind, case.stages, blocks)
    aux = torch.from_numpy(hk.aux_values(case.kind, rows, cols)).cuda()
    args = (from_dlpack(out, assumed_align=16), from_dlpack(aux, assumed_align=16))
    compiled = {}
    for name, launch in case.launchers(blocks, diagnostics).items():
        compiled[name] = cute.compile(launch, *args, Int32(iters), stream)
    expected = hk.EXPECTED[case.kind](iters)
    for name, fn in compiled.items():  # warm-up, then each variant checks its own hand-offs
        for _ in range(warmup):
            out.fill_(-1)
            fn(*args, Int32(iters), stream)
        torch.cuda.synchronize()
        got = set(out[: hk.launched_blocks(case.kind, blocks) * case.outputs].cpu().tolist())
        if got != {expected}:
            raise SystemExit(f"{case.label} / {name}: self-check failed: got {sorted(got)[:4]}, expected {expected}")
    times: dict[str, list[float]] = {name: [] for name in compiled}
    for r in range(repeats):
        names = list(compiled)
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate who goes first
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            compiled[name](*args, Int32(iters), stream)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1e6 / iters)  # ns per round trip
    med = {name: statistics.median(t) for name, t in times.items()}
    spread = {name: (max(t) - min(t)) / med[name] for name, t in times.items()}
    row = dict(case=case.label, cutlass=med["cutlass"], pipes=med["pipes"], ratio=med["pipes"] / med["cutlass"])
    row["spread"] = spread
    row["extra"] = {name: med[name] for name in med if name not in ("cutlass", "pipes")}
    extra = "".join(f"  {name} {value:8.2f} ns" for name, value in row["extra"].items())
    print(
        f"  {case.label:28s} cutlass {row['cutlass']:8.2f} ns  pipes {row['pipes']:8.2f} ns  "
        f"ratio {row['ratio']:.3f}  (spread {spread['cutlass']:.1%} / {spread['pipes']:.1%}){extra}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compile-only", action="store_true", help="CPU: print the loop bodies, no timing")
    parser.add_argument("--blocks", type=int, default=0, help="CTAs (default: one per SM)")
    parser.add_argument("--iters", type=int, default=20000, help="round trips per launch")
    parser.add_argument("--repeats", type=int, default=31, help="timed launches per variant")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="with --compile-only: print the loop bodies")
    parser.add_argument("--diagnostics", action="store_true", help="also time the diagnostic pipes variants")
    parser.add_argument("--only", default="", help="comma-separated kinds to run (default: all)")
    parser.add_argument("--markdown", action="store_true", help="also print the table as markdown")
    args = parser.parse_args()
    if args.compile_only:
        compile_only(args.blocks or 2, args.verbose)
        return
    import torch

    props = torch.cuda.get_device_properties(0)
    blocks = args.blocks or props.multi_processor_count
    print(
        f"device: {props.name}, {props.multi_processor_count} SMs; {blocks} CTAs, {args.iters} round trips "
        f"per launch, median of {args.repeats} launches per variant (interleaved), after {args.warmup} warm-up"
    )
    chosen = [c for c in CASES if not args.only or c.kind in args.only.split(",")]
    rows = [measure(case, blocks, args.iters, args.repeats, args.warmup, args.diagnostics) for case in chosen]
    print()
    header = f"{'device':24s} {'kind':28s} {'cutlass ns/rt':>14s} {'pipes ns/rt':>12s} {'pipes/cutlass':>14s}"
    print(header)
    for row in rows:
        print(f"{props.name:24s} {row['case']:28s} {row['cutlass']:14.2f} {row['pipes']:12.2f} {row['ratio']:14.3f}")
    if args.markdown:
        print("\n| device | kind | cutlass ns/round trip | pipes ns/round trip | pipes / cutlass |")
        print("|---|---|---:|---:|---:|")
        for row in rows:
            print(f"| {props.name} | {row['case']} | {row['cutlass']:.1f} | {row['pipes']:.1f} | {row['ratio']:.3f} |")
    worst = max(rows, key=lambda r: r["ratio"])
    print(
        f"\nworst ratio {worst['ratio']:.3f} ({worst['case']}); spreads (max-min)/median: "
        + ", ".join(f"{r['case']}: {r['spread']['cutlass']:.1%}/{r['spread']['pipes']:.1%}" for r in rows)
    )


if __name__ == "__main__":
    sys.exit(main())
