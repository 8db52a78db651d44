"""The docs extra builds a site: `mkdocs build --strict` passes, and it does fail on a broken link, a broken
anchor, or a link to a missing repository file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]' or '.[dev]')")


def _build(root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    # No -q: mkdocs 1.6 counts strict-mode warnings only at the log level it prints them.
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "-f",
        str(root / "mkdocs.yml"),
        "-d",
        str(tmp_path / "site"),
    ]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = _build(ROOT, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    site = tmp_path / "site"
    for page in ("index.html", "from-cutlass.html", "tma-store-staging.html", "cute-tma-load.html"):
        assert (site / page).exists(), page


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy)
    shutil.copy(ROOT / "mkdocs_hooks.py", copy)
    (copy / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", copy / "benchmarks")
    return copy


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        ("[gone](no-such-page.md)", "no-such-page.md"),
        ("[gone](protocol.md#no-such-heading)", "no-such-heading"),
        ("[gone](../benchmarks/NO_SUCH.md)", "points to no file of the repository"),
    ],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, broken: str, says: str) -> None:
    copy = _copy(tmp_path)
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + f"\nSee {broken}.\n")
    result = _build(copy, tmp_path)
    assert result.returncode != 0 and says in result.stdout + result.stderr, result.stdout + result.stderr
