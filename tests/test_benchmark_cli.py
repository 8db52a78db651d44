"""The benchmarks' command lines without a GPU: bad arguments are refused by name (exit status 2, before
torch is needed), a GPU benchmark without a GPU says so in one line naming its path and exits 0, and each
script prints its ``--help`` when run as the docs show it (``python benchmarks/[studies/]<name>.py``).

The top-level benchmarks (``gemm``, ``comm_overlap``, ...) live in ``benchmarks/``, the one-question studies
(``gemm_waves``, ``gemm_ceiling``, ...) in ``benchmarks/studies/``; pytest puts both on ``sys.path``.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (script, argv, what stderr names): each refused by argparse (or ``parser.error``) with exit status 2.
REFUSED = [
    ("gemm_ceiling", ["--shapes", "4096x4096"], "each entry needs three extents"),
    ("gemm_ceiling", ["--dtype", "fp8"], "invalid choice: 'fp8'"),
    ("gemm_floor", ["--shapes", "64x64"], "--shapes"),
    ("gemm_host", ["--shapes", "64x64"], "--shapes"),
    ("gemm_host", ["--shapes", "64xAx64"], "--shapes"),
    ("gemm_profile", ["--group", "0"], "GemmConfig.group = 0 is invalid: allowed an int in [1, 64]"),
    ("gemm_profile", ["--group", "65", "--raster", "n"], "GemmConfig.group = 65 is invalid"),
    ("gemm_profile", ["--raster", "k"], "argument --raster: invalid choice: 'k'"),
    ("gemm_profile", ["--stream-k", "sideways"], "argument --stream-k: invalid choice: 'sideways'"),
    ("gemm_small_m", ["--shapes", "64x64"], "--shapes"),
    ("gemm_small_m", ["--shapes", "0x1024x64"], "--shapes"),
    ("gemm_small_m", ["--shapes", "64xAx64"], "--shapes"),
    ("gemm_sustained", ["--shapes", "1x2x3"], "--shapes"),
    ("gemm_sustained", ["--segment", "0.1"], "--segment"),
    ("gemm_sustained", ["--repeats", "0"], "--repeats"),
    ("gemm_sustained", ["--configs", "coop128x256c21d8,nosuch"], "nosuch"),
    ("gemm_waves", ["--shapes", "64x64"], "--shapes"),
    ("gemm_waves", ["--repeats", "0"], "--repeats"),
]


@pytest.mark.parametrize(("script", "argv", "message"), REFUSED, ids=[f"{s}:{' '.join(a)}" for s, a, _ in REFUSED])
def test_bad_arguments_are_refused_by_name(script, argv, message, capsys, monkeypatch):
    module = importlib.import_module(script)
    monkeypatch.setitem(sys.modules, "torch", None)  # refused before torch is needed
    with pytest.raises(SystemExit) as exit_info:
        module.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


#: (path under benchmarks/, argv): a GPU benchmark's main without a GPU.
NO_GPU = [
    ("gemm.py", []),
    ("comm_overlap.py", []),
    ("studies/gemm_ceiling.py", []),
    ("studies/gemm_epilogue.py", []),
    ("studies/gemm_floor.py", []),
    ("studies/gemm_host.py", ["--shapes", "64x64x64"]),
    ("studies/gemm_small_m.py", []),
    ("studies/gemm_sustained.py", ["--shapes", "4096x4096x4096"]),
    ("studies/gemm_trace.py", []),
    ("studies/gemm_waves.py", []),
]


@pytest.mark.parametrize(("path", "argv"), NO_GPU, ids=[p for p, _ in NO_GPU])
def test_without_a_gpu_it_says_so_and_exits_0(path, argv, monkeypatch, capsys):
    module = importlib.import_module(Path(path).stem)
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake)  # torch without a GPU, on any machine
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU" in out and out.startswith(f"no CUDA GPU: benchmarks/{path} needs one")


#: Every benchmark with a command line, as the docs run it (ascend_sim.py has none: it runs at once).
SCRIPTS = [
    "gemm.py",
    "handoff.py",
    "streaming_kernels.py",
    "comm_overlap.py",
    "check_handoff.py",
    "checker_vs_cutlass.py",
    *(f"studies/{name}.py" for name in ("gemm_ceiling", "gemm_epilogue", "gemm_floor", "gemm_host", "gemm_profile")),
    *(f"studies/{name}.py" for name in ("gemm_small_m", "gemm_sustained", "gemm_trace", "gemm_waves")),
    "studies/stream_gaps.py",
    "studies/link_rates.py",
]


def test_the_studies_are_all_listed():
    studies = {p.name for p in (ROOT / "benchmarks" / "studies").glob("*.py")} - {"_paths.py", "checked_launch.py"}
    assert {f"studies/{name}" for name in studies} == {s for s in SCRIPTS if s.startswith("studies/")}


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_script_prints_its_help_from_the_repository_root(script, tmp_path):
    """Run as a file, a study finds the shared helpers (benchmarks/) and hopper_gemm (examples/) itself."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--help"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {Path(script).name}")


def test_the_link_study_refuses_a_world_larger_than_the_gpus_it_sees(monkeypatch, capsys):
    link_rates = importlib.import_module("link_rates")
    monkeypatch.setattr(link_rates.ranks, "gpus", lambda: 1)
    assert link_rates.main(["--world", "2"]) == 1
    assert capsys.readouterr().out == "link_rates needs 2 GPUs; this machine has 1\n"
    assert link_rates.main([]) == 1
    assert capsys.readouterr().out == "link_rates needs 2 GPUs; this machine has 1\n"
