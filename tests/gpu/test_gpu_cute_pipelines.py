"""GPU stress tests of pipes.cute's async, TMA-load and store-notify pipelines (H100).

Every configuration moves ≥ 10,000 tiles (16 CTAs × 640). Producers write known patterns (tile t,
element e holds ``t·4096 + e + 1``); the consumer checks every element right after ``wait`` and the
tile count, so a stale, lost, duplicated or torn tile fails. The store-notify kernel reuses a
global ring of ``stages`` tile slots per CTA, so a notify that came before the TMA store completed
shows up as the previous lap's data. The planted deadlock runs in a subprocess (a trap kills the
CUDA context) and must trap naming the pipeline, role and slot instead of hanging.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import cute_kernels as ck  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import pytest
from cutlass import Int32  # noqa: E402

from pipes import ArrivalUnit  # noqa: E402

pytestmark = pytest.mark.gpu

GRID = 16
TILES = 640  # per CTA: 16 × 640 = 10,240 tiles per configuration
SLOW_NS = 2000
LAUNCHES = 8


def _stream():
    from cutlass.torch import current_stream

    return current_stream()


def _torch():
    return pytest.importorskip("torch")


def _launch(launcher, *tensors_and_scalars):
    from cutlass.torch import current_stream

    torch = _torch()
    stream = current_stream()
    compiled = cute.compile(launcher, *tensors_and_scalars, stream)
    torch.cuda.synchronize()
    start = time.perf_counter()
    compiled(*tensors_and_scalars, stream)
    torch.cuda.synchronize()
    return compiled, (time.perf_counter() - start) * 1e3


def _dl(tensor):
    from cutlass.cute.runtime import from_dlpack

    return from_dlpack(tensor, assumed_align=16)


def _report(kind: str, config: str, out, tiles: int, ms: float) -> None:
    bad = int(out[..., 0].sum())
    seen = out[..., 1]
    print(
        f"\n[gpu] {kind} {config}: {GRID * tiles} tiles/role, bad={bad}, "
        f"seen min/max={int(seen.min())}/{int(seen.max())}, {ms:.2f} ms"
    )
    assert bad == 0, f"{kind} {config}: {bad} wrong elements or metadata (stale/torn/lost tiles)"
    assert (seen == tiles).all(), f"{kind} {config}: tiles seen per reader lane {seen.unique().tolist()} != {tiles}"


def _pattern_rows(torch, tiles_total: int):
    rows = torch.arange(tiles_total * ck.TILE, dtype=torch.int64, device="cuda")
    cols = torch.arange(ck.TILE, dtype=torch.int64, device="cuda")
    tile, i = rows // ck.TILE, rows % ck.TILE
    return (tile[:, None] * 4096 + i[:, None] * ck.TILE + cols[None, :] + 1).to(torch.int32)


STORE_CONFIGS = [(1, 0), (2, 0), (2, 1), (4, 0), (4, 1), (4, 3)]


@pytest.mark.parametrize(("stages", "lag"), STORE_CONFIGS)
def test_store_notify_no_stale_or_lost_tiles(stages: int, lag: int) -> None:
    torch = _torch()
    built = ck.build_store_notify(stages, lag)
    gout = torch.zeros((GRID * stages * ck.TILE, ck.TILE), dtype=torch.int32, device="cuda")
    out = torch.full((GRID, 1, 32, 2), -1, dtype=torch.int32, device="cuda")
    _, ms = _launch(built.launcher, _dl(gout), _dl(out), Int32(TILES), Int32(0))
    _report("store-notify", f"S={stages} L={lag}", out.cpu(), TILES, ms)
    # every global slot holds the last tile stored there: all stores landed
    expected_last = [max(t for t in range(TILES) if t % stages == s) for s in range(stages)]
    ring = gout.view(GRID, stages, ck.TILE, ck.TILE).cpu()
    pattern = _pattern_rows(torch, TILES).view(TILES, ck.TILE, ck.TILE).cpu()
    for s, t in enumerate(expected_last):
        assert torch.equal(ring[:, s], pattern[t].expand(GRID, -1, -1)), f"slot {s} does not hold tile {t}"


@pytest.mark.parametrize(("stages", "lag", "fan_out"), [(4, 1, False), (4, 3, True), (2, 1, True)])
def test_store_notify_slow_consumer_and_fan_out(stages: int, lag: int, fan_out: bool) -> None:
    torch = _torch()
    built = ck.build_store_notify(stages, lag, fan_out=fan_out)
    readers = 2 if fan_out else 1
    gout = torch.zeros((GRID * stages * ck.TILE, ck.TILE), dtype=torch.int32, device="cuda")
    out = torch.full((GRID, readers, 32, 2), -1, dtype=torch.int32, device="cuda")
    _, ms = _launch(built.launcher, _dl(gout), _dl(out), Int32(TILES), Int32(SLOW_NS))
    _report("store-notify slow", f"S={stages} L={lag} readers={readers} delay={SLOW_NS}ns", out.cpu(), TILES, ms)
    assert ms > TILES * SLOW_NS * 1e-6 * 0.9, "the slow consumer must actually have been slow"


def test_store_notify_debug_mode_runs_clean() -> None:
    torch = _torch()
    built = ck.build_store_notify(2, 1, fan_out=True, debug=True)
    gout = torch.zeros((GRID * 2 * ck.TILE, ck.TILE), dtype=torch.int32, device="cuda")
    out = torch.full((GRID, 2, 32, 2), -1, dtype=torch.int32, device="cuda")
    _, ms = _launch(built.launcher, _dl(gout), _dl(out), Int32(TILES), Int32(0))
    _report("store-notify debug", "S=2 L=1 readers=2", out.cpu(), TILES, ms)


@pytest.mark.parametrize(
    ("stages", "delay", "consumer_unit"),
    [
        (1, 0, ArrivalUnit.WARP),
        (2, 0, ArrivalUnit.WARP),
        (4, 0, ArrivalUnit.WARP),
        (4, 0, ArrivalUnit.ELECTED_PER_WARP),
        (2, SLOW_NS, ArrivalUnit.WARP),
    ],
)
def test_async_pipeline_no_stale_or_lost_tiles(stages: int, delay: int, consumer_unit: ArrivalUnit) -> None:
    torch = _torch()
    built = ck.build_async(stages, consumer_unit=consumer_unit)
    out = torch.full((GRID, 1, 32, 2), -1, dtype=torch.int32, device="cuda")
    _, ms = _launch(built.launcher, _dl(out), Int32(TILES), Int32(delay))
    _report("async", f"S={stages} delay={delay} consumer={consumer_unit.name}", out.cpu(), TILES, ms)


@pytest.mark.parametrize(("stages", "delay"), [(1, 0), (2, 0), (4, 0), (4, SLOW_NS)])
def test_tma_load_no_stale_or_lost_tiles(stages: int, delay: int) -> None:
    torch = _torch()
    built = ck.build_tma_load(stages)
    src = _pattern_rows(torch, GRID * TILES)
    out = torch.full((GRID, 1, 32, 2), -1, dtype=torch.int32, device="cuda")
    _, ms = _launch(built.launcher, _dl(src), _dl(out), Int32(TILES), Int32(delay))
    _report("tma-load", f"S={stages} delay={delay}", out.cpu(), TILES, ms)


def test_gemm_smoke_tma_load_mainloop_and_store_notify_epilogue() -> None:
    torch = _torch()
    m = n = k = 256
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randint(-2, 3, (m, k), generator=gen, device="cuda").float()
    b = torch.randint(-2, 3, (n, k), generator=gen, device="cuda").float()
    c = torch.zeros((m, n), device="cuda")
    sums = torch.full((m // ck.TILE, n // ck.TILE), float("nan"), device="cuda")
    built = ck.build_gemm_smoke(stages=3, lag=1, store_stages=2)
    args = (_dl(a), _dl(b), _dl(c), _dl(sums), Int32(8))
    compiled, ms = _launch(built.launcher, *args)
    ref = a @ b.T
    tile_sums = ref.view(m // ck.TILE, ck.TILE, n // ck.TILE, ck.TILE).sum(dim=(1, 3))
    # Several launches: a missing proxy fence before the mainloop release showed up as 17-68 wrong
    # outputs per launch, a race that one lucky launch could hide.
    for launch in range(LAUNCHES):
        if launch:
            c.zero_()
            sums.fill_(float("nan"))
            compiled(*args, _stream())
            torch.cuda.synchronize()
        assert torch.equal(c, ref), f"launch {launch}: C differs from A·Bᵀ in {(c != ref).sum().item()} elements"
        assert torch.equal(sums, tile_sums), f"launch {launch}: the comm warp's checksums differ from its tiles"
    print(
        f"\n[gpu] gemm smoke 256³ fp32, 64 tiles on 8 CTAs × {LAUNCHES} launches: C exact, checksums exact, {ms:.2f} ms"
    )


def test_planted_deadlock_traps_with_name_and_slot() -> None:
    script = Path(__file__).with_name("planted_deadlock.py")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    output = proc.stdout + proc.stderr
    print(
        "\n[gpu] planted deadlock output:\n"
        + "\n".join(line for line in output.splitlines() if "pipes:" in line or "RESULT" in line)
    )
    assert "RESULT: completed" not in output, "the planted deadlock did not deadlock"
    assert "RESULT: trapped" in output, output[-3000:]
    assert "pipes: wait timed out: pipeline=tiles_out role=epi op=acquire slot=0 phase=0" in output, output[-3000:]
