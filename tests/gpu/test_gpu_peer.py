"""The reduce-scatter on two and four GPUs: result equal to the fp32 reference within bf16 tolerance and
bitwise equal run to run, on every rank (examples/tp_gemm_rs.py --check, one process per GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _gpus() -> int:
    torch = pytest.importorskip("torch")
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


VARIANTS = {  # id: (engine, reduce, delay_ns, step_rows, inbox_buffers)
    "copy-epilogue": ("copy", "epilogue", 0, None, 1),
    "copy-epilogue-1-row-steps": ("copy", "epilogue", 0, 1, 1),
    "copy-epilogue-late-sender": ("copy", "epilogue", 20_000, None, 1),
    "copy-pass": ("copy", "pass", 0, None, 1),
    "sm-pass": ("sm", "pass", 0, None, 1),
    "copy-epilogue-double": ("copy", "epilogue", 0, None, 2),
    "copy-epilogue-double-late-sender": ("copy", "epilogue", 20_000, None, 2),
    "copy-pass-double": ("copy", "pass", 0, None, 2),
    "copy-epilogue-growing-copies": ("copy", "epilogue", 0, 1, 1),
    "copy-epilogue-growing-copies-late-sender": ("copy", "epilogue", 20_000, 1, 1),
}
#: Steps per copy (``--copy-sizes``) of the variants that group them: one step, then two, then four.
COPY_SIZES = {"copy-epilogue-growing-copies": "1,2,4", "copy-epilogue-growing-copies-late-sender": "1,2,4"}


def _run(shape: tuple[int, int, int], world: int, variant: str, port: int) -> None:
    """``tp_gemm_rs.py --check`` of ``shape`` on ``world`` GPUs with the ``VARIANTS[variant]`` options."""
    (m, n, k), (engine, reduce, delay_ns, step_rows, inboxes) = shape, VARIANTS[variant]
    cmd = [sys.executable, str(ROOT / "examples" / "tp_gemm_rs.py"), "--check", "--world", str(world)]
    cmd += ["--m", str(m), "--n", str(n), "--k", str(k), "--engine", engine, "--reduce", reduce]
    cmd += ["--inbox-buffers", str(inboxes)]
    cmd += ["--delay-ns", str(delay_ns), "--repeat", "20", *(["--step-rows", str(step_rows)] if step_rows else [])]
    cmd += ["--copy-sizes", COPY_SIZES[variant]] if variant in COPY_SIZES else []
    env = dict(os.environ, MASTER_PORT=str(port))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "True" in done.stdout  # bitwise repeat column


FOUR_GPU_VARIANTS = ["copy-epilogue", "copy-epilogue-late-sender", "copy-pass"]
FOUR_GPU_VARIANTS += ["copy-epilogue-double", "copy-epilogue-double-late-sender", "copy-pass-double"]
FOUR_GPU_VARIANTS += list(COPY_SIZES)


@pytest.mark.parametrize("variant", FOUR_GPU_VARIANTS)
@pytest.mark.parametrize("shape", [(2048, 2048, 2048), (4096, 2048, 4096)])
def test_four_gpu_reduce_scatter_matches_the_reference(shape, variant):
    """Every rank receives three partials of its block, one per slot, and adds them in its epilogue (or
    after the GEMM). With the late sender, rank 0's bands reach the other three late: each must wait for
    rank 0's slot. 20 launches back to back, each bitwise equal to the first. ``double``: two inboxes per
    rank, launch e into inbox e % 2 (each inbox reused ten times, its flags cleared before its credit).
    ``growing-copies``: steps of one row band, copied one, then two, then four to a copy (``--copy-sizes``)."""
    if _gpus() < 4:
        pytest.skip(f"needs 4 GPUs; {_gpus()} visible")
    _run(shape, 4, variant, 29700 + shape[0] % 97 + 5 * list(VARIANTS).index(variant))


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("shape", [(2048, 2048, 2048), (4096, 2048, 4096)])
def test_two_gpu_reduce_scatter_matches_the_reference(shape, variant):
    """``late-sender``: rank 0's comm warp sleeps 20 µs per tile before counting it, so its bands reach
    rank 1 long after rank 1's GEMM reached its own block: rank 1's epilogue must wait for each flag, or
    it adds stale rows and misses the reference. Each case runs 20 launches back to back, each compared
    bit for bit with the first (the inbox flags' two tokens alternate 19 times)."""
    if _gpus() < 2:
        pytest.skip(f"needs 2 GPUs (peer transport); {_gpus()} visible")
    _run(shape, 2, variant, 29600 + shape[0] % 97 + 5 * list(VARIANTS).index(variant))


ONE_GPU = Path(__file__).resolve().parent / "rs_one_gpu.py"


@pytest.mark.parametrize(
    "case",
    [
        ("4", "8192", "4096", "2048", "2", "1"),
        ("4", "4096", "2048", "2048", "-1", "1"),
        ("3", "6144", "4096", "3072", "1", "1"),
        ("4", "8192", "4096", "2048", "2", "2"),
        ("4", "8192", "4096", "2048", "2", "1", "1", "1,2,4"),
    ],
    ids=["4-ranks-slow-rank", "4-ranks", "3-ranks-slow-rank", "4-ranks-slow-rank-double", "4-ranks-growing-copies"],
)
def test_reduce_scatter_over_several_ranks_on_one_gpu(case):
    """The world-size-general routing where only one GPU is lent: every rank on its own stream, buffers
    local, the partials added after the GEMM (tests/gpu/rs_one_gpu.py). 20 launches per rank, bit-exact;
    ``double``: two inboxes per rank; ``growing-copies``: one-band steps copied one, two, then four at a time."""
    if _gpus() < 1:
        pytest.skip("needs a GPU")
    world, m, n, k, slow, inboxes, *grouped = case
    cmd = [sys.executable, str(ONE_GPU), "--world", world, "--m", m, "--n", n, "--k", k, "--slow-rank", slow]
    cmd += ["--inbox-buffers", inboxes]
    if grouped:  # one-band steps, copied one, two, then four at a time
        cmd += ["--step-rows", grouped[0], "--copy-sizes", grouped[1]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("bit-exact: True") == int(world)


@pytest.mark.parametrize("world", [2, 4])
def test_the_copy_timeline_is_in_order(world, tmp_path):
    """``tp_gemm_rs.py --timeline``: rank 0's copy-work events come back in the order the protocol queues
    them: the first receiver's credit before the first step's copy may begin, and each step's copy begun
    before its flag rose; one entry per shipped step."""
    import json

    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs; {_gpus()} visible")
    cmd = [sys.executable, str(ROOT / "examples" / "tp_gemm_rs.py"), "--check", "--world", str(world), "--timeline"]
    cmd += ["--m", "4096", "--n", "2048", "--k", "4096", "--repeat", "3"]
    env = dict(os.environ, MASTER_PORT=str(29580 + world), OUT=str(tmp_path))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = json.loads((tmp_path / "tp_gemm_rs.json").read_text())
    t = row["timeline"]
    assert len(t["steps"]) == len(t["started"]) > 0
    assert 0 <= t["credits_taken"] <= t["started"][0]
    assert all(0 <= begin <= flag for begin, flag in zip(t["started"], t["steps"], strict=True))
    # every rank's launch ends on its stream after its kernel and after its last outgoing copy
    assert len(t["ranks"]) == world
    assert all(0 < e["kernel_end"] <= e["period"] and e["last_flag"] <= e["period"] for e in t["ranks"])
