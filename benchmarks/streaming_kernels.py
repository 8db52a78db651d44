"""Streaming kernels (examples/streaming) against a device-to-device copy of the same bytes and torch.

One process, one GPU, randn inputs: achieved bandwidth = (bytes read + written) / time, as a ratio to
``copy_`` of the same bytes measured in the same run; torch's ``F.rms_norm`` and ``torch.add(y, x,
alpha=…)`` for reference; the pipeline depth sweep (stages in flight vs bandwidth); TMA store vs plain
``st.global``; small-M latency. Every configuration checks its own output before it is timed.

    python benchmarks/streaming_kernels.py                    # GPU: tables on stdout, JSON + log in $OUT if set
    python benchmarks/streaming_kernels.py --small-m          # GPU: the small-M latency section only
    python benchmarks/streaming_kernels.py --host             # any machine: host path per call, up to the launch
    python benchmarks/streaming_kernels.py --compile-only     # CPU: compile every configuration, print the plans
    python benchmarks/streaming_kernels.py --tables RESULT.json                           # tables of a saved run
    python benchmarks/streaming_kernels.py --plot RESULT.json docs/streaming_stages.svg   # the docs figure
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")]

from streaming.plan import Op, Store, StreamConfig, make_plan  # noqa: E402

DTYPE = "bf16"
ELEMENTS = 1 << 28  # M × N of every bandwidth row: 512 MiB per bf16 tensor, far beyond L2
RMSNORM_N = (1024, 4096, 8192, 32768)
AXPBY_N = 8192
SWEEP_N = 8192
SWEEP_STAGES = (1, 2, 3, 4, 5, 6)
SMALL_M = (1, 2, 4, 8, 16, 32, 64)
SMALL_N = 8192
#: Rows held over several chunks (N = 32768): ring depth and chunk size around the default (8 × 16 KiB).
LONG_N = 32768
LONG_CONFIGS = ((5, 16_384), (6, 16_384), (10, 16_384), (12, 8_192), (16, 8_192))
TARGETS = {"axpby": 0.95, "rmsnorm": 0.90, "small_m": 3.0}


@dataclass(frozen=True)
class Case:
    section: str  # main | sweep | store | small_m
    op: Op
    n: int
    config: StreamConfig | None
    m: int

    def plan(self) -> Any:
        return make_plan(self.op, DTYPE, self.n, self.config)


def cases() -> list[Case]:
    """Every configuration the benchmark runs (the CPU test compiles each of them)."""
    out = [Case("main", Op.AXPBY, AXPBY_N, None, ELEMENTS // AXPBY_N)]
    out += [Case("main", Op.RMSNORM, n, None, ELEMENTS // n) for n in RMSNORM_N]
    for op in (Op.AXPBY, Op.RMSNORM):
        for ctas in (1, 2):
            for stages in SWEEP_STAGES:
                config = StreamConfig(stages=stages, ctas_per_sm=ctas)
                try:
                    make_plan(op, DTYPE, SWEEP_N, config)
                except ValueError:
                    continue  # two CTAs of this depth do not fit one SM
                out.append(Case("sweep", op, SWEEP_N, config, ELEMENTS // SWEEP_N))
    out.append(Case("store", Op.AXPBY, AXPBY_N, StreamConfig(store=Store.ST_GLOBAL), ELEMENTS // AXPBY_N))
    out += [
        Case("store", Op.RMSNORM, n, StreamConfig(store=Store.ST_GLOBAL), ELEMENTS // n) for n in (1024, 8192, 32768)
    ]
    out += [
        Case("long", Op.RMSNORM, LONG_N, StreamConfig(stages=stages, stage_bytes=size), ELEMENTS // LONG_N)
        for stages, size in LONG_CONFIGS
    ]
    out += [Case("small_m", Op.RMSNORM, SMALL_N, None, m) for m in SMALL_M]
    return out


def compile_all() -> int:
    from streaming.build import compile_kernel

    seen: set = set()
    bad = 0
    print("| section | plan | regs (limit) | spills | compile s |")
    print("|---|---|---:|---:|---:|")
    for case in cases():
        plan = case.plan()
        if plan.key() in seen:
            continue
        seen.add(plan.key())
        kernel = compile_kernel(plan, report=True)
        r = kernel.report
        bad += r.spills > 0 or r.registers > plan.register_limit
        print(
            f"| {case.section} | {plan.describe()} | {r.registers} ({plan.register_limit}) | {r.spills} | "
            f"{kernel.compile_seconds:.2f} |"
        )
    return 1 if bad else 0


class Log:
    """Print and keep every line, for $OUT/streaming.md."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)


