"""pipes.check against CUTLASS's Task Scheduling checker (benchmarks/checker_vs_cutlass.py), on a subset.

Among the cases written for both checkers, pipes.check finds every planted defect the CUTLASS checker finds
(except the one PDL rule that is a TS policy rather than a hazard: pipes.check proves it harmless), and both
pass the corrected twins; pipes.check also finds the phase-parity and TMA-store-completion defects that TS's
credit model cannot express.
"""

import checker_vs_cutlass as cvc
import pytest

WHY_NOT = cvc.cutlass_available()
needs_ts = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

SHARED = [
    "ts_cyclic_deadlock",
    "ts_alias_race",
    "ts_pdl_launch_before_wait",
    "missing_release",
    "release_before_read",
    "keeps_last_slot",
    "two_warpgroups_declared_as_one",
    "silent_reader_unsynchronised",
    "dependent_launch_reads_early",
]
#: TS flags it; pipes.check proves it is no hazard (griddepcontrol.wait in the next grid waits for this one).
TS_POLICY_ONLY = {"ts_pdl_launch_before_wait"}
PHASE_OR_STORE = [
    "producer_phase_0",
    "order_phase_never_flips",
    "notify_on_smem_read",
    "hand_written_tma_store_not_waited",
]


def cases(names):
    by_name = {case.name: case for case in cvc.all_cases()}
    return [by_name[name] for name in names]


def test_every_catalogue_defect_is_written_for_ts_or_says_why_not():
    catalogue = [case for case in cvc.all_cases() if case.origin == "pipes catalogue"]
    assert len(catalogue) == len(cvc.BAD)
    for case in catalogue:
        assert case.cutlass is not None or case.note.startswith("TS cannot: "), case.name
    assert set(cvc.TS_OF_CATALOGUE) | set(cvc.CANNOT) == {entry.name for entry in cvc.BAD}
    assert not set(cvc.TS_OF_CATALOGUE) & set(cvc.CANNOT)


@needs_ts
def test_pipes_finds_every_defect_ts_finds_among_the_shared_cases():
    rows = cvc.compare(cases(SHARED), repeat=1)
    for row in rows:
        assert row.cutlass is not None and row.cutlass.found, f"TS misses {row.case.name}"
    missed = {row.case.name for row in rows if not row.pipes.found}
    assert missed == TS_POLICY_ONLY, f"pipes.check misses what TS finds: {sorted(missed - TS_POLICY_ONLY)}"


@needs_ts
@pytest.mark.parametrize("name", SHARED)
def test_both_pass_the_corrected_twin(name):
    (case,) = cases([name])
    assert case.cutlass_twin is not None and case.pipes_twin is not None
    ts = cvc.run_cutlass(case.cutlass_twin)
    assert not ts.found, ts.message
    ours = cvc.run_pipes(case.pipes_twin)
    assert not ours.found, ours.message


@needs_ts
def test_ts_finds_its_own_documented_defects_where_it_says():
    rows = {row.case.name: row for row in cvc.compare(cases(["ts_cyclic_deadlock", "ts_alias_race"]), repeat=1)}
    assert rows["ts_cyclic_deadlock"].cutlass.label.startswith("deadlock")
    assert rows["ts_alias_race"].cutlass.label == "race [BFS]"
    assert rows["ts_alias_race"].pipes.label.startswith("OVERWRITE_UNRELEASED")
    assert "DEADLOCK" in rows["ts_cyclic_deadlock"].pipes.label


def test_pipes_finds_the_phase_and_tma_store_defects_ts_cannot_model():
    rows = cvc.compare(cases(PHASE_OR_STORE), repeat=1, with_cutlass=False)
    for row in rows:
        assert row.case.cutlass is None and row.case.phase_or_store, row.case.name
        assert row.pipes.found, f"pipes.check misses {row.case.name}"


def test_the_table_prints(capsys):
    rows = cvc.compare(cases(["missing_release", "producer_phase_0"]), repeat=1, with_cutlass=WHY_NOT is None)
    text = cvc.table(rows, markdown=True)
    assert text.splitlines()[0].startswith("| case | defect planted | CUTLASS task_scheduling finds it?")
    assert "| producer_phase_0 |" in text and "cannot express" in text
