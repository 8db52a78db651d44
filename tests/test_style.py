"""The repository is `ruff check` and `ruff format --check` clean (the settings are pyproject.toml's)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff")

pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (pip install -e '.[dev]')")


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["check", "format"])
def test_ruff_is_clean(command: list[str]) -> None:
    result = subprocess.run(
        [RUFF, *command, "--output-format", "concise"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
