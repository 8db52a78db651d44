"""The all-gather's library parts on 2, 3 and 4 GPUs: ChunkPusher's copy-engine pushes and ChunkGate's waits in a
small TMA-loading kernel, bit-exact over back-to-back launches, with and without a slow rank
(``tests/gpu/all_gather_run.py`` in one process per GPU)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

RUN = Path(__file__).resolve().parent / "all_gather_run.py"


def _gpus() -> int:
    torch = pytest.importorskip("torch")
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.parametrize("world", [2, 3, 4])
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


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tp_ag_gemm.py"


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("pusher", ["copy", "sm"])
def test_the_gated_gemm_matches_with_either_pusher(world, pusher):
    """``tp_ag_gemm.py --check``: the gated GEMM's result within bf16 of fp32 and bitwise equal over 1,000
    back-to-back launches (no hang: every gate and credit wait is bounded and traps), its rows pushed by
    the copy engines (4 streams, queued directly) or by its own push warp (warp 1 of every CTA)."""
    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs; {_gpus()} visible")
    shape = ["--m", "12288" if world == 3 else "8192", "--n", "4096", "--k", "2048"]  # whole 1024-row chunks
    cmd = [sys.executable, str(EXAMPLE), "--world", str(world), "--check", "--launches", "1000", *shape]
    cmd += ["--pusher", pusher, "--copy-streams", "4"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\sTrue\s+(cooperative|pingpong) tile", done.stdout), done.stdout  # bitwise-repeat column


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "queued"])
def test_the_push_timeline_lists_every_copy_in_order(graph, tmp_path):
    """``tp_ag_gemm.py --timeline`` on 2 GPUs, the pushes replayed from a graph (the default) or queued call
    by call: one entry per chunk copy, the credit taken before the first copy may begin, each copy begun
    before its flag rose."""
    import json
    import os

    if _gpus() < 2:
        pytest.skip(f"needs 2 GPUs; {_gpus()} visible")
    cmd = [sys.executable, str(EXAMPLE), "--world", "2", "--check", "--timeline", "--m", "8192", "--n", "2048"]
    cmd += ["--k", "2048", "--chunk-rows", "1024", *([] if graph else ["--no-push-graph"])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, OUT=str(tmp_path)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = json.loads((tmp_path / "tp_ag_gemm.json").read_text())
    t = row["timeline"]
    assert [tuple(c) for c in t["copies"]] == [(1, chunk) for chunk in range(4)]  # rank 0's 4 chunks to rank 1
    assert 0 <= t["credits_taken"] <= t["started"][0]
    assert all(0 <= begin <= flag for begin, flag in zip(t["started"], t["flags"], strict=True))
    # every rank's launch ends on its stream after its kernel and after its last outgoing copy
    assert len(t["ranks"]) == 2
    assert all(0 < e["kernel_end"] <= e["period"] and e["last_flag"] <= e["period"] for e in t["ranks"])
