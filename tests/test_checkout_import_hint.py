"""Running from a checkout without installing: PYTHONPATH works, sys.path.append does not (the deprecated
stdlib module ``pipes`` comes first on Python 3.10-3.12), and the error then names the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 13), reason="Python 3.13+ has no stdlib module pipes")


def _bare_python(code: str, tmp_path: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    """This interpreter without site-packages (-S: no installed pipes, no redirect .pth), from elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-S", "-W", "ignore::DeprecationWarning", "-c", code]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_pythonpath_reaches_the_checkout(tmp_path: Path) -> None:
    probe = _bare_python("import pipes; print(pipes.IS_PIPELINE_LIBRARY, pipes.__file__)", tmp_path, str(ROOT))
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("True") and str(ROOT) in probe.stdout


def test_sys_path_append_gets_the_stdlib_module_and_the_check_names_the_fix(tmp_path: Path) -> None:
    code = (
        f"import sys; sys.path.append({str(ROOT)!r}); import pipes; print(pipes.__file__); "
        "import _pipes_import_redirect as r; r.require_pipes_library(pipes)"
    )
    probe = _bare_python(code, tmp_path)
    assert probe.returncode != 0
    assert probe.stdout.strip().endswith("pipes.py"), "sys.path.append: the stdlib module wins"
    message = probe.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: 'import pipes' found the deprecated standard-library module pipes")
    assert "PYTHONPATH=/path/to/checkout" in message and "sys.path.append does not work" in message
    assert "pip install -e" in message


def test_sys_path_insert_first_works(tmp_path: Path) -> None:
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import pipes; print(pipes.IS_PIPELINE_LIBRARY)"
    probe = _bare_python(code, tmp_path)
    assert probe.returncode == 0 and probe.stdout.strip() == "True", probe.stderr


def test_the_readme_troubleshooting_line_says_the_same() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Troubleshooting") :]
    assert "PYTHONPATH=." in section and "sys.path.append" in section and "sys.path.insert(0" in section
