"""The Ascend catalogue: each hardware fact the simulator models, once right (clean) and once wrong."""

from __future__ import annotations

import pytest

from pipes.ascend import EventIdAllocator, EventIdRules, Generation, Pipe, flag_pipeline
from pipes.ascend.catalogue import BAD, ENTRIES, GOOD
from pipes.ascend.emit import AscendCBuilder, StandInT, TileLangBuilder
from pipes.ascend.sim import Severity
from pipes.errors import SpecError


@pytest.mark.parametrize("entry", GOOD, ids=lambda e: e.name)
def test_a_correct_kernel_explores_with_no_diagnosis(entry) -> None:
    report = entry.build().explore()
    assert report.ok and not len(report.diagnoses), report.text()


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e.name)
def test_a_broken_kernel_gets_its_diagnosis_and_has_a_clean_twin(entry) -> None:
    report = entry.build().explore()
    found = report.of(entry.expect)
    assert found, report.text()
    for words in entry.mentions:
        assert any(words in d.message for d in found), f"{words!r} not in {[d.message for d in found]}"
    # Warnings leave the report ok; errors do not.
    assert report.ok is all(d.severity is Severity.WARNING for d in report.diagnoses)
    assert entry.twin in ENTRIES and ENTRIES[entry.twin].expect is None


def test_the_target_decides_the_pairs_for_allocator_pipelines_and_emitters() -> None:
    a2, a5 = (
        EventIdRules(framework_preset=False),
        EventIdRules(framework_preset=False, generation=Generation.ASCEND_950),
    )
    with pytest.raises(SpecError, match="FIX→MTE2 is not a flag pair on the AIC core of Atlas A2"):
        flag_pipeline(AscendCBuilder(), "l1_out", stages=1, producer="FIX", consumer="MTE2", ids=EventIdAllocator(a2))
    pipeline = flag_pipeline(
        AscendCBuilder(rules=a5), "l1_out", stages=1, producer="FIX", consumer="MTE2", ids=EventIdAllocator(a5)
    )
    assert pipeline.event_ids.ids == (0,)
    for builder in (AscendCBuilder(rules=a2), TileLangBuilder(StandInT(), rules=a2)):
        with pytest.raises(SpecError, match="of Atlas A2"):
            builder.set_flag(Pipe.FIX, Pipe.MTE2, 0)
    AscendCBuilder(rules=a5).set_flag(Pipe.FIX, Pipe.MTE2, 0)
    assert Generation.ASCEND_950.event_ids == 8 and "Ascend 950" in Generation.ASCEND_950.label


def test_pipe_all_is_emitted_by_every_back_end() -> None:
    c = AscendCBuilder(core="AIV")
    c.pipe_barrier(Pipe.ALL)
    assert "AscendC::PipeBarrier<PIPE_ALL>();" in c.text()
    t = StandInT()
    TileLangBuilder(t, "AIV").pipe_barrier(Pipe.parse("PIPE_ALL"))
    assert 'T.pipe_barrier("ALL")' in t.text()


def test_pipe_all_is_not_a_flag_pipe() -> None:
    report = ENTRIES["pipe_all"].build()
    report.vector(0).set_flag("ALL", "V", 0)
    assert any("pipe ALL does not exist on the AIV core" in d.message for d in report.run().diagnoses)


# -- one engine: the same programs, every schedule --------------------------------------------------------
@pytest.mark.parametrize("entry", GOOD, ids=lambda e: e.name)
def test_a_correct_kernel_is_proven_on_every_schedule(entry) -> None:
    report = entry.build().prove()
    assert report.ok and report.exhaustive and not report.findings, str(report)


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e.name)
def test_a_broken_kernel_is_caught_by_the_exhaustive_engine_and_replays(entry) -> None:
    from pipes.ascend.sim.exhaustive import AscendModel
    from pipes.check.explore import _replay

    sim = entry.build()
    report = sim.prove()
    assert report.exhaustive and entry.proven in report.kinds(), str(report)
    finding = report.first(entry.proven)
    again = _replay(AscendModel(sim), finding.schedule)
    assert again is not None and again.kind is finding.kind
