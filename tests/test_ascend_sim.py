"""The simulator's diagnoses, each provoked by a planted bug, and its execution model."""

from __future__ import annotations

import numpy as np
import pytest

from pipes.ascend import EventIdAllocator, EventIdRules, Generation, Keying, Space, flag_pipeline, primed, serial
from pipes.ascend.sim import DelayPipe, Kind, ProgramOrder, RushPipe, Severity, Simulator
from pipes.ascend.sim.schedule import default_schedules


def _sim(**kw) -> Simulator:
    kw.setdefault("rules", EventIdRules(framework_preset=False))
    rules = kw.pop("rules")
    return Simulator(rules, **kw)


def _only(report, kind: Kind) -> str:
    found = report.of(kind) if hasattr(report, "of") else report.diagnoses.of(kind)
    assert found, f"expected {kind}, got:\n{report}"
    return found[0].message


def test_deadlock_names_each_blocked_pipe_and_the_cycle() -> None:
    sim = _sim()
    aic = sim.cube()
    aic.wait_flag("MTE1", "MTE2", 0)  # acquire without a prime
    aic.set_flag("MTE2", "MTE1", 0)
    aic.wait_flag("MTE2", "MTE1", 0)
    aic.set_flag("MTE1", "MTE2", 0)
    result = sim.run()
    assert not result.completed
    message = _only(result, Kind.DEADLOCK)
    assert "aic/MTE2 waits at aic MTE2 #0 wait_flag(MTE1→MTE2, id 0)" in message
    assert "its set is aic MTE1 #3 set_flag(MTE1→MTE2, id 0), queued on aic/MTE1 behind aic MTE1 #2" in message
    assert "wait cycle: aic/MTE1 → aic/MTE2 → aic/MTE1" in message


def test_unmatched_wait_counts_sets_and_waits() -> None:
    sim = _sim()
    vec = sim.vector(0)
    vec.set_flag("MTE2", "V", 1)
    vec.wait_flag("MTE2", "V", 1)
    vec.wait_flag("MTE2", "V", 1)  # an extra drain
    message = _only(sim.run(), Kind.UNMATCHED_WAIT)
    assert "aiv0 V #2 wait_flag(MTE2→V, id 1)" in message
    assert "the program has 1 set(s) and 2 wait(s) of this flag" in message


def test_double_set_names_both_sets() -> None:
    sim = _sim()
    vec = sim.vector(0)
    vec.loop(2, lambda i: vec.set_flag("V", "MTE3", 2))
    vec.wait_flag("V", "MTE3", 2)
    result = sim.run()
    message = _only(result, Kind.DOUBLE_SET)
    assert "aiv0 V #1 set_flag(V→MTE3, id 2), iteration 1 sets a flag that is already set" in message
    assert "still set by aiv0 V #0 set_flag(V→MTE3, id 2), iteration 0" in message
    assert result.completed


def test_flag_left_set_at_exit() -> None:
    sim = _sim()
    sim.cube().set_flag("FIX", "M", 3)
    message = _only(sim.run(), Kind.FLAG_LEFT_SET)
    assert "set_flag(FIX→M, id 3) by aic FIX #0" in message and "1 set(s) and 0 wait(s)" in message


def test_framework_preset_flags() -> None:
    sim = _sim(rules=EventIdRules())  # the framework pipe object pre-set M→MTE1 ids 0-2
    aic = sim.cube()
    aic.set_flag("M", "MTE1", 1)  # a prime on top of the pre-set
    aic.wait_flag("M", "MTE1", 1)
    aic.wait_flag("M", "MTE1", 0)  # consumes the pre-set and never restores it
    result = sim.run()
    assert "the framework pipe object pre-set it at kernel start" in _only(result, Kind.DOUBLE_SET)
    framework = _only(result, Kind.FRAMEWORK_FLAG)
    assert "M→MTE1 id" in framework and "teardown wait on it hangs" in framework
    assert len(result.diagnoses.of(Kind.FRAMEWORK_FLAG)) == 2  # ids 0 and 1 are both gone at exit