def run(log: Log, sections: set[str] | None = None) -> dict[str, Any]:
    """Every case (or those of ``sections``), then the tables."""
    import torch
    from streaming.bench import CheckFailed, bench_axpby, bench_rmsnorm, bench_small_m
    from streaming.timing import copy_gbps

    started = time.perf_counter()
    props = torch.cuda.get_device_properties(0)
    device = f"{props.name} ({props.multi_processor_count} SMs)"
    copies: dict[int, float] = {}

    def copy_for(nbytes: int) -> float:
        if nbytes not in copies:
            copies[nbytes] = copy_gbps(nbytes, "cuda")
        return copies[nbytes]

    records: list[dict[str, Any]] = []
    failures: list[str] = []
    for case in cases():
        if sections is not None and case.section not in sections:
            continue
        element = case.plan().element_bytes
        try:
            if case.section == "small_m":
                row = bench_small_m(case.m, case.n, DTYPE)
            else:  # the copy baseline moves what the kernel moves: x, y, out (axpby) or x, out (RMSNorm)
                bench, tensors = (bench_axpby, 3) if case.op is Op.AXPBY else (bench_rmsnorm, 2)
                copy = copy_for(tensors * case.m * case.n * element)
                row = bench(case.m, case.n, DTYPE, case.config, copy=copy, baseline=case.section == "main")
        except CheckFailed as exc:
            failures.append(str(exc))
            log(f"CHECK FAILED: {exc}")
            continue
        record = {"section": case.section, **row.record()}
        records.append(record)
    doc = {
        "device": device,
        "dtype": DTYPE,
        "elements": ELEMENTS,
        "copy_gbps": copies,
        "rows": records,
        "failures": failures,
        "seconds": time.perf_counter() - started,
    }
    report(doc, log)
    return doc


