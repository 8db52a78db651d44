"""GPU test of pipes.cute.TmaStoreStaging (H100): every staged tile reaches global memory intact.

16 CTAs × 640 tiles per configuration. The epilogue warpgroup rewrites a staging buffer as soon as
``acquire`` allows, so a buffer overwritten before its TMA store read it lands in global memory as a
tile with the next tile's values. The handle's ``count`` and last slot are checked too (loop carry).
"""

from __future__ import annotations

import cute_kernels as ck  # noqa: E402
import cute_kernels_staging as cks  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import pytest
from cutlass import Int32  # noqa: E402

pytestmark = pytest.mark.gpu

GRID = 16
TILES = 640
LAUNCHES = 8


@pytest.mark.parametrize("loop", ["range", "while"])
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_staged_tiles_arrive_intact(stages: int, loop: str) -> None:
    torch = pytest.importorskip("torch")
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    built = cks.build_staging(stages, loop=loop)
    gout = torch.zeros((GRID * TILES * ck.TILE, ck.TILE), dtype=torch.int32, device="cuda")
    out = torch.full((GRID, 2), -1, dtype=torch.int32, device="cuda")
    args = (from_dlpack(gout, assumed_align=16), from_dlpack(out, assumed_align=16), Int32(TILES))
    stream = current_stream()
    compiled = cute.compile(built.launcher, *args, stream)
    rows = torch.arange(GRID * TILES * ck.TILE, dtype=torch.int64, device="cuda")
    cols = torch.arange(ck.TILE, dtype=torch.int64, device="cuda")
    expected = (rows // ck.TILE)[:, None] * 4096 + (rows % ck.TILE)[:, None] * ck.TILE + cols[None, :] + 1
    for launch in range(LAUNCHES):
        gout.zero_()
        out.fill_(-1)
        compiled(*args, stream)
        torch.cuda.synchronize()
        bad = int((gout.to(torch.int64) != expected).sum())
        assert bad == 0, f"stages={stages} {loop} launch {launch}: {bad} wrong elements in global memory"
        assert (out[:, 0] == (TILES - 1) % stages).all(), f"last slot {out[:, 0].tolist()}"
        assert (out[:, 1] == TILES).all(), f"count {out[:, 1].tolist()} != {TILES}"