def test_ids_out_of_range_and_reserved() -> None:
    sim = _sim()
    vec = sim.vector(0)
    vec.set_flag("MTE2", "V", 8)
    vec.wait_flag("MTE2", "V", 8)
    vec.set_flag("MTE2", "V", 7)
    vec.wait_flag("MTE2", "V", 7)
    vec.set_cross_flag("MTE3", 16)
    vec.set_cross_flag("MTE3", 12)
    result = sim.run()
    out_of_range = [d.message for d in result.diagnoses.of(Kind.ID_OUT_OF_RANGE)]
    reserved = [d.message for d in result.diagnoses.of(Kind.ID_RESERVED)]
    assert any("event id 8 is out of range: Atlas A2 has ids 0–7" in m for m in out_of_range)
    assert any("cross-core flag id 16 is out of range" in m for m in out_of_range)
    assert any("event id 7 is reserved (framework automatic sync)" in m for m in reserved)
    assert any("cross-core flag id 12 is reserved (all-core sync)" in m for m in reserved)
    assert all(d.severity is Severity.WARNING for d in result.diagnoses.of(Kind.ID_RESERVED))
    assert all(d.severity is Severity.ERROR for d in result.diagnoses.of(Kind.ID_OUT_OF_RANGE))


def test_first_generation_has_four_ids() -> None:
    sim = _sim(rules=EventIdRules(generation=Generation.FIRST_GEN))
    sim.vector(0).set_flag("V", "MTE3", 4)
    sim.vector(0).wait_flag("V", "MTE3", 4)
    assert "first-generation training part has ids 0–3" in _only(sim.run(), Kind.ID_OUT_OF_RANGE)


def test_illegal_pairs() -> None:
    sim = _sim()
    sim.cube().set_flag("FIX", "MTE2", 0)
    sim.vector(0).set_flag("V", "MTE1", 0)
    messages = [d.message for d in sim.run().diagnoses.of(Kind.ILLEGAL_PAIR)]
    legal = "FIX→MTE2 is not a flag pair on the AIC core of Atlas A2; FIX may signal {MTE1, M}"
    assert any(legal in m for m in messages)
    assert any("pipe MTE1 does not exist on the AIV core" in m for m in messages)


def _shared_source(sim: Simulator) -> None:
    aic = sim.cube()
    aic.set_flag("MTE1", "MTE2", 0)
    aic.set_flag("MTE1", "M", 0)
    aic.wait_flag("MTE1", "M", 0)
    aic.wait_flag("MTE1", "MTE2", 0)


def test_shared_source_id_is_a_warning_and_source_keying_shows_the_collision() -> None:
    sim = _sim(rules=EventIdRules(framework_preset=False, keying=Keying.PIPE_PAIR))
    _shared_source(sim)
    result = sim.run()
    warning = result.diagnoses.of(Kind.SHARED_SOURCE_ID)[0]
    assert warning.severity is Severity.WARNING and result.ok
    assert "source pipe MTE1 sets id 0 toward more than one pipe (MTE1→MTE2, MTE1→M)" in warning.message
    keyed = _sim()  # the default reading keys flags by (source pipe, id)
    _shared_source(keyed)
    result = keyed.run()
    assert {Kind.DOUBLE_SET, Kind.UNMATCHED_WAIT} <= result.kinds()
    double = result.diagnoses.of(Kind.DOUBLE_SET)[0].message
    assert "MTE1→M and MTE1→MTE2 with id 0 are one flag when flags are keyed by (source pipe, id)" in double
    unmatched = result.diagnoses.of(Kind.UNMATCHED_WAIT)[0].message
    assert "the program has 2 set(s) and 2 wait(s) of this flag; 1 set(s) merged into one still pending" in unmatched
    assert "so 1 signal(s) fewer arrived than were set" in unmatched


