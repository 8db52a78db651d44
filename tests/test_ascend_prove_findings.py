"""`Simulator.prove` reports every distinct finding, names it as `explore` does, speaks of schedules, not timing."""

from __future__ import annotations

import re

import numpy as np

from pipes.ascend import EventIdRules, Space
from pipes.ascend.kernels.attention import AttentionBug, attention_simulator
from pipes.ascend.kernels.pingpong import PingPongBug, pingpong_simulator
from pipes.ascend.sim import Simulator
from pipes.ascend.sim.exhaustive import replay
from pipes.check import FindingKind


def _sim(**kw) -> Simulator:
    return Simulator(EventIdRules(framework_preset=False), **kw)


def _hazard_then_double_set() -> Simulator:
    """One vector core, two defects one after the other on its V pipe: a same-pipe RAW, then a flag left set."""
    sim = _sim(vector_cores=1)
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", x.shape, np.float32)
    vec = sim.vector(0)
    a, b, c = (vec.buffer(n, Space.UB, (16,), np.float32) for n in ("a", "b", "c"))
    vec.copy(gx, a)
    vec.set_flag("MTE2", "V", 0)
    vec.wait_flag("MTE2", "V", 0)
    vec.vector("muls", b, a, 2.0)
    vec.vector("exp", c, b)  # defect 1: reads b with no pipe_barrier(PIPE_V) after the write
    vec.set_flag("V", "MTE3", 1)
    vec.wait_flag("V", "MTE3", 1)
    vec.copy(c, gy)
    vec.set_flag("V", "MTE2", 2)  # defect 2: set and never waited for (left set at exit)
    return sim


def _race_and_credit() -> Simulator:
    """The cube writes a workspace and signals; the vector core reads it without waiting: a cross-core race,
    and the cube's signal is left untaken at exit (a ``CREDITS_LEFT`` warning)."""
    sim = _sim(vector_cores=1)
    src = sim.gm("src", np.full(4, 5.0, dtype=np.float32))
    ws = sim.gm_zeros("ws", (4,), np.float32)
    out = sim.gm_zeros("out", (4,), np.float32)
    aic, vec = sim.cube(), sim.vector(0)
    l1 = aic.buffer("l1", Space.L1, (4,), np.float32)
    ub = vec.buffer("ub", Space.UB, (4,), np.float32)
    aic.copy(src, l1)
    aic.set_flag("MTE2", "MTE3", 0)
    aic.wait_flag("MTE2", "MTE3", 0)
    aic.copy(l1, ws)
    aic.set_cross_flag("MTE3", 0)
    vec.copy(ws, ub)  # no wait_cross_flag: the read races the cube's write
    vec.set_flag("MTE2", "MTE3", 0)
    vec.wait_flag("MTE2", "MTE3", 0)
    vec.copy(ub, out)
    return sim


def _binary_run_ahead() -> Simulator:
    """Under the binary reading the cube's second set is lost before the vector core takes the first."""
    sim = _sim(vector_cores=1, cross_core_capacity=1)
    for _ in range(2):
        sim.cube().set_cross_flag("FIX", 0)
    for _ in range(2):
        sim.vector(0).wait_cross_flag("MTE2", 0)
    return sim


def test_two_defects_on_one_path_are_both_reported() -> None:
    sim = _hazard_then_double_set()
    report = sim.prove()
    assert {FindingKind.READ_UNCOMMITTED, FindingKind.UNBALANCED_EXIT} <= report.kinds(), str(report)
    assert report.exhaustive
    for finding in report.findings:
        again = replay(sim, finding.schedule, finding)
        assert (again.kind, again.message) == (finding.kind, finding.message)


def test_an_error_and_a_credits_left_warning_are_both_reported() -> None:
    report = _race_and_credit().prove()
    assert not report.ok
    assert FindingKind.CREDITS_LEFT in report.kinds(), str(report)
    assert {f.kind for f in report.errors} & {FindingKind.READ_UNCOMMITTED, FindingKind.OVERWRITE_UNRELEASED}


def test_prove_and_explore_name_a_counter_overflow_and_a_cross_core_race_alike() -> None:
    overflow = _binary_run_ahead()
    proved = {f.kind.name for f in overflow.prove().findings}
    sampled = overflow.explore().names()
    assert "COUNTER_OVERFLOW" in proved and "COUNTER_OVERFLOW" in sampled
    assert "LOST_SIGNAL" not in proved | sampled
    race = _race_and_credit()
    proved = {f.kind.name for f in race.prove().findings}
    sampled = race.explore().names() - {"WRONG_RESULT"}  # values: sampled runs only
    # A cross-core race is named by the access a schedule runs second, the same rule in both.
    hazards = {"READ_UNCOMMITTED", "OVERWRITE_UNRELEASED"}
    assert proved & hazards and sampled & hazards and sampled <= hazards | {"CREDITS_LEFT"}, (proved, sampled)
    hazard = next(d for d in race.explore().diagnoses if d.name in hazards)
    assert str(hazard).startswith(f"ERROR {hazard.name}")


def test_no_prove_message_speaks_of_timing() -> None:
    sims = [pingpong_simulator(2, bug=bug) for bug in PingPongBug]
    # The attention kernel's races (its other variants prove clean or end in credits left, and take 10-25 s each).
    sims += [attention_simulator(2, bug=AttentionBug.VECTOR_RELEASES_EARLY)]
    sims += [_hazard_then_double_set(), _race_and_credit(), _binary_run_ahead()]
    timing = re.compile(r"luck|timing|happened to|this time", re.I)
    messages = [f.message for sim in sims for f in sim.prove().findings]
    assert messages
    assert not [m for m in messages if timing.search(m)]
