"""Small M (≤ 512) with long K: the ping-pong tiles and clusters against torch.matmul, and auto's pick.

The measurement behind the fill rule of ``hopper_gemm.autotable.small_m``: for each shape every
ping-pong tile of 128×128, 128×64, 64×128 and 64×64 with cluster 2×1 and 1×2 runs interleaved with
torch (``ROUNDS`` rounds of ``BATCH`` launches, rotating order, median), each checked against torch
once. One row per shape: torch's time, the old choice (128×128 c2×1 everywhere), the rule's pick, the
best of the eight, and every ratio (ours / torch throughput).

    python benchmarks/gemm_small_m.py [--shapes 128x8192x8192,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hopper_gemm.autotable import SMALL_M, SMALL_M_TILES  # noqa: E402
from hopper_gemm.config import GemmConfig, Schedule  # noqa: E402
from shape_arg import parse_shapes  # noqa: E402

SHAPES = [
    (128, 8192, 8192),
    (64, 8192, 8192),
    (256, 4096, 8192),
    (128, 4096, 4096),
    (128, 4096, 8192),
    (64, 4096, 4096),
    (384, 6144, 8192),
    (200, 8192, 8192),
    (512, 4096, 4096),
    (256, 2048, 8192),
    (32, 8192, 8192),
    (128, 14336, 4096),
    (128, 4096, 14336),
    (256, 8192, 8192),
    (512, 8192, 8192),
    (256, 8192, 1024),
    (130, 4096, 4096),
    (130, 2048, 4096),
    (384, 4096, 4096),
    (384, 6144, 4096),
    (320, 8192, 8192),
    (300, 6144, 6144),
]
CANDIDATES = {
    f"{tm}x{tn}c{cm}{3 - cm}": GemmConfig(tm, tn, cm, 3 - cm, Schedule.PINGPONG)
    for tm, tn in SMALL_M_TILES
    for cm in (2, 1)
}
OLD = "128x128c21"
ROUNDS = 10
BATCH = 10


def name_of(config: GemmConfig) -> str:
    return f"{config.tile_m}x{config.tile_n}c{config.cluster_m}{config.cluster_n}"


def bench_shape(shape: tuple[int, int, int], torch) -> dict[str, float]:
    """Ratio (torch time / ours) per candidate, and torch's µs under "torch"."""
    from hopper_gemm.api import launcher, validate
    from hopper_gemm.timing import time_interleaved

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    ref = a.float() @ w.float().t()
    contenders = {"torch": lambda: torch.matmul(a, w.t())}
    for name, config in CANDIDATES.items():
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        launch = launcher(config, validate(a, w, out=out), out)
        launch()
        torch.cuda.synchronize()
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        if not err < 1e-2:  # NaN too: a tile never written
            raise SystemExit(f"{name} at {shape}: relative error {err} against torch")
        contenders[name] = launch
    times = time_interleaved(contenders, ROUNDS, BATCH, rotate=True)
    return {"torch": times["torch"]} | {name: times["torch"] / times[name] for name in CANDIDATES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK with M ≤ 512 (default: the 22 of the rule's table)")
    args = parser.parse_args(argv)
    shapes = parse_shapes(parser, args.shapes, max_m=SMALL_M) if args.shapes else SHAPES
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("no CUDA GPU: benchmarks/gemm_small_m.py needs one (tests/test_gemm_schedule.py checks the rule)")
        return 0
    from hopper_gemm.autotable import small_m

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device: {torch.cuda.get_device_name()} ({sms} SMs); bf16 randn; {ROUNDS}×{BATCH} launches, median")
    print("ratio = ours / torch.matmul throughput; old = 128x128c21 (the table before the fill rule)")
    print(f"{'M×N×K':>16} {'torch µs':>8} {'old':>6} {'rule pick':>16} {'best':>16}  " + " ".join(CANDIDATES))
    for shape in shapes:
        r = bench_shape(shape, torch)
        pick = name_of(small_m(shape, sms))
        best = max(CANDIDATES, key=r.get)
        print(
            f"{'×'.join(map(str, shape)):>16} {r['torch']:8.1f} {r[OLD]:6.3f} {pick:>10} {r[pick]:5.3f} "
            f"{best:>10} {r[best]:5.3f}  " + " ".join(f"{r[name]:.3f}".rjust(len(name)) for name in CANDIDATES)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
