"""The reference kernels in the simulator: the 64-tile ping-pong GEMM against numpy, its planted bugs,
the user's hand-written schedule, the cube→vector cross-core hand-off, and the example script."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np
import pytest
from ascend_handwritten import (  # examples/: test material, not library code
    AS_WRITTEN,
    PRESET_L0AB,
    PRIMED,
    Q_ON_K_L1,
    Q_VIA_LOOP,
    SEQUENTIAL_IDS,
    HandIds,
    handwritten_simulator,
)

from pipes.ascend import EventIdRules, Keying
from pipes.ascend.kernels.attention import AttentionBug, attention_simulator
from pipes.ascend.kernels.pingpong import PingPongBug, pingpong_simulator
from pipes.ascend.sim import Kind, Severity

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ascend_gemm_pingpong.py"


def test_pingpong_64_tiles_matches_numpy_under_every_schedule() -> None:
    sim = pingpong_simulator(64)
    report = sim.explore()
    assert report.ok and not len(report.diagnoses), report.text()
    assert len(report.runs) == 13
    expected = sim.expectations[0].expected.astype(np.float32)
    for run in report.runs:
        np.testing.assert_allclose(run.outputs["workspace"].astype(np.float32), expected, rtol=2e-2, atol=2e-2)


def test_release_before_mma_is_a_hazard_on_l0b() -> None:
    report = pingpong_simulator(6, bug=PingPongBug.RELEASE_L0_BEFORE_MMA).explore()
    hazard = report.of(Kind.DATA_HAZARD)[0].message
    assert hazard.startswith("WAR on l0b: aic/MTE1 overwrites l0b[0, :, :] while aic/M may still be reading it")
    assert Kind.WRONG_RESULT in report.kinds()


def test_hard_coded_release_double_sets_and_starves_the_other_slot() -> None:
    report = pingpong_simulator(6, bug=PingPongBug.HARD_CODED_RELEASE).explore()
    assert {Kind.DOUBLE_SET, Kind.UNMATCHED_WAIT, Kind.DEADLOCK} <= report.kinds()
    assert "wait_flag(M→MTE1, id 3)" in report.of(Kind.UNMATCHED_WAIT)[0].message


def test_hand_written_schedule_as_written_deadlocks_in_the_first_iteration() -> None:
    report = handwritten_simulator(4, AS_WRITTEN, ids=SEQUENTIAL_IDS, framework_preset=False).explore()
    assert report.kinds() == {Kind.DEADLOCK}
    assert "wait cycle: aic/MTE1 → aic/M → aic/MTE1" in report.of(Kind.DEADLOCK)[0].message


@pytest.mark.parametrize("trips", [1, 2, 5])
def test_hand_written_schedule_primed_and_drained_is_correct(trips: int) -> None:
    report = handwritten_simulator(trips, PRIMED, ids=SEQUENTIAL_IDS, framework_preset=False).explore()
    assert report.ok and not len(report.diagnoses), report.text()


def test_hand_written_priming_collides_with_the_framework_preset() -> None:
    report = handwritten_simulator(4, PRIMED, ids=SEQUENTIAL_IDS, framework_preset=True).explore()
    assert {Kind.DOUBLE_SET, Kind.FRAMEWORK_FLAG} <= report.kinds()
    relying = handwritten_simulator(4, PRESET_L0AB, ids=SEQUENTIAL_IDS, framework_preset=True).explore()
    assert relying.ok and not len(relying.diagnoses)
    without = handwritten_simulator(4, PRESET_L0AB, ids=SEQUENTIAL_IDS, framework_preset=False).explore()
    assert Kind.DEADLOCK in without.kinds()


def test_q_load_on_the_k_tile_flag_races_when_mte2_runs_ahead() -> None:
    report = handwritten_simulator(4, Q_ON_K_L1, ids=SEQUENTIAL_IDS, framework_preset=False).explore()
    double = report.of(Kind.DOUBLE_SET)[0]
    assert "rush(MTE2)" in double.schedules and "program-order" not in double.schedules
    assert "set_flag(MTE2→MTE1, id 0), iteration 0 sets a flag that is already set" in double.message


def test_relying_on_the_k_tile_flag_for_q_reads_q_before_it_lands() -> None:
    report = handwritten_simulator(4, Q_VIA_LOOP, ids=SEQUENTIAL_IDS, framework_preset=False).explore()
    hazard = report.of(Kind.DATA_HAZARD)[0]
    assert hazard.message.startswith("RAW on q_l1: aic/MTE1 reads q_l1 before aic/MTE2 finished writing it")
    assert "program-order" in hazard.schedules  # found on every schedule, not only unlucky ones
    wrong = report.of(Kind.WRONG_RESULT)[0].message
    assert "NaN" in wrong and "max |error|" not in wrong.split(";")[2]


def test_per_pair_ids_are_fine_per_pair_and_collide_per_source() -> None:
    pair = handwritten_simulator(4, PRIMED, ids=HandIds(), framework_preset=False).explore()
    assert pair.ok and pair.kinds() == {Kind.SHARED_SOURCE_ID}
    source = handwritten_simulator(
        4, PRIMED, ids=HandIds(), framework_preset=False, flag_keying=Keying.SOURCE_PIPE
    ).explore()
    assert Kind.DOUBLE_SET in source.kinds() and not source.ok


def test_cross_core_attention_hand_off_is_clean_and_correct() -> None:
    report = attention_simulator(12).explore()
    assert report.ok and not len(report.diagnoses), report.text()
    assert len(report.runs) == 17  # program order, 4 random, delay and rush of MTE1 MTE2 MTE3 M V FIX


def test_cross_core_producer_running_ahead_overwrites_the_workspace() -> None:
    # Counters count the cube's extra sets (no false lost signal); the bug is the unordered overwrite, and
    # the free-slot credits it never took are left at exit (a warning).
    report = attention_simulator(8, bug=AttentionBug.CUBE_SKIPS_ACQUIRE).explore()
    assert report.kinds() == {Kind.DATA_HAZARD, Kind.WRONG_RESULT, Kind.CREDITS_LEFT}
    assert all(d.severity is Severity.WARNING for d in report.of(Kind.CREDITS_LEFT))
    # Under the binary reading the cube's extra sets are lost, and the hang they cause is shown too.
    binary = EventIdRules(framework_preset=False, cross_core_capacity=1)
    report = attention_simulator(8, bug=AttentionBug.CUBE_SKIPS_ACQUIRE, rules=binary).explore()
    lost = [d.message for d in report.of(Kind.LOST_SIGNAL)]
    assert any(m.startswith("aic FIX #") and "before aiv0 took the previous signal" in m for m in lost)
    assert {Kind.DATA_HAZARD, Kind.DEADLOCK} <= report.kinds()


def test_cross_core_early_release_is_a_cross_core_hazard() -> None:
    report = attention_simulator(6, bug=AttentionBug.VECTOR_RELEASES_EARLY).explore()
    assert report.kinds() == {Kind.DATA_HAZARD}
    assert "cross-core on workspace: aic/FIX writes workspace[0, :, :]" in report.of(Kind.DATA_HAZARD)[0].message


def test_example_script_runs_and_reports() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module = runpy.run_path(str(EXAMPLE))
        module["main"](iters=16, hand_iters=4)
    text = out.getvalue()
    assert "flag calls identical and in the same order: True" in text
    assert "clean: no problems in 13 schedule(s)" in text
    assert 'T.wait_flag("M", "MTE1", SIG_L0AB + i % 2)' in text
    assert "AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(SIG_L0AB + i % 2);" in text
    assert "cross-core signals left untaken at exit (warning)" in text
