"""The checker docs stay true: docs/checking.md's code runs, docs/protocol.md's parity table is the core's."""

import re
from pathlib import Path

from pipes import CONSUMER_START_PHASE, PRODUCER_START_PHASE, position

DOCS = Path(__file__).resolve().parent.parent / "docs"


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_checking_page_examples_run(capsys):
    blocks = python_blocks((DOCS / "checking.md").read_text())
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/checking.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "pipes.check handoff: OK" in printed
    assert "READ_UNCOMMITTED: comm reads global[('C', 0)]" in printed


def test_checking_page_shows_the_output_the_checker_prints(capsys):
    text = (DOCS / "checking.md").read_text()
    namespace = {}
    for block in python_blocks(text)[:2]:
        exec(compile(block, "docs/checking.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    shown = text.split("```\nREAD_UNCOMMITTED", 1)[1].split("```", 1)[0]
    shown_lines = ["READ_UNCOMMITTED" + shown.splitlines()[0], *shown.splitlines()[1:]]
    for line in shown_lines:
        if line.strip() and line.strip() != "...":
            assert line in printed, f"docs show a line the checker does not print: {line!r}"


def test_protocol_page_parity_table_matches_the_core():
    text = (DOCS / "protocol.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith(("producer waits", "consumer waits", "slot `k % 2`")):
            rows[cells[0].split()[0]] = [int(c) for c in cells[1:]]
    assert rows["slot"] == [position(k, 2, PRODUCER_START_PHASE)[0] for k in range(6)]
    assert rows["producer"] == [position(k, 2, PRODUCER_START_PHASE)[1] for k in range(6)]
    assert rows["consumer"] == [position(k, 2, CONSUMER_START_PHASE)[1] for k in range(6)]


def test_comm_page_examples_run_and_print_what_the_page_shows(capsys):
    """docs/comm.md: every ```python block runs, in order, and each output block shown right after one is
    what it prints (timings aside)."""
    text = (DOCS / "comm.md").read_text()
    pairs = re.findall(r"```python\n(.*?)```\n+```\n(.*?)```", text, flags=re.S)
    blocks = python_blocks(text)
    assert len(blocks) >= 4 and len(pairs) >= 3
    namespace = {}
    shown_after = dict(pairs)
    for block in blocks:
        exec(compile(block, "docs/comm.md", "exec"), namespace)
        printed = capsys.readouterr().out
        if block in shown_after:
            untimed = lambda s: re.sub(r"\d+\.\d\d s\b", "T s", s)  # noqa: E731
            for line in shown_after[block].splitlines():
                assert untimed(line) in untimed(printed), f"docs/comm.md shows a line nothing prints: {line!r}"