def test_one_keying_default_for_the_allocator_and_the_simulator() -> None:
    from pipes.ascend.events import DEFAULT_KEYING

    assert EventIdRules().keying is DEFAULT_KEYING is Keying.SOURCE_PIPE
    assert Simulator().keying is DEFAULT_KEYING
    assert Simulator(EventIdRules(keying=Keying.PIPE_PAIR)).keying is Keying.PIPE_PAIR
    overridden = Simulator(flag_keying=Keying.PIPE_PAIR)  # an override is folded into the one place
    assert overridden.rules.keying is Keying.PIPE_PAIR


def _vector_copy(sim: Simulator, *, wait: bool, release_early: bool = False, iters: int = 3) -> None:
    """GM x → UB (MTE2) → ×2 (V) → UB → GM y (MTE3), one stage in and out, with optional planted bugs."""
    x = np.arange(iters * 8, dtype=np.float32).reshape(iters, 8)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", x.shape, np.float32)
    sim.expect(gy, 2 * x)
    vec = sim.vector(0)
    ub_in, ub_out = vec.buffer("ub_in", Space.UB, (8,), np.float32), vec.buffer("ub_out", Space.UB, (8,), np.float32)
    ids = EventIdAllocator(sim.rules)
    load = flag_pipeline(vec, "ub_in", stages=1, producer="MTE2", consumer="V", ids=ids)
    store = flag_pipeline(vec, "ub_out", stages=1, producer="V", consumer="MTE3", ids=ids)
    put, take = load.producer(), load.consumer()
    make, ship = store.producer(), store.consumer()

    def body(i):
        put.acquire()
        vec.copy(gx[i], ub_in)
        put.commit()
        if wait:
            take.wait()
        make.acquire()
        if release_early:
            take.release()
        vec.vector("muls", ub_out, ub_in, 2.0)
        if not release_early:
            take.release()
        make.commit()
        ship.wait()
        vec.copy(ub_out, gy[i])
        ship.release()

    with primed(load, store):
        serial(vec, iters, body, load, store)


def test_correct_vector_pipeline_is_clean_under_every_schedule() -> None:
    sim = _sim(vector_cores=1)
    _vector_copy(sim, wait=True)
    report = sim.explore()
    assert report.ok and not len(report.diagnoses), report.text()


def test_missing_wait_is_a_read_after_write_hazard_and_a_wrong_result() -> None:
    sim = _sim(vector_cores=1)
    _vector_copy(sim, wait=False)
    report = sim.explore()
    hazard = _only(report, Kind.DATA_HAZARD)
    assert hazard.startswith("RAW on ub_in: aiv0/V reads ub_in before aiv0/MTE2 finished writing it")
    assert "a flag is missing or misplaced" in hazard
    wrong = report.of(Kind.WRONG_RESULT)[0]
    assert "element(s) NaN (never written or read uninitialized on-chip memory)" in wrong.message


def test_release_before_the_read_is_a_write_after_read_hazard() -> None:
    sim = _sim(vector_cores=1)
    _vector_copy(sim, wait=True, release_early=True)
    hazard = _only(sim.explore(), Kind.DATA_HAZARD)
    assert "WAR on ub_in" in hazard and "aiv0/MTE2 overw" in hazard


def _two_vector_ops(sim: Simulator, *, barrier_pipeline: bool) -> None:
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", x.shape, np.float32)
    sim.expect(gy, np.exp(2 * x), rtol=1e-5, atol=1e-6)
    vec = sim.vector(0)
    a, b, c = (vec.buffer(n, Space.UB, (16,), np.float32) for n in ("a", "b", "c"))
    ids = EventIdAllocator(sim.rules)
    with primed(
        load := flag_pipeline(vec, "load", stages=1, producer="MTE2", consumer="V", ids=ids),
        store := flag_pipeline(vec, "store", stages=1, producer="V", consumer="MTE3", ids=ids),
        chain := flag_pipeline(vec, "chain", stages=1, producer="V", consumer="V", ids=ids),
    ):
        put, take, make, ship = load.producer(), load.consumer(), store.producer(), store.consumer()
        step_out, step_in = chain.producer(), chain.consumer()
        put.acquire()
        vec.copy(gx, a)
        put.commit()
        take.wait()
        step_out.acquire()
        vec.vector("muls", b, a, 2.0)
        if barrier_pipeline:
            step_out.commit()
            step_in.wait()
        make.acquire()
        vec.vector("exp", c, b)
        if barrier_pipeline:
            step_in.release()
        take.release()  # after both ops: a set_flag on V would itself order them
        make.commit()
        ship.wait()
        vec.copy(c, gy)
        ship.release()


