"""How full the last wave is: the measurement behind ``autotable.wave_balance``, ``split_tail``, ``stream_k_pays``.

For shapes past the fill rules (every SM has a tile), every contender of the two rules runs with
programmatic dependent launch (as ``gemm()`` launches), interleaved with torch.matmul (``F.linear`` with a bias)
in ``ROUNDS`` rounds of ``BATCH`` launches, rotating order, median; each is checked against torch once,
and the whole comparison repeats ``--repeats`` times (a mid-size shape's torch time moves by up to 20 %
between runs). The contenders: the cooperative 128×256 tile with the deferred epilogue (``coop``), the
same with stream-K's remainder mode (``coop-sk``, long K only) and its aligned mode (``coop-aligned``,
where it splits), split-K on the last wave (``coop-tail``,
the rule's part count, where one fits), ping-pong 128×192 (not with a bias: it spills) and 128×128, each
in clusters 2×1 and 1×2, the narrower cooperative tiles and, without a bias, cooperative 192×192.

One row per shape: its cooperative cluster-tiles as whole waves + the partial one on the GPU's clusters,
torch's time, the rules' pick and its ratio, the best contender, and every ratio (ours / torch
throughput, one per repetition). The last line counts the shapes where the pick was the best or within
1 % of it (mean over repetitions).

    python benchmarks/studies/gemm_waves.py [--shapes 3072x3072x2048,...] [--bias] [--repeats 2]
"""

from __future__ import annotations

import argparse

import _paths  # noqa: F401
from gemm_modes.autotable import COOPERATIVE_DEFERRED, COOPERATIVE_NARROWER, TALL_MERIT
from gemm_modes.modes import TunedConfig, tuned_config
from hopper_gemm.config import Schedule
from needs_gpu import cuda_torch, device_with_sms
from shape_arg import parse_shapes

#: (M, N, K, bias): the shapes of the wave-balance (docs/gemm-auto.md), stream-K and aligned-split (docs/gemm.md)
#: tables (2026-11-26).
SHAPES = [
    (2048, 2048, 2048, False),
    (4096, 4096, 2048, False),
    (3072, 3072, 2048, False),
    (3072, 3072, 8192, False),
    (2048, 3072, 8192, False),
    (2048, 5120, 2048, False),
    (6144, 7168, 2048, False),
    (7168, 7168, 2048, False),
    (8192, 8192, 1024, False),
    (8192, 4096, 1024, False),
    (8192, 8192, 512, True),
    (8192, 8192, 1024, True),
    (2560, 2560, 8192, False),
    (3072, 3584, 8192, False),
    (2304, 3328, 8192, False),
    (2816, 2816, 8192, False),
    (4608, 4608, 8192, False),
    (5120, 5120, 8192, False),
    (4352, 4352, 8192, False),
    (6144, 1024, 2048, False),
    (3072, 2048, 2048, False),
    (1536, 3072, 8192, False),
    (3072, 1536, 8192, False),
    (1536, 3072, 2048, False),
    (3840, 3840, 8192, False),
    (2560, 4096, 8192, False),
    (3072, 1024, 8192, False),
    (3072, 1024, 4096, False),
    (1536, 2560, 8192, False),
    (4096, 5120, 8192, False),
]
COOP, COOP_SK, COOP_TAIL, COOP_ALIGNED = "coop", "coop-sk", "coop-tail", "coop-aligned"
P = Schedule.PINGPONG
CANDIDATES = {
    COOP: COOPERATIVE_DEFERRED,
    COOP_SK: COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_remainder=True),
    COOP_ALIGNED: COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_aligned=True),
} | {f"pp{tn}c{cm}{3 - cm}": tuned_config(128, tn, cm, 3 - cm, P) for tn in (192, 128) for cm in (2, 1)}
#: The narrower cooperative tiles the wave balance weighs (``autotable.COOPERATIVE_NARROWER``).
CANDIDATES |= {f"coop{config.tile_n}": config for config, _ in COOPERATIVE_NARROWER}
#: The 192-row cooperative tiles the wave balance weighs without a bias (``autotable.TALL_MERIT``).
CANDIDATES |= {f"coop{config.tile_m}x{config.tile_n}n": config for config, _ in TALL_MERIT}
#: Ping-pong 128×192 spills with a bias term (``autotable.SMALL_M_BIAS_SPILLS``); the wave balance weighs the
#: 192-row tiles only without one (not measured with it).
BIAS_SPILLS = {"pp192c21", "pp192c12"} | {f"coop{c.tile_m}x{c.tile_n}n" for c, _ in TALL_MERIT}
ROUNDS = 10
BATCH = 10
WITHIN = 0.01


