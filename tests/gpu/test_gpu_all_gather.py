"""The all-gather's library parts on 2 and 4 GPUs: ChunkPusher's copy-engine pushes and ChunkGate's waits in a
small TMA-loading kernel, bit-exact over back-to-back launches, with and without a slow rank
(``tests/gpu/all_gather_run.py`` in one process per GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

RUN = Path(__file__).resolve().parent / "all_gather_run.py"


def _gpus() -> int:
    torch = pytest.importorskip("torch")
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("slow_rank", [-1, 1], ids=["even", "slow-rank-1"])
def test_gathered_rows_arrive_bit_exact_launch_after_launch(world, slow_rank):
    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs; {_gpus()} visible")
    port = 29650 + 10 * world + (slow_rank + 1)
    cmd = [sys.executable, str(RUN), "--world", str(world), "--launches", "200", "--slow-rank", str(slow_rank)]
    done = subprocess.run([*cmd, "--port", str(port)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for rank in range(world):
        assert f"rank {rank}: 200 launches bit-exact" in done.stdout
