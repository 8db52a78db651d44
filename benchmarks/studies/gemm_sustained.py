"""gemm() against torch when each runs on its own for a while: the clock each settles at, and the ratio.

``benchmarks/gemm.py`` interleaves batches of ten launches, so both contenders run at whatever clock the
mix of the two settles at under the power cap. Here each contender runs alone for SEGMENT_S seconds of
back-to-back launches, REPEATS times, alternating with the other (a pause between segments). Per segment:
the time per launch (CUDA events around the whole segment), and the SM clock and board power that
``nvidia-smi`` reports over it (the first SETTLE_S seconds left out). Per shape: the medians, the ratio
ours / torch throughput, and that ratio scaled by torch's clock over ours — what the ratio would be at
equal clocks if both were compute-bound (not so at 256×8192², where torch is bound by memory).

    python benchmarks/studies/gemm_sustained.py [--shapes 4096x4096x4096] [--segment 0.8] [--repeats 3]
    python benchmarks/studies/gemm_sustained.py --shapes 4096x4096x4096 --configs coop256x128c12d8,coop128x256c21d8

Ours is ``gemm()`` as a user calls it ("auto": the table's configuration, programmatic dependent launch),
and with ``--configs`` also those configurations of benchmarks/gemm.py's CANDIDATES (held launchers, with
programmatic dependent launch as gemm() launches them); torch is ``torch.matmul``, or ``F.linear`` for the
bias row. Inputs are ``torch.randn``, as in benchmarks/gemm.py.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import _paths  # noqa: F401
from gemm import CANDIDATES, SHAPES, TARGETS, shape_inputs
from gpu_clocks import ClockSampler, smi_id
from needs_gpu import cuda_torch
from shape_arg import table_rows

SEGMENT_S = 0.8
SETTLE_S = 0.2
PAUSE_S = 0.3
REPEATS = 3
#: Launches timed to size a segment (one launch alone is mostly host time for a short kernel).
ESTIMATE = 20


@dataclass(frozen=True)
class Segment:
    us: float  # per launch
    sm_mhz: float
    watts: float
    capped: float  # share of the window with the SW power cap active


@dataclass(frozen=True)
class Verdict:
    """One shape: the median segment of each contender and the ratios."""

    torch: Segment
    ours: Segment

    @property
    def ratio(self) -> float:
        """Ours / torch throughput."""
        return self.torch.us / self.ours.us

    @property
    def ratio_at_equal_clocks(self) -> float:
        """The ratio with ours' time scaled to torch's clock (compute-bound kernels: time ∝ 1 / clock)."""
        return self.ratio * self.torch.sm_mhz / self.ours.sm_mhz


def median_segment(segments: list[Segment]) -> Segment:
    """Per field, the median over the contender's segments."""
    return Segment(*(statistics.median(getattr(s, f) for s in segments) for f in ("us", "sm_mhz", "watts", "capped")))


def run_segment(fn: Callable[[], object], sampler: ClockSampler, seconds: float, torch) -> Segment:
    """``fn`` back to back for about ``seconds`` (the count from a timed batch of ESTIMATE launches), then
    the window."""
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(ESTIMATE):
        fn()
    torch.cuda.synchronize()
    launches = max(ESTIMATE, int(seconds * ESTIMATE / max(time.time() - t0, 1e-6)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    start.record()
    for _ in range(launches):
        fn()
    end.record()
    end.synchronize()
    window = sampler.window(t0 + SETTLE_S, time.time())
    return Segment(start.elapsed_time(end) * 1000 / launches, window.sm_mhz, window.watts, window.capped)


def contenders(shape: tuple, configs: list[str], torch) -> dict[str, Callable[[], object]]:
    """torch, ``gemm()`` ("auto") and a held launcher per name of ``configs``, each output checked once."""
    from gemm_modes.launch import launcher, without_unheld_ring_staging
    from hopper_gemm.api import gemm, validate

    m, n = shape[:2]
    a, w, bias, out, ref, torch_fn = shape_inputs(shape, torch)
    ref = ref.float()
    fns = {"torch": torch_fn, "auto": lambda: gemm(a, w, bias=bias, out=out)}
    for name in configs:
        config = without_unheld_ring_staging(CANDIDATES[name], m, n).with_(pdl=True)
        fns[name] = launcher(config, validate(a, w, bias=bias, out=out), out)
    for name, fn in fns.items():
        if name == "torch":
            continue
        out.fill_(float("nan"))
        fn()
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        if not err < 2e-2:  # NaN included: an output the launch never wrote
            raise SystemExit(f"{name} at {shape}: relative error {err} against torch")
    return fns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK: only these rows of benchmarks/gemm.py's table")
    parser.add_argument("--segment", type=float, default=SEGMENT_S, help="seconds per segment")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="segments per contender and shape")
    parser.add_argument("--configs", help="comma-separated names of benchmarks/gemm.py's CANDIDATES to run too")
    args = parser.parse_args(argv)
    if args.segment <= SETTLE_S or args.repeats < 1:
        parser.error(f"--segment must exceed {SETTLE_S} s (the settling left out) and --repeats be at least 1")
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else []
    unknown = [c for c in configs if c not in CANDIDATES]
    if unknown:
        parser.error(f"--configs {unknown} are not in benchmarks/gemm.py's CANDIDATES")
    shapes = table_rows(parser, args.shapes, SHAPES) if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_sustained.py")
    if torch is None:
        return 0
    with ClockSampler(smi_id(torch, torch.cuda.current_device())) as sampler:
        if not sampler.available:
            print("nvidia-smi not found: clocks are not reported (NaN)")
        print(
            f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; each contender alone for "
            f"{args.segment} s × {args.repeats}, alternating; clocks and power from nvidia-smi"
        )
        side = f"{'MHz':>5} {'W':>4} {'cap':>4}"
        columns = f"{'M×N×K':>16} {'dtype':>5} {'bias':>4} {'ours':>20} | {'torch µs':>9} {side} | "
        print(columns + f"{'ours µs':>9} {side} | {'ratio':>6} {'@clock':>6} {'target':>6}")
        for shape in shapes:
            fns = contenders(shape, configs, torch)
            segments: dict[str, list[Segment]] = {name: [] for name in fns}
            for _ in range(args.repeats):
                for name, fn in fns.items():
                    segments[name].append(run_segment(fn, sampler, args.segment, torch))
                    time.sleep(PAUSE_S)
            m, n, k, dtype, bias = shape
            t = median_segment(segments["torch"])
            for name in list(fns)[1:]:
                v = Verdict(t, median_segment(segments[name]))
                o = v.ours
                print(
                    f"{f'{m}×{n}×{k}':>16} {dtype:>5} {'yes' if bias else 'no':>4} {name:>20} | {t.us:9.1f} "
                    f"{t.sm_mhz:5.0f} {t.watts:4.0f} {t.capped:4.0%} | {o.us:9.1f} {o.sm_mhz:5.0f} {o.watts:4.0f} "
                    f"{o.capped:4.0%} | "
                    f"{v.ratio:6.3f} {v.ratio_at_equal_clocks:6.3f} {TARGETS.get((m, n, k), float('nan')):6.2f}",
                    flush=True,
                )
    print(
        "(ratio: ours / torch throughput; @clock: that ratio with ours scaled to torch's clock; cap: share of "
        "the samples with the SW power cap holding the clock down — near 100 %, the ratio is one of energy "
        "per GEMM)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