def test_same_pipe_dependency_needs_a_barrier_and_the_same_pipe_pipeline_emits_it() -> None:
    sim = _sim(vector_cores=1)
    _two_vector_ops(sim, barrier_pipeline=False)
    report = sim.explore()
    assert "RAW on b: aiv0/V reads b before aiv0/V finished writing it" in _only(report, Kind.DATA_HAZARD)
    assert "same pipe: add pipe_barrier(PIPE_V)" in _only(report, Kind.DATA_HAZARD)
    fixed = _sim(vector_cores=1)
    _two_vector_ops(fixed, barrier_pipeline=True)
    assert fixed.explore().ok


def test_wrong_result_reports_where_and_how_much() -> None:
    sim = _sim(vector_cores=1)
    x = np.ones(4, dtype=np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", (4,), np.float32)
    sim.expect(gy, 3 * x)
    vec = sim.vector(0)
    ub = vec.buffer("ub", Space.UB, (4,), np.float32)
    vec.copy(gx, ub)
    vec.set_flag("MTE2", "MTE3", 0)
    vec.wait_flag("MTE2", "MTE3", 0)
    vec.copy(ub, gy)
    message = _only(sim.run(), Kind.WRONG_RESULT)
    assert "y: 4 of 4 elements differ" in message and "got 1, expected 3" in message


def _run_ahead(sim: Simulator, sets: int = 2) -> None:
    for _ in range(sets):
        sim.cube().set_cross_flag("FIX", 0)  # the producer runs ahead of the vector cores' waits
    for vec in sim.vector_programs:
        for _ in range(sets):
            vec.wait_cross_flag("MTE2", 0)


def test_cross_core_flags_count_so_a_producer_may_run_ahead() -> None:
    sim = _sim()
    _run_ahead(sim, sets=3)
    report = sim.explore()
    assert report.ok and not len(report.diagnoses), report.text()


def test_binary_reading_loses_the_second_set_and_shows_the_hang_it_causes() -> None:
    sim = _sim(cross_core_capacity=1)
    _run_ahead(sim)
    assert sim.run(ProgramOrder()).ok  # the benign order happens to take each signal in time
    result = sim.run(RushPipe("FIX"))
    message = _only(result, Kind.LOST_SIGNAL)
    assert (
        "aic FIX #1 set_cross_flag(FIX, id 0) sets cross-core flag id 0 again before aiv0 took the previous" in message
    )
    assert "under the binary reading (cross_core_capacity=1)" in message
    # The model drops the set it reports lost, so its consequence shows: the second wait never returns.
    unmatched = _only(result, Kind.UNMATCHED_WAIT)
    assert "wait_cross_flag(MTE2, id 0)" in unmatched
    assert "1 set(s) of this id were lost because the counter was full — aic FIX #1" in unmatched
    assert Kind.DEADLOCK in result.kinds()


def test_cross_core_counter_overflow_drops_the_set() -> None:
    sim = _sim(vector_cores=1)
    for _ in range(16):
        sim.cube().set_cross_flag("FIX", 3)
    for _ in range(16):
        sim.vector(0).wait_cross_flag("MTE2", 3)
    result = sim.run(RushPipe("FIX"))
    overflow = _only(result, Kind.COUNTER_OVERFLOW)
    assert "aiv0's cross-core counter for id 3 already holds 15 untaken signals, the most it counts (15)" in overflow
    assert "lost because the counter was full" in _only(result, Kind.UNMATCHED_WAIT)


def test_untaken_cross_core_signals_at_exit_are_a_warning() -> None:
    sim = _sim(vector_cores=1)
    sim.vector(0).set_cross_flag("MTE2", 4)  # a primed free-slot credit the cube never takes
    result = sim.run()
    credit = result.diagnoses.of(Kind.CREDITS_LEFT)[0]
    assert credit.severity is Severity.WARNING and result.ok
    assert (
        "cross-core flag id 4 of aic holds 1 untaken signal(s) at exit, the first from aiv0 MTE2 #0" in credit.message
    )


def test_explicit_reserved_ids_are_warnings_out_of_range_ids_errors() -> None:
    sim = _sim(vector_cores=1)
    vec = sim.vector(0)
    vec.set_flag("MTE2", "V", 6)  # shipped hand-written kernels use 6
    vec.wait_flag("MTE2", "V", 6)
    result = sim.run()
    reserved = result.diagnoses.of(Kind.ID_RESERVED)[0]
    assert reserved.severity is Severity.WARNING and result.ok
    assert "event id 6 is reserved (reserved by convention): the allocator never hands it out" in reserved.message


def test_vector_sets_combine_before_the_cube_sees_one_signal() -> None:
    sim = _sim()
    sim.vector(0).set_cross_flag("MTE3", 5)
    sim.cube().wait_cross_flag("MTE2", 5)
    result = sim.run()  # only one of the two vector cores set: the cube never wakes
    assert Kind.DEADLOCK in result.kinds()
    sim2 = _sim()
    for vec in sim2.vector_programs:
        vec.set_cross_flag("MTE3", 5)
    sim2.cube().wait_cross_flag("MTE2", 5)
    assert sim2.run().ok


@pytest.mark.parametrize("wait_pipe", ["MTE2", "S", None])
def test_cross_core_wait_orders_every_later_instruction_of_the_core(wait_pipe: str | None) -> None:
    sim = _sim(vector_cores=1)
    src = sim.gm("src", np.full(4, 5.0, dtype=np.float32))
    ws = sim.gm_zeros("ws", (4,), np.float32)
    out = sim.gm_zeros("out", (4,), np.float32)
    sim.expect(out, np.full(4, 5.0, dtype=np.float32))
    aic, vec = sim.cube(), sim.vector(0)
    l1 = aic.buffer("l1", Space.L1, (4,), np.float32)
    ub = vec.buffer("ub", Space.UB, (4,), np.float32)
    aic.copy(src, l1)
    aic.set_flag("MTE2", "MTE3", 0)
    aic.wait_flag("MTE2", "MTE3", 0)
    aic.copy(l1, ws)  # the cube writes the workspace (MTE3), then signals
    aic.set_cross_flag("MTE3", 0)
    if wait_pipe is not None:
        vec.wait_cross_flag(wait_pipe, 0)  # on whichever pipe: it holds back the whole core
    vec.copy(ws, ub)
    vec.set_flag("MTE2", "MTE3", 0)
    vec.wait_flag("MTE2", "MTE3", 0)
    vec.copy(ub, out)
    report = sim.explore()
    if wait_pipe is None:
        assert "cross-core on ws" in _only(report, Kind.DATA_HAZARD)
        assert Kind.CREDITS_LEFT in report.kinds()  # the untaken signal: a warning
    else:
        assert report.ok, report.text()


def test_default_schedules_delay_and_rush_each_pipe() -> None:
    names = [s.name for s in default_schedules(["MTE2", "V"], seeds=2)]  # type: ignore[list-item]
    assert names == [
        "program-order",
        "random(seed=0)",
        "random(seed=1)",
        "delay(MTE2)",
        "delay(V)",
        "rush(MTE2)",
        "rush(V)",
    ]
    assert DelayPipe("fix").name == "delay(FIX)"
