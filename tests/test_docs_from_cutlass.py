"""docs/from-cutlass.md: every cutlass.pipeline concept the issue lists has a row, every pipes name the
page uses exists, its code parses, and the 'after' mainloop's declarations are real (built here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pipes
import pipes.cute

PAGE = Path(__file__).resolve().parents[1] / "docs" / "from-cutlass.md"
CONCEPTS = [
    "CooperativeGroup",
    "Agent",
    "PipelineTmaAsync",
    "PipelineTmaStore",
    "PipelineAsync",
    "PipelineOrder",
    "NamedBarrier",
    "producer_get_barrier",
    "make_pipeline_state",
    "pipeline_init_arrive",
    "pipeline_init_wait",
    "defer_sync",
    "reset_count",
    "producer_tail",
]


def _rows() -> list[list[str]]:
    text = PAGE.read_text()
    table = text[text.index("| `cutlass.pipeline` | pipes | notes |") :].split("\n\n")[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_every_listed_concept_has_a_row() -> None:
    first_column = " ".join(row[0] for row in _rows())
    missing = [c for c in CONCEPTS if c not in first_column]
    assert not missing, missing


def test_every_pipes_class_and_function_the_table_names_exists() -> None:
    names = set()
    for row in _rows():
        names |= set(re.findall(r"\b([A-Z][A-Za-z]+|init_pipelines\w*)\b", row[1]))
    # enum members (ArrivalUnit.WARP, Completion.ARRIVAL, SlotReaders.GENERIC) are checked with their enum
    names -= {"ELECTED_PER_WARP", "THREAD", "WARP", "WARPGROUP", "ELECTED_PER_WARPGROUP", "ARRIVAL", "GENERIC"}
    assert names, "no names found"
    missing = sorted(n for n in names if not (hasattr(pipes, n) or hasattr(pipes.cute, n)))
    assert not missing, missing
    members = {m for row in _rows() for m in re.findall(r"\b([A-Z][A-Za-z]+)\.([A-Z_]{2,})\b", row[1])}
    assert ("Completion", "ARRIVAL") in members and ("SlotReaders", "GENERIC") in members
    for enum, member in members:
        owner = getattr(pipes, enum, None) or getattr(pipes.cute, enum)
        assert hasattr(owner, member), f"{enum}.{member}"


def test_the_code_blocks_parse() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 2
    for block in blocks:
        ast.parse(block)


def test_the_after_declarations_are_valid() -> None:
    """The 'after' spec, multicast and layout, exactly as the page writes them (cluster 2×1)."""
    from pipes import ArrivalUnit, Completion, PipelineSpec, Role
    from pipes.cute import Multicast, RoleLayout, SlotReaders, TmaLoadPipeline, Warps

    cm, cn, stages = 2, 1, 4
    spec = PipelineSpec(
        "mainloop",
        stages,
        producer=Role("load", ArrivalUnit.ELECTED_PER_WARP),
        consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8),
        completion=Completion.TRANSACTION_BYTES,
        tx_bytes=32768,
    )
    mainloop = TmaLoadPipeline(spec, multicast=Multicast(cm, cn, a=cn > 1, b=cm > 1), readers=SlotReaders.ASYNC)
    layout = RoleLayout(384, {"load": Warps(0), "mma": Warps(4, 8)}, cluster_size=cm * cn)
    layout.check(mainloop.spec)
    assert mainloop.empty_arrivals() == 16  # 8 warps × 2 peers, the stock mcast_ctas × 8
    text = PAGE.read_text()
    assert 'consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)' in text
    assert 'RoleLayout(384, {"load": Warps(0), "mma": Warps(4, 8)}, cluster_size=cm * cn)' in text
