"""``--draw`` of ``benchmarks/gemm.py --sweep``: shapes drawn at random from a family, reproducible by seed.

The sweep's own shapes are round numbers; these families reach the shapes nobody tuned for. Every extent
is log-uniform in its range; N and K are multiples of 8 (the sweep's one preallocated C and TMA's 16-byte
rows need it). Same kind, count and seed: the same shapes, in the same order, on every machine.

========== ===========================================================================================
family     shapes
========== ===========================================================================================
projection M (tokens) in 128–16384 against the (hidden, intermediate) pairs of four models in turn,
           up (N = intermediate, K = hidden) for four shapes, then down for four
small-side one side 57–1024 (M, then N on every other shape), the other 2048–24576, K 2048–16384
square     M = N = K in 1000–8192, multiples of 8
========== ===========================================================================================
"""

from __future__ import annotations

import math
import random

#: (hidden, intermediate) of Llama-3 8B, Llama-2 13B, Llama-3 70B and DeepSeek-V3's dense layers.
MODEL_PAIRS = ((4096, 14336), (5120, 13824), (8192, 28672), (7168, 18432))


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def _by_eight(rng: random.Random, low: int, high: int) -> int:
    return 8 * int(math.exp(rng.uniform(math.log(low), math.log(high))) / 8)


def projection(rng: random.Random, index: int) -> tuple[int, int, int]:
    tokens = _log_uniform(rng, 128, 16384)
    hidden, intermediate = MODEL_PAIRS[index % len(MODEL_PAIRS)]
    up = (index // len(MODEL_PAIRS)) % 2 == 0
    return (tokens, intermediate, hidden) if up else (tokens, hidden, intermediate)


def small_side(rng: random.Random, index: int) -> tuple[int, int, int]:
    short = _log_uniform(rng, 57, 1024)
    long, k = _by_eight(rng, 2048, 24576), _by_eight(rng, 2048, 16384)
    return (short, long, k) if index % 2 == 0 else (long, 8 * max(8, short // 8), k)


def square(rng: random.Random, index: int) -> tuple[int, int, int]:
    side = _by_eight(rng, 1000, 8192)
    return side, side, side


FAMILIES = {"projection": projection, "small-side": small_side, "square": square}


def draw(spec: str) -> list[tuple[int, int, int]]:
    """The shapes ``FAMILY:COUNT:SEED`` names (``projection:32:20261128``); ``ValueError`` naming the
    problem for an unknown family, a count outside 1–1000 or a seed that is not an integer."""
    parts = spec.split(":")
    if len(parts) != 3:
        raise ValueError(f"--draw {spec!r}: expected FAMILY:COUNT:SEED, e.g. projection:32:20261128")
    family, count, seed = parts
    if family not in FAMILIES:
        raise ValueError(f"--draw {spec!r}: family {family!r} is none of {', '.join(FAMILIES)}")
    try:
        count_n, seed_n = int(count), int(seed)
    except ValueError:
        raise ValueError(f"--draw {spec!r}: COUNT and SEED must be integers") from None
    if not 1 <= count_n <= 1000:
        raise ValueError(f"--draw {spec!r}: COUNT = {count_n} is outside 1–1000")
    rng = random.Random(seed_n)
    return [FAMILIES[family](rng, i) for i in range(count_n)]
