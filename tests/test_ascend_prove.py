"""Ascend programs through pipes.check's exploration engine: every schedule, the simulator as hardware model."""

from __future__ import annotations

from ascend_handwritten import PRIMED, VARIANTS, handwritten_simulator

from pipes.ascend import EventIdRules
from pipes.ascend.kernels.attention import AttentionBug, attention_simulator
from pipes.ascend.kernels.pingpong import PingPongBug, pingpong_simulator
from pipes.ascend.sim.exhaustive import replay
from pipes.check import FindingKind


def test_the_generated_ping_pong_gemm_is_proven_on_every_schedule() -> None:
    report = pingpong_simulator(4).prove()
    assert report.ok and report.exhaustive and not report.findings, str(report)


def test_the_cube_to_vector_hand_off_is_proven_for_two_trips() -> None:
    report = attention_simulator(2).prove()
    assert report.ok and report.exhaustive, str(report)


def test_planted_bugs_are_found_with_a_replayable_interleaving() -> None:
    cases = [
        (pingpong_simulator(3, bug=PingPongBug.RELEASE_L0_BEFORE_MMA), FindingKind.OVERWRITE_UNRELEASED),
        (pingpong_simulator(3, bug=PingPongBug.HARD_CODED_RELEASE), FindingKind.DOUBLE_SET),
        (attention_simulator(4, bug=AttentionBug.VECTOR_RELEASES_EARLY), FindingKind.OVERWRITE_UNRELEASED),
        (attention_simulator(3, bug=AttentionBug.CUBE_SKIPS_ACQUIRE), FindingKind.READ_UNCOMMITTED),
    ]
    for sim, kind in cases:
        report = sim.prove()
        assert report.exhaustive and kind in report.kinds(), str(report)
        finding = report.first(kind)
        again = replay(sim, finding.schedule)
        assert (again.kind, again.message) == (finding.kind, finding.message)


def test_counters_hold_the_cube_running_ahead_but_the_binary_reading_loses_it() -> None:
    binary = EventIdRules(framework_preset=False, cross_core_capacity=1)
    report = attention_simulator(3, bug=AttentionBug.CUBE_SKIPS_ACQUIRE, rules=binary).prove()
    assert FindingKind.COUNTER_OVERFLOW in report.kinds()
    counted = attention_simulator(3, bug=AttentionBug.CUBE_SKIPS_ACQUIRE).prove()
    assert FindingKind.COUNTER_OVERFLOW not in counted.kinds()


def test_the_hand_written_schedule_agrees_with_the_sampled_runs() -> None:
    as_written = handwritten_simulator(2, VARIANTS[0], framework_preset=False)
    assert FindingKind.DEADLOCK in as_written.prove().kinds()
    assert "deadlock" in {k.value for k in as_written.explore().kinds()}
    primed = handwritten_simulator(2, PRIMED, framework_preset=False)
    report = primed.prove()
    assert report.ok and report.exhaustive, str(report)
