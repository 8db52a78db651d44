"""The Python examples in docs/ascend.md run as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "ascend.md"


def test_every_python_block_in_the_ascend_page_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 2
    out = io.StringIO()
    for block in blocks:
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), {})  # noqa: S102 - the page's own examples
    text = out.getvalue()
    assert 'T.wait_flag("M", "MTE1", SIG_L0AB + i % 2)' in text
    assert "no problems found" in text
