"""The README's two set-up commands are exactly what CI runs, so a newcomer's first commands are tested."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Set up.*?```(?:bash|sh)?\n(.*?)```", text, re.S)
    assert block, "README.md needs a '## Set up' section with a shell block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_readme_has_exactly_two_setup_commands():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert "pip install" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for command in readme_commands():
        assert command in ci_lines, f"{command!r} from README.md is not run by .ci/run"


def test_pytest_markers_are_registered():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"gpu: ', pyproject) and re.search(r'"npu: ', pyproject)
