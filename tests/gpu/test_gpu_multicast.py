"""GPU stress test of TmaLoadPipeline's cluster multicast (H100): remote releases hold the peers back.

Kernel: tests/cute_kernels_multicast.py. Each configuration runs CLUSTERS clusters × TILES stages
(≥ 10,000 stages per CTA position across the grid), LAUNCHES times. Every CTA checks every element
of both operand tiles right after ``wait`` and again just before ``release``; with a slowed consumer
in one CTA of each cluster only, the other CTAs' producers (whose TMA multicasts write into the slow
CTA) must be held back by the slow CTA's remote release, or the second check sees the next lap's
tile. A control run plants exactly that bug (the pipeline declared without multicast, so releases
stay local) and must be caught. A stage that never completes (a lost multicast byte count or release) hangs instead; the
pytest-level timeout of the runner is the guard there.
"""

from __future__ import annotations

import time

import cute_kernels as ck  # noqa: E402
import cute_kernels_multicast as ckm  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import pytest
from cutlass import Int32  # noqa: E402

from pipes import ArrivalUnit  # noqa: E402
from pipes.cute import Multicast  # noqa: E402

pytestmark = pytest.mark.gpu

CLUSTERS = 8
TILES = 1280  # per CTA: 8 clusters × 1280 = 10,240 stages per CTA position
SLOW_NS = 2000
LAUNCHES = 3

A_ROW = Multicast(1, 2, a=True, b=False)  # 2 CTAs share the A tile (the usual A multicast)
B_COL = Multicast(2, 1, a=False, b=True)  # 2 CTAs share the B tile
BOTH = Multicast(2, 2, a=True, b=True)  # 4 CTAs: A along rows, B along columns (3 release peers)

CONFIGS = [
    (A_ROW, 2, 0, ArrivalUnit.WARP),
    (A_ROW, 4, 0, ArrivalUnit.WARP),
    (A_ROW, 2, SLOW_NS, ArrivalUnit.WARP),
    (A_ROW, 4, SLOW_NS, ArrivalUnit.ELECTED_PER_WARP),
    (B_COL, 2, SLOW_NS, ArrivalUnit.ELECTED_PER_WARP),
    (BOTH, 2, 0, ArrivalUnit.ELECTED_PER_WARP),
    (BOTH, 2, SLOW_NS, ArrivalUnit.WARP),
    (BOTH, 4, SLOW_NS, ArrivalUnit.ELECTED_PER_WARP),
]


def _torch():
    return pytest.importorskip("torch")


def _dl(tensor):
    from cutlass.cute.runtime import from_dlpack

    return from_dlpack(tensor, assumed_align=16)


def _pattern_rows(torch, tiles_total: int):
    """Rows of tiles ``0 .. tiles_total-1``: tile t element e = t·4096 + e + 1 (ck.pattern)."""
    rows = torch.arange(tiles_total * ck.TILE, dtype=torch.int64, device="cuda")
    cols = torch.arange(ck.TILE, dtype=torch.int64, device="cuda")
    tile, i = rows // ck.TILE, rows % ck.TILE
    return (tile[:, None] * 4096 + i[:, None] * ck.TILE + cols[None, :] + 1).to(torch.int32)


def _name(mc: Multicast) -> str:
    return f"{mc.cluster_m}x{mc.cluster_n} a={int(mc.a)} b={int(mc.b)}"


def _run(built, multicast: Multicast, delay: int, launches: int):
    """Compile and launch ``launches`` times; yields (launch, out on the host, milliseconds)."""
    from cutlass.torch import current_stream

    torch = _torch()
    src_a = _pattern_rows(torch, CLUSTERS * multicast.cluster_m * TILES)
    src_b = -_pattern_rows(torch, CLUSTERS * multicast.cluster_n * TILES)
    out = torch.full((CLUSTERS * multicast.cluster_size, 1, 32, 2), -1, dtype=torch.int32, device="cuda")
    args = (_dl(src_a), _dl(src_b), _dl(out), Int32(TILES), Int32(delay))
    stream = current_stream()
    compiled = cute.compile(built.launcher, *args, stream)
    for launch in range(launches):
        out.fill_(-1)
        torch.cuda.synchronize()
        start = time.perf_counter()
        compiled(*args, stream)
        torch.cuda.synchronize()
        yield launch, out.cpu(), (time.perf_counter() - start) * 1e3


@pytest.mark.parametrize(
    ("multicast", "stages", "delay", "unit"), CONFIGS, ids=[f"{_name(m)}-S{s}-d{d}-{u.name}" for m, s, d, u in CONFIGS]
)
def test_multicast_no_stale_or_lost_stage(multicast: Multicast, stages: int, delay: int, unit: ArrivalUnit) -> None:
    size = multicast.cluster_size
    slow_rank = size - 1
    built = ckm.build_multicast_load(multicast, stages, consumer_unit=unit, slow_rank=slow_rank)
    config = f"{_name(multicast)} S={stages} slow rank {slow_rank} delay={delay}ns consumer={unit.name}"
    for launch, host, ms in _run(built, multicast, delay, LAUNCHES):
        bad = int(host[..., 0].sum())
        seen = host[..., 1]
        print(
            f"\n[gpu] multicast {config} launch {launch}: {CLUSTERS} clusters × {size} CTAs × {TILES} stages, "
            f"bad={bad}, seen min/max={int(seen.min())}/{int(seen.max())}, {ms:.2f} ms"
        )
        assert bad == 0, f"{config} launch {launch}: {bad} wrong elements (a stage refilled early, stale or torn)"
        assert (seen == TILES).all(), f"{config} launch {launch}: stages seen {seen.unique().tolist()} != {TILES}"
        if delay:
            assert ms > TILES * delay * 1e-6 * 0.9, "the slow consumer must actually have been slow"


def test_local_only_release_is_caught() -> None:
    """Control: the same multicast copies with a pipeline that releases only locally must show refilled
    stages in the slow CTA (otherwise the test above could not see a missing remote release)."""
    built = ckm.build_multicast_load(A_ROW, 2, slow_rank=1, remote_release=False)
    for _, host, ms in _run(built, A_ROW, SLOW_NS, 1):
        bad = host[..., 0].sum(dim=(1, 2))
        print(
            f"\n[gpu] multicast control (local-only release) {_name(A_ROW)} S=2 slow rank 1: "
            f"bad per CTA = {bad.tolist()}, {ms:.2f} ms"
        )
        assert int(bad[1::2].sum()) > 0, "a local-only release went unnoticed by the slow CTA's second check"
