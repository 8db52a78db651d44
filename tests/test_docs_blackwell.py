"""docs/blackwell.md says what is true: its example's values, the names it uses, the checker's findings it
reports (the catalogue table and the GEMM + reduce-scatter table are re-derived by running the checker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pipes.cute
import pipes.cute.sm100
from pipes.check import FindingKind, check
from pipes.check.catalogue import blackwell
from pipes.check.scope import Scope

PAGE = Path(__file__).resolve().parents[1] / "docs" / "blackwell.md"
TEXT = PAGE.read_text()


def _table(header: str) -> list[list[str]]:
    table = TEXT[TEXT.index(header) :].split("\n\n")[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_the_cluster_example_prints_what_its_comments_say() -> None:
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", TEXT, re.S) if "UmmaCluster(" in b]
    namespace: dict = {}
    exec(block.split("\ncluster.mma_peers")[0], namespace)  # the import and the declaration
    cluster = namespace["cluster"]
    for line in block.splitlines():
        m = re.match(r"(cluster\.[\w()0-9]+)\s+# (0b[01]+|\d+)", line)
        if m:
            assert eval(m.group(1), namespace) == int(m.group(2), 0), line
    assert cluster.mma_peers == 2


def test_every_class_the_mapping_tables_name_exists() -> None:
    for header in ("| `cutlass.pipeline` | `pipes.cute.sm100` | notes |", "| kind | `cutlass.pipeline` |"):
        for row in _table(header):
            cell = row[1] if header.startswith("| `cutlass") else row[0]
            for name in re.findall(r"`([A-Z][A-Za-z]+)", cell):
                assert hasattr(pipes.cute.sm100, name) or hasattr(pipes.cute, name), name


def test_the_catalogue_table_lists_every_blackwell_defect_with_its_finding() -> None:
    rows = _table("| protocol | defect | finding |")
    gemm_and_clc = [e for e in blackwell.BAD if not e.name.startswith("gemm_rs")]
    assert len(rows) == len(gemm_and_clc)
    stated = sorted((row[0].strip("`"), row[2].split("`")[1]) for row in rows)
    actual = sorted((_protocol_of(e.name), e.expect.name) for e in gemm_and_clc)
    assert stated == actual


def _protocol_of(entry: str) -> str:
    """The catalogue function a defect entry is built by (its name's prefix)."""
    for protocol in ("umma_pair", "clc_fetch", "umma"):
        if entry.startswith(protocol):
            return "umma_gemm" if protocol == "umma" else protocol
    raise AssertionError(entry)


@pytest.mark.parametrize("row", _table("| drain | flag scope | finding |"), ids=lambda r: f"{r[0]}-{r[1]}")
def test_the_reduce_scatter_table_is_what_the_checker_finds(row: list[str]) -> None:
    drain = "read" if ".read" in row[0] else "complete"
    scope = Scope.GPU if ".gpu" in row[1] else Scope.SYSTEM
    report = check(blackwell.gemm_reduce_scatter(drain=drain, scope=scope))
    if row[2] == "clean":
        assert report.ok and not report.findings
    else:
        assert report.findings[0].kind is FindingKind[row[2].split("`")[1]]
        said_scope = "does not reach" in row[2]
        assert ("does not reach owner" in report.findings[0].message) is said_scope