def candidates_for(mnk: tuple[int, int, int], bias: bool, sms: int = 132) -> dict[str, TunedConfig]:
    """The contenders of a shape, launched with PDL and as ``gemm()`` would stage them
    (``autotable.single_wave_staging``: one tile per CTA stages in the ring): stream-K's remainder mode only
    past ``SHORT_K`` (never taken below), its aligned mode where it splits a tile, split-K on the last
    wave where ``autotable.split_tail`` finds a part count (``coop-tail``), without a bias from
    ``PINGPONG_BETWEEN_MIN_K`` the ping-pong widths between 128 and 192 in both clusters (``pp128x160c21``),
    and without a bias past ``SHORT_K`` where N > M > ``SMALL_M`` the swapped 256-row tile whose width
    fills M best (``swap256x120``: ``SWAPPED_ALONG_N_MERIT``)."""
    from gemm_modes.autotable import (
        PINGPONG_BETWEEN_MIN_K,
        SHORT_K,
        SMALL_M,
        SWAPPED_ALONG_N_MERIT,
        between_width_pingpong,
        single_wave_staging,
        split_tail,
        swapped_score,
    )
    from gemm_modes.launch import stream_k_split
    from hopper_gemm.config import Problem

    clusters = sms // COOPERATIVE_DEFERRED.cluster_size
    aligned = stream_k_split(CANDIDATES[COOP_ALIGNED], mnk, clusters).sk_tiles > 0
    names = [n for n in CANDIDATES if not (bias and n in BIAS_SPILLS) and not (n == COOP_SK and mnk[2] <= SHORT_K)]
    names = [n for n in names if n != COOP_ALIGNED or aligned]
    chosen = {name: CANDIDATES[name] for name in names}
    tail = split_tail(mnk, sms)
    if tail is not None:
        chosen[COOP_TAIL] = tail[0]
    if not bias and mnk[2] >= PINGPONG_BETWEEN_MIN_K:  # the widths between 128 and 192, both clusters
        for config, _ in between_width_pingpong(mnk[0], mnk[1]):
            chosen[f"pp128x{config.tile_n}c{config.cluster_m}{config.cluster_n}"] = config
    m, n, k = mnk
    if not bias and k > SHORT_K and n > m > SMALL_M:  # max keeps the first of equals, as the table does
        tile = max((c for c, _ in SWAPPED_ALONG_N_MERIT), key=lambda c: swapped_score(c, m, n, sms))
        chosen[f"swap256x{tile.tile_n}"] = tile
    problem = Problem("bf16", bias=bias)
    return {name: single_wave_staging(config, problem, mnk, sms).with_(pdl=True) for name, config in chosen.items()}


def name_of_pick(mnk: tuple[int, int, int], bias: bool, sms: int) -> str:
    """The contender the table's rules pick for the shape (before ``clusters_of_four`` widens a cluster:
    ``benchmarks/gemm.py --sweep`` measures that), or its description."""
    from gemm_modes.autotable import table_decision
    from hopper_gemm.config import Problem

    chosen = table_decision(Problem("bf16", bias=bias), mnk, sms).config.with_(pdl=True)
    return next((n for n, c in candidates_for(mnk, bias, sms).items() if c == chosen), chosen.describe())


def waves(mnk: tuple[int, int, int], sms: int) -> str:
    """The cooperative tile's cluster-tiles as whole waves + the partial one (``3 + 58/66``)."""
    clusters = sms // COOPERATIVE_DEFERRED.cluster_size
    whole, partial = divmod(COOPERATIVE_DEFERRED.cluster_tiles(*mnk[:2]), clusters)
    return f"{whole} + {partial}/{clusters}"


def bench_shape(mnk: tuple[int, int, int], bias: bool, torch) -> dict[str, float]:
    """torch's µs under "torch", and the ratio (torch time / ours) of every contender."""
    from checked_launch import checked_launcher
    from kernel_tools.timing import time_interleaved

    m, n, k = mnk
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g) if bias else None
    ref = torch.nn.functional.linear(a.float(), w.float(), None if b is None else b.float())
    # torch.matmul without a bias, the baseline of every other GEMM benchmark here
    contenders = {"torch": (lambda: torch.nn.functional.linear(a, w, b)) if bias else (lambda: torch.matmul(a, w.t()))}
    for name, config in candidates_for(mnk, bias, torch.cuda.get_device_properties(0).multi_processor_count).items():
        contenders[name] = checked_launcher(config, (a, w, b), ref, f"{name} at {mnk}")
    times = time_interleaved(contenders, ROUNDS, BATCH, rotate=True)
    return {"torch": times["torch"]} | {name: times["torch"] / t for name, t in times.items() if name != "torch"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: the docs' tables)")
    parser.add_argument("--bias", action="store_true", help="with a bias term (the --shapes given)")
    parser.add_argument("--repeats", type=int, default=2, help="whole comparisons per shape (default 2)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: at least 1")
    shapes = [(*s, args.bias) for s in parse_shapes(parser, args.shapes)] if args.shapes else SHAPES
    torch = cuda_torch("studies/gemm_waves.py", "tests/test_gemm_schedule.py checks the rules")
    if torch is None:
        return 0
    device, sms = device_with_sms(torch)
    print(f"device: {device}; bf16 randn, with PDL; {ROUNDS}×{BATCH} launches,")
    print(f"median, {args.repeats} repetitions (a / b); ratio = ours / torch.matmul (F.linear with a bias) throughput")
    hits = 0
    for m, n, k, bias in shapes:
        mnk = (m, n, k)
        runs = [bench_shape(mnk, bias, torch) for _ in range(args.repeats)]
        names = [name for name in runs[0] if name != "torch"]
        mean = {name: sum(r[name] for r in runs) / len(runs) for name in names}
        chosen, best = name_of_pick(mnk, bias, sms), max(names, key=mean.get)
        hit = chosen in mean and mean[chosen] >= (1 - WITHIN) * mean[best]
        hits += hit
        picked = f"{mean[chosen]:.3f}" if chosen in mean else "(not run)"
        print(
            f"{m}×{n}×{k}{' +bias' if bias else ''}: {waves(mnk, sms)} waves, torch {runs[0]['torch']:.1f} µs; "
            f"pick {chosen} {picked}, best {best} {mean[best]:.3f}{'' if hit else '  ✗'}"
        )
        print("    " + "  ".join(f"{name} " + " / ".join(f"{r[name]:.3f}" for r in runs) for name in names))
    print(f"the pick was the best or within {WITHIN:.0%} on {hits} of {len(shapes)} shapes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
