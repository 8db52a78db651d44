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


def test_device_tests_share_one_worker_under_xdist():
    """The README runs pytest-xdist with ``--dist loadgroup``, and collection puts every gpu / blackwell /
    npu test into one xdist group, so two of them never run on one device at once; other tests get none."""
    import conftest

    assert "-n auto --dist loadgroup" in readme_commands()[1]

    class Item:
        def __init__(self, *markers: str) -> None:
            self.keywords = dict.fromkeys(markers, True)
            self.added: list = []

        def add_marker(self, marker) -> None:  # noqa: ANN001
            self.added.append(marker)

    made = [Item("gpu"), Item("npu"), Item("blackwell"), Item("slow"), Item()]
    items = list(made)
    conftest.pytest_collection_modifyitems(None, items)  # also marks them skipped where no device is
    groups = [[m.args for m in item.added if m.name == "xdist_group"] for item in made]
    assert groups == [[("device",)], [("device",)], [("device",)], [], []]
    # the slow test goes first (xdist hands out work in collection order), the others keep their order
    assert items == [made[3], made[0], made[1], made[2], made[4]]


def test_pytest_markers_are_registered():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"gpu: ', pyproject) and re.search(r'"npu: ', pyproject)


def test_the_api_taste_runs_and_the_checker_proves_it():
    import contextlib
    import io

    text = (ROOT / "README.md").read_text()
    block = re.search(r"## A taste of the API\n```python\n(.*?)```", text, re.S)
    assert block, "README.md needs a python block under '## A taste of the API'"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README.md", "exec"), {})
    assert "OK" in out.getvalue() and "exhaustive" in out.getvalue(), out.getvalue()