def _fmt(value: Any, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _has(rows: list[dict[str, Any]], section: str) -> bool:
    return any(r["section"] == section for r in rows)


def report(doc: dict[str, Any], log: Log) -> None:
    rows = doc["rows"]
    copies = doc["copy_gbps"]
    copy = max(copies.values()) if copies else None
    log(
        f"device: {doc['device']}, {doc['dtype']}, M×N = 2^{doc['elements'].bit_length() - 1}"
        + (f"; copy_ of the same bytes: {', '.join(f'{v:.0f}' for v in copies.values())} GB/s" if copies else "")
    )
    log()
    if _has(rows, "main"):
        main_table(rows, log)
    if _has(rows, "sweep"):
        sweep_table(rows, log)
    if _has(rows, "long"):
        long_table(rows, log)
    if _has(rows, "store"):
        store_table(rows, log)
    small_m_tables(rows, log)
    for failure in doc["failures"]:
        log(f"FAILED: {failure}")
    log(f"copy reference {_fmt(copy, '.0f')} GB/s; {len(rows)} configurations in {doc['seconds']:.0f} s")


def main_table(rows: list[dict[str, Any]], log: Log) -> None:
    log("| kernel | M × N | stages | CTAs/SM | µs | GB/s | copy GB/s | × copy | target | torch µs | × torch |")
    log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["section"] != "main":
            continue
        target = TARGETS[r["kernel"]]
        mark = "ok" if r["ratio"] >= target else "MISS"
        log(
            f"| {r['kernel']} | {r['m']} × {r['n']} | {r['stages']} | {r['ctas_per_sm']} | {r['us']:.1f} | "
            f"{r['gbps']:.0f} | {r['copy_gbps']:.0f} | **{r['ratio']:.3f}** | ≥ {target} {mark} | "
            f"{_fmt(r['torch_us'], '.1f')} | {_fmt(r['vs_torch'], '.2f')} |"
        )
    log()


def sweep_table(rows: list[dict[str, Any]], log: Log) -> None:
    log(f"Pipeline depth (N = {SWEEP_N}): load bytes in flight per SM vs bandwidth")
    log()
    log("| kernel | stages | CTAs/SM | KiB in flight / SM | GB/s | × copy |")
    log("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["section"] == "sweep":
            log(
                f"| {r['kernel']} | {r['stages']} | {r['ctas_per_sm']} | {r['in_flight_kib']} | {r['gbps']:.0f} | "
                f"{r['ratio']:.3f} |"
            )
    log()


def long_table(rows: list[dict[str, Any]], log: Log) -> None:
    log(f"Rows held over several chunks (N = {LONG_N}): ring depth and chunk size")
    log()
    log("| stages | chunk KiB | chunks/row | KiB in flight / SM | GB/s | × copy |")
    log("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["section"] == "long" or (r["section"] == "main" and r["kernel"] == "rmsnorm" and r["n"] == LONG_N):
            chunk_kib = r["in_flight_kib"] // r["stages"] // r["ctas_per_sm"]
            log(
                f"| {r['stages']} | {chunk_kib} | {LONG_N * 2 // 1024 // chunk_kib} | {r['in_flight_kib']} | "
                f"{r['gbps']:.0f} | {r['ratio']:.3f} |"
            )
    log()


def store_table(rows: list[dict[str, Any]], log: Log) -> None:
    log("Output path: TMA store through the staging ring vs st.global.v4 from registers (default otherwise)")
    log()
    log("| kernel | N | TMA store × copy | st.global × copy |")
    log("|---|---:|---:|---:|")
    for r in rows:
        if r["section"] != "store":
            continue
        tma = next(
            (t for t in rows if t["section"] == "main" and t["kernel"] == r["kernel"] and t["n"] == r["n"]), None
        )
        log(f"| {r['kernel']} | {r['n']} | {_fmt(tma and tma['ratio'], '.3f')} | {r['ratio']:.3f} |")
    log()


def _ratio(theirs: float | None, ours: float | None) -> float | None:
    return theirs / ours if theirs and ours else None


def small_m_tables(rows: list[dict[str, Any]], log: Log) -> None:
    """Per-call latency three ways against torch, then what bounds each figure (host time per call, and
    GPU time from CUDA-graph replay). Rows recorded with one figure per call (out= given, before the three-way
    split) fill what they have."""
    small = [r for r in rows if r["section"] == "small_m"]
    if not small:
        return
    target = TARGETS["small_m"]
    log(f"Small M (N = {SMALL_N}): µs per call, back-to-back calls timed with CUDA events (host work included)")
    log()
    log(
        "| M | torch µs | `rmsnorm(x, w)` µs | × torch | `out=` µs | × torch | bound call µs | × torch "
        "| graph call µs | × torch | target |"
    )
    log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in small:
        extra = r.get("extra") or {}
        if "out_us" in extra:
            alloc_us, out_us, bound_us = r["us"], extra["out_us"], extra.get("bound_us")
        else:  # a row with one figure only, measured with out= given
            alloc_us, out_us, bound_us = None, r["us"], None
        graph_call_us = extra.get("graph_call_us")
        ratios = [_ratio(r["torch_us"], us) for us in (alloc_us, out_us, bound_us, graph_call_us)]
        names = ("call", "out=", "bound", "graph call")
        met = [name for name, x in zip(names, ratios, strict=True) if x and x >= target]
        log(
            f"| {r['m']} | {r['torch_us']:.1f} | {_fmt(alloc_us, '.1f')} | **{_fmt(ratios[0], '.2f')}** | "
            f"{_fmt(out_us, '.1f')} | {_fmt(ratios[1], '.2f')} | {_fmt(bound_us, '.1f')} | "
            f"**{_fmt(ratios[2], '.2f')}** | {_fmt(graph_call_us, '.1f')} | **{_fmt(ratios[3], '.2f')}** | "
            f"≥ {target:g}: {', '.join(met) or 'MISS'} |"
        )
    log()
    log("What bounds them: host µs per call (perf_counter, no sync) and GPU µs per call (CUDA-graph replay)")
    log()
    log(
        "| M | host: torch | host: `rmsnorm(x, w)` | host: `out=` | host: bound | host: graph call "
        "| GPU: torch | GPU: ours | GPU ratio |"
    )
    log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in small:
        extra = r.get("extra") or {}
        log(
            f"| {r['m']} | {_fmt(extra.get('torch_host_us'), '.1f')} | {_fmt(extra.get('host_us'), '.1f')} | "
            f"{_fmt(extra.get('out_host_us'), '.1f')} | {_fmt(extra.get('bound_host_us'), '.1f')} | "
            f"{_fmt(extra.get('graph_call_host_us'), '.1f')} | "
            f"{_fmt(r['torch_graph_us'], '.1f')} | {_fmt(r['graph_us'], '.1f')} | "
            f"{_fmt(_ratio(r['torch_graph_us'], r['graph_us']), '.2f')} |"
        )
    log()


def plot(result: str, figure: str) -> None:
    """The docs figure: × copy against KiB of loads in flight per SM, one line per kernel and CTAs/SM.
    SVG (text, diffable, reproducible: fixed hash salt, no date) unless ``figure`` names another format."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "pipes-streaming"
    plt.rcParams["svg.fonttype"] = "none"  # text as text, not glyph outlines: a few times smaller

    with open(result) as f:
        doc = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 4))
    for kernel in ("axpby", "rmsnorm"):
        for ctas in (1, 2):
            pts = sorted(
                (r["in_flight_kib"], r["ratio"], r["stages"])
                for r in doc["rows"]
                if r["section"] == "sweep" and r["kernel"] == kernel and r["ctas_per_sm"] == ctas
            )
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{kernel}, {ctas} CTA/SM")
                for x, y, s in pts:
                    ax.annotate(str(s), (x, y), textcoords="offset points", xytext=(3, -10), fontsize=7)
    for name, target in (("axpby target", TARGETS["axpby"]), ("rmsnorm target", TARGETS["rmsnorm"])):
        ax.axhline(target, linestyle="--", linewidth=0.8, color="grey")
        # x in axes coordinates: a label at a data x would sit off a log axis and squeeze the plot
        ax.text(0.01, target + 0.003, name, fontsize=7, color="grey", transform=ax.get_yaxis_transform())
    ax.set_xscale("log", base=2)
    kib = sorted({r["in_flight_kib"] for r in doc["rows"] if r["section"] == "sweep"})
    ax.set_xticks(kib, [str(k) for k in kib])
    ax.minorticks_off()
    ax.set_xlabel("TMA-load KiB in flight per SM (stages × 16 KiB × CTAs/SM); point labels: stages")
    ax.set_ylabel("bandwidth / copy_ bandwidth")
    ax.set_title(f"{doc['device']}, {doc['dtype']}, N = {SWEEP_N}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(figure, dpi=120, metadata={"Date": None} if figure.endswith(".svg") else None)
    plt.close(fig)


def host_table(log: Log) -> None:
    """The host path per call on this machine, up to the driver's launch (examples/streaming/hostcost.py)."""
    from streaming.hostcost import format_table, measure

    log(format_table(measure(1, SMALL_N, DTYPE), 1, SMALL_N, DTYPE))  # M only changes values written, not work
    log()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compile-only", action="store_true", help="compile every configuration (no GPU)")
    parser.add_argument("--plot", nargs=2, metavar=("RESULT_JSON", "FIGURE"), help="draw the stages figure")
    parser.add_argument("--tables", metavar="RESULT_JSON", help="print the tables of a saved result (no GPU)")
    parser.add_argument("--host", action="store_true", help="host path per call up to the launch (no GPU needed)")
    parser.add_argument("--small-m", action="store_true", help="GPU: the small-M latency section only")
    args = parser.parse_args(argv)
    if args.plot:
        plot(*args.plot)
        return 0
    if args.compile_only:
        return compile_all()
    log = Log()
    if args.tables:
        with open(args.tables) as f:
            report(json.load(f), log)
        return 0
    if args.host:
        host_table(log)
        return 0
    doc = run(log, {"small_m"} if args.small_m else None)
    out_dir = os.environ.get("OUT")
    if out_dir:
        name = "streaming_small_m" if args.small_m else "streaming"
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
            f.write("\n".join(log.lines) + "\n")
    return 1 if doc["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
