"""`import pipes` reaches this package, not the deprecated standard-library module, on Python 3.10-3.12.

Each interpreter gets a fresh virtual environment; the package is installed there from a wheel and then
from an editable wheel (the two artefacts ``pip install .`` and ``pip install -e .`` install), both
built once with hatchling's PEP 517 hooks, and ``import pipes`` runs in a subprocess from a temporary
directory unrelated to the checkout.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import pipes, sys; print(pipes.__file__); sys.exit(0 if getattr(pipes, 'IS_PIPELINE_LIBRARY', False) else 3)"


def find_interpreter(version: str) -> str | None:
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in filter(None, candidates):
        ok = subprocess.run([candidate, "-c", "import venv, ensurepip"], capture_output=True).returncode == 0
        if ok:
            return candidate
    return None


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    hatchling_build = pytest.importorskip("hatchling.build", reason="hatchling (the build backend) is not installed")
    out = tmp_path_factory.mktemp("wheels")
    cwd = os.getcwd()
    os.chdir(ROOT)  # PEP 517 hooks run in the project directory
    try:
        regular = hatchling_build.build_wheel(str(out / "regular"))
        editable = hatchling_build.build_editable(str(out / "editable"))
    finally:
        os.chdir(cwd)
    return {"regular": out / "regular" / regular, "editable": out / "editable" / editable}


def run_in(directory: Path, *command: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12"])
def test_import_pipes_finds_the_library_for_both_install_kinds(version, wheels, tmp_path):
    interpreter = find_interpreter(version)
    if interpreter is None:
        pytest.skip(f"no Python {version} with venv on this machine")
    stdlib_has_pipes = run_in(
        tmp_path, interpreter, "-c", "import importlib.util as u; print(bool(u.find_spec('pipes')))"
    )
    assert stdlib_has_pipes.stdout.strip() == "True", "expected the deprecated stdlib module to exist on <= 3.12"

    venv_dir = tmp_path / "venv"
    assert run_in(tmp_path, interpreter, "-m", "venv", str(venv_dir)).returncode == 0
    python = str(venv_dir / "bin" / "python")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    for kind in ("regular", "editable"):
        install = run_in(
            tmp_path, python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheels[kind])
        )
        assert install.returncode == 0, install.stderr
        probe = run_in(elsewhere, python, "-W", "ignore::DeprecationWarning", "-c", PROBE)
        assert probe.returncode == 0, (
            f"{kind} install on {version}: import pipes gave {probe.stdout!r} {probe.stderr!r}"
        )
        found = Path(probe.stdout.strip())
        expected_root = ROOT if kind == "editable" else venv_dir
        assert expected_root in found.parents, f"{kind} install on {version} imported {found}"
        assert run_in(tmp_path, python, "-m", "pip", "uninstall", "-q", "-y", "pipes-cute").returncode == 0


def test_redirect_defers_to_the_stdlib_when_the_library_is_absent(tmp_path):
    """The finder only claims a *package* named pipes: with none on sys.path, the stdlib module still loads."""
    root = str(ROOT)
    code = (
        f"import sys; sys.path.insert(0, {root!r}); import _pipes_import_redirect; "
        f"sys.path[:] = [p for p in sys.path if p not in ({root!r}, '')]; "
        "import pipes; print(pipes.__file__)"
    )
    probe = run_in(tmp_path, sys.executable, "-W", "ignore::DeprecationWarning", "-c", code)
    if sys.version_info >= (3, 13):
        assert probe.returncode != 0  # no stdlib module to fall back to
    else:
        assert probe.returncode == 0, probe.stderr
        assert probe.stdout.strip().endswith("pipes.py")


def test_this_interpreter_imports_the_library():
    import pipes

    assert getattr(pipes, "IS_PIPELINE_LIBRARY", False), pipes.__file__
