"""pipes.check.staging: the CPU checker runs a kernel's own TmaStoreStaging declaration, and catches each
planted defect of the staging protocol with the finding that names it."""

from pathlib import Path

import cute_kernels_staging as cks
import pytest

from pipes import SpecError
from pipes.check import FindingKind, check, replay
from pipes.check.staging import staging_protocol
from pipes.cute import TmaStoreStaging


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("writers", [1, 2])
def test_the_staging_protocol_is_proved(stages: int, writers: int) -> None:
    report = check(staging_protocol(TmaStoreStaging(stages), tiles=4, writers=writers))
    assert report.ok and report.exhaustive, str(report)


@pytest.mark.parametrize(("stages", "batch"), [(2, 2), (4, 2), (4, 4), (3, 3)])
@pytest.mark.parametrize("writers", [1, 2])
def test_batched_acquires_are_proved_and_need_the_deeper_wait(stages: int, batch: int, writers: int) -> None:
    """``acquire(slots=batch)``: one wait (``read stages - batch``) and one barrier pair for ``batch`` buffers.
    The same batches with the one-buffer wait (``short_wait``) overwrite a buffer a store still reads."""
    tiles = 2 * stages
    report = check(staging_protocol(TmaStoreStaging(stages), tiles=tiles, writers=writers, batch=batch))
    assert report.ok and report.exhaustive, str(report)
    short = check(
        staging_protocol(TmaStoreStaging(stages), tiles=tiles, writers=writers, batch=batch, bug="short_wait")
    )
    assert short.findings and short.findings[0].kind is FindingKind.OVERWRITE_UNRELEASED, str(short)


def test_the_test_kernels_declaration_is_checked() -> None:
    staging = cks.build_staging(3).pipeline
    assert isinstance(staging, TmaStoreStaging)
    protocol = staging_protocol(staging, tiles=5, writers=2)
    assert protocol.name == "epi_staging_staging"
    assert check(protocol).ok


@pytest.mark.parametrize(
    ("bug", "kind", "says"),
    [
        (
            "no_wait",
            FindingKind.OVERWRITE_UNRELEASED,
            "TMA store reads staging.buf[0].0 expecting write #1, but write #2",
        ),
        ("no_fence", FindingKind.READ_UNCOMMITTED, "was not fenced (fence.proxy.async) before the store was issued"),
        ("no_sync", FindingKind.READ_UNCOMMITTED, "TMA store reads staging.buf[0].1, which nothing has written yet"),
    ],
)
def test_each_planted_defect_is_reported_and_replays(bug: str, kind: FindingKind, says: str) -> None:
    protocol = staging_protocol(TmaStoreStaging(2), tiles=4, writers=2, bug=bug)
    finding = check(protocol).findings[0]
    assert finding.kind is kind and says in finding.message, str(finding)
    assert replay(protocol, finding.schedule).message == finding.message


def test_a_single_writer_without_the_wait_overwrites_a_buffer_its_store_still_reads() -> None:
    finding = check(staging_protocol(TmaStoreStaging(1), tiles=3, writers=1, bug="no_wait")).findings[0]
    assert finding.kind is FindingKind.OVERWRITE_UNRELEASED


def test_bad_arguments_are_named() -> None:
    with pytest.raises(SpecError, match=r"staging_protocol\.bug = 'late' is invalid: allowed None or one of"):
        staging_protocol(TmaStoreStaging(2), bug="late")
    with pytest.raises(SpecError, match=r"staging_protocol\.writers = 0 is invalid: allowed an int >= 1"):
        staging_protocol(TmaStoreStaging(2), writers=0)
    with pytest.raises(SpecError, match=r"staging_protocol\.staging\.stages = None is invalid"):
        staging_protocol(object())
    with pytest.raises(SpecError, match=r"staging_protocol\.batch = 3 is invalid: allowed an int in \[1, 2\]"):
        staging_protocol(TmaStoreStaging(2), batch=3)
    with pytest.raises(SpecError, match=r"staging_protocol\.batch = 2 is invalid: .* dividing tiles = 5"):
        staging_protocol(TmaStoreStaging(2), tiles=5, batch=2)


def test_the_docs_checker_example_runs(capsys) -> None:
    import re

    text = (Path(__file__).resolve().parent.parent / "docs" / "tma-store-staging.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "staging_protocol" in b]
    exec(compile(block, "docs/tma-store-staging.md", "exec"), {})
    assert "pipes.check staging_staging: OK" in capsys.readouterr().out
