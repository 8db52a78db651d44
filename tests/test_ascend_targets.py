"""Per-target hardware facts (pipes.ascend.targets): every checker reads the target object.

(a) a pair a target removed is refused by the simulator, ``prove`` and ``flag_pipeline`` there, and accepted
on A2/A3; (b) same-pipe ordering is judged by the target's in-order pipes, not a simulator argument;
(c) the cross-core counters' capacity is the target's.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipes.ascend import (
    ASCEND_950,
    ATLAS_A2_A3,
    CoreType,
    EventIdAllocator,
    EventIdError,
    EventIdRules,
    Generation,
    Pipe,
    Space,
    derive_target,
    flag_pipeline,
)
from pipes.ascend.emit import AscendCBuilder
from pipes.ascend.pairs import ASCEND_950_PAIRS, LEGAL_PAIRS
from pipes.ascend.sim import Kind, Simulator
from pipes.ascend.sim.config import DEFAULT_OVERLAP
from pipes.ascend.targets import ASCEND_950_ADDED, ASCEND_950_REMOVED, FIRST_GEN, AscendTarget
from pipes.check import FindingKind
from pipes.errors import SpecError

REMOVED = (CoreType.AIC, Pipe.MTE1, Pipe.MTE3)
"""An A2/A3 pair, removed from a 950 in these tests (the repository knows of no pair the 950 removed)."""

A5_LESS = derive_target(ASCEND_950, name="A5", label="Ascend 950 (A5)", removed={REMOVED})
A5_V_IN_ORDER = derive_target(ASCEND_950, name="A5", label="Ascend 950 (A5)", in_order=ASCEND_950.in_order | {Pipe.V})


def _rules(target: AscendTarget | None = None, **options) -> EventIdRules:
    return EventIdRules(framework_preset=False, hardware=target, **options)


# -- the facts ----------------------------------------------------------------------------------------
def test_each_generation_has_its_target_and_the_950_table_is_derived_explicitly() -> None:
    assert Generation.ATLAS_A2.target is ATLAS_A2_A3 and Generation.ASCEND_950.target is ASCEND_950
    assert Generation.FIRST_GEN.target is FIRST_GEN and FIRST_GEN.event_ids == 4
    assert ATLAS_A2_A3.legal_pairs == LEGAL_PAIRS
    assert ASCEND_950.legal_pairs == ASCEND_950_PAIRS  # the written-out table equals the derivation
    assert ASCEND_950.pairs == (ATLAS_A2_A3.pairs - ASCEND_950_REMOVED) | ASCEND_950_ADDED
    assert ATLAS_A2_A3.in_order == {Pipe.M, Pipe.MTE1, Pipe.FIX, Pipe.S}
    assert ATLAS_A2_A3.overlapping == DEFAULT_OVERLAP == {Pipe.V, Pipe.MTE2, Pipe.MTE3}
    assert ATLAS_A2_A3.cross_core_capacity == ASCEND_950.cross_core_capacity == 15
    assert EventIdRules().target is ATLAS_A2_A3  # the default stays A2/A3
    assert _rules(A5_LESS).target is A5_LESS


def test_deriving_checks_the_difference() -> None:
    with pytest.raises(SpecError, match="are not pairs of Atlas A2"):
        derive_target(ATLAS_A2_A3, name="x", label="x", removed={(CoreType.AIC, Pipe.FIX, Pipe.MTE2)})
    with pytest.raises(SpecError, match="added and removed"):
        derive_target(ATLAS_A2_A3, name="x", label="x", added={REMOVED}, removed={REMOVED})


# -- (a) a removed pair -------------------------------------------------------------------------------
def _uses_removed_pair(rules: EventIdRules) -> Simulator:
    sim = Simulator(rules)
    sim.cube().set_flag("MTE1", "MTE3", 0)
    sim.cube().wait_flag("MTE1", "MTE3", 0)
    return sim


def test_simulator_refuses_a_removed_pair_on_a5_and_accepts_it_on_a2() -> None:
    messages = [d.message for d in _uses_removed_pair(_rules(A5_LESS)).run().diagnoses.of(Kind.ILLEGAL_PAIR)]
    assert messages, "the removed pair was accepted"
    assert "MTE1→MTE3 is not a flag pair on the AIC core of Ascend 950 (A5)" in messages[0]
    assert "(removed on this generation; Atlas A2 has it)" in messages[0]
    assert _uses_removed_pair(_rules()).explore().ok
    assert _uses_removed_pair(_rules(ASCEND_950)).explore().ok  # the repository's 950 removes nothing


def test_prove_refuses_a_removed_pair_on_a5_and_accepts_it_on_a2() -> None:
    report = _uses_removed_pair(_rules(A5_LESS)).prove()
    assert not report.ok and FindingKind.ILLEGAL_FLAG in report.kinds(), str(report)
    assert "MTE1→MTE3" in report.first(FindingKind.ILLEGAL_FLAG).message
    assert "Ascend 950 (A5)" in report.first(FindingKind.ILLEGAL_FLAG).message
    clean = _uses_removed_pair(_rules()).prove()
    assert clean.ok and clean.exhaustive, str(clean)


def test_flag_pipeline_refuses_a_removed_pair_on_a5_and_accepts_it_on_a2() -> None:
    a5 = _rules(A5_LESS)
    with pytest.raises(SpecError, match=r"MTE1→MTE3 is not a flag pair on the AIC core of Ascend 950 \(A5\)"):
        flag_pipeline(AscendCBuilder(rules=a5), "l1_out", stages=1, producer="MTE1", consumer="MTE3",
                      ids=EventIdAllocator(a5))  # fmt: skip
    a2 = _rules()
    flag_pipeline(AscendCBuilder(rules=a2), "l1_out", stages=1, producer="MTE1", consumer="MTE3",
                  ids=EventIdAllocator(a2))  # fmt: skip


def test_the_950s_added_pair_is_still_legal_there() -> None:
    sim = Simulator(_rules(ASCEND_950))
    sim.cube().set_flag("FIX", "MTE2", 0)
    sim.cube().wait_flag("FIX", "MTE2", 0)
    assert sim.explore().ok


# -- (b) same-pipe ordering from the target ---------------------------------------------------------------
def _two_vector_ops(rules: EventIdRules, **options) -> Simulator:
    """GM → UB, two dependent V ops with no pipe_barrier(PIPE_V) between them, UB → GM."""
    sim = Simulator(rules, vector_cores=1, **options)
    x = np.arange(8, dtype=np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", (8,), np.float32)
    sim.expect(gy, 4 * x)
    vec = sim.vector(0)
    a, b, c = (vec.buffer(n, Space.UB, (8,), np.float32) for n in "abc")
    vec.copy(gx, a)
    vec.pipe_barrier("ALL")
    vec.vector("muls", b, a, 2.0)
    vec.vector("muls", c, b, 2.0)  # relies on V running its own instructions in order
    vec.pipe_barrier("ALL")
    vec.copy(c, gy)
    return sim


def test_same_pipe_order_is_not_flagged_where_the_target_runs_the_pipe_in_order() -> None:
    sim = _two_vector_ops(_rules(A5_V_IN_ORDER))
    assert Pipe.V not in sim.overlap
    assert sim.explore().ok
    report = sim.prove()
    assert report.ok and report.exhaustive, str(report)


def test_same_pipe_order_is_flagged_where_the_target_overlaps_the_pipe() -> None:
    for target in (None, ASCEND_950):  # A2/A3, and the repository's 950: V may overlap
        sim = _two_vector_ops(_rules(target))
        hazards = [d.message for d in sim.explore().diagnoses.of(Kind.DATA_HAZARD)]
        assert any("same pipe: add pipe_barrier(PIPE_V)" in m for m in hazards), hazards
        assert FindingKind.READ_UNCOMMITTED in sim.prove().kinds()


def test_an_explicit_overlap_still_overrides_the_target() -> None:
    sim = _two_vector_ops(_rules(A5_V_IN_ORDER), overlap={Pipe.V})
    assert any(d.kind is Kind.DATA_HAZARD for d in sim.explore().diagnoses)
    assert _two_vector_ops(_rules(), overlap=()).explore().ok


# -- (c) capacity from the target -------------------------------------------------------------------------
SMALL_COUNTER = derive_target(ATLAS_A2_A3, name="small", label="two-count part", cross_core_capacity=2)


def _cube_runs_ahead(rules: EventIdRules, sets: int) -> Simulator:
    sim = Simulator(rules)
    for _ in range(sets):
        sim.cube().set_cross_flag("FIX", 0)
    for vec in sim.vector_programs:
        for _ in range(sets):
            vec.wait_cross_flag("MTE2", 0)
    return sim


def test_cross_core_capacity_comes_from_the_target() -> None:
    assert EventIdRules().cross_core_capacity == 15
    rules = _rules(SMALL_COUNTER)
    assert rules.cross_core_capacity == 2 and Simulator(rules).cross_core_capacity == 2
    assert _cube_runs_ahead(rules, 2).explore().ok
    assert not _cube_runs_ahead(rules, 3).explore().ok
    assert _cube_runs_ahead(_rules(), 3).explore().ok  # A2/A3 counts 15
    assert FindingKind.COUNTER_OVERFLOW in _cube_runs_ahead(rules, 3).prove().kinds()
    assert _rules(SMALL_COUNTER, cross_core_capacity=1).cross_core_capacity == 1  # the binary reading still
    with pytest.raises(EventIdError, match=r"allowed an int in \[1, 2\].*two-count part"):
        _rules(SMALL_COUNTER, cross_core_capacity=3)
