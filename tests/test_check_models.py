"""Unit tests of the checker's models: mbarrier, binary flag, bulk store engine, happens-before cells."""

import pytest

from pipes.check import barrier as mb
from pipes.check import bulk
from pipes.check import memory as mem

K = mem.EMPTY_KNOWLEDGE


# -- mbarrier ---------------------------------------------------------------------------------------
def test_fresh_barrier_lets_parity_1_through_and_holds_parity_0():
    bar = mb.BarrierState.fresh(2)
    assert bar.completed == 0 and bar.pending == 2
    assert mb.passes(bar, 1)
    assert not mb.passes(bar, 0)


def test_phase_completes_after_expected_arrivals_and_resets():
    bar = mb.BarrierState.fresh(3)
    bar = mb.arrive(bar, 2, K)
    assert (bar.completed, bar.pending) == (0, 1)
    assert not mb.passes(bar, 0)
    bar = mb.arrive(bar, 1, K)
    assert (bar.completed, bar.pending) == (1, 3)
    assert mb.passes(bar, 0) and not mb.passes(bar, 1)
    for _ in range(3):
        bar = mb.arrive(bar, 1, K)
    assert bar.completed == 2
    assert mb.passes(bar, 1) and not mb.passes(bar, 0)


def test_single_arrive_larger_than_pending_is_an_over_arrival():
    bar = mb.arrive(mb.BarrierState.fresh(4), 3, K)
    with pytest.raises(mb.OverArrival, match="2 arrivals with only 1 of 4 pending"):
        mb.arrive(bar, 2, K)


def test_arrival_into_a_completed_phase_is_reported_with_expected_and_got():
    bar = mb.arrive(mb.BarrierState.fresh(128), 128, K)  # phase #0 done by the first warpgroup
    kind, message = mb.arrival_problem(bar, 0, 128)  # the second warpgroup also means phase #0
    assert kind == "OVER_ARRIVAL"
    assert "expected 128, got 256" in message and "phase #1" in message
    assert mb.arrival_problem(bar, 1, 128) is None
    # A kernel may number its rounds its own way (per slot, per logical round): a fresh phase takes any later one.
    assert mb.arrival_problem(bar, 3, 128) is None


def test_aliasing_is_judged_on_the_rounds_a_phase_carries_not_on_the_phase_count():
    bar = mb.arrive(mb.BarrierState.fresh(2), 1, K, completion=4, who="a")  # round 4 opens phase #0
    assert mb.arrival_problem(bar, 4, 1) is None
    kind, message = mb.arrival_problem(bar, 6, 1, "b's arrivals")
    assert kind == "PHASE_ALIASING"
    assert "phase #0 mixes two rounds: it holds arrivals for completion #4" in message
    assert "the b's arrivals are a full round ahead" in message
    done = mb.arrive(bar, 1, K, completion=4, who="b")
    assert (done.completed, done.done_round) == (1, 4)
    assert mb.stale_pass_problem(done, 0, 4) is None  # a wait for round 4 passes on the phase that carried it
    assert "the stale completion #4" in mb.stale_pass_problem(done, 0, 6)
    assert mb.late_wait_problem(done, 1, 6) is None  # round 6 comes later: it blocks, rightly
    assert "already completion #4" in mb.late_wait_problem(done, 1, 2)
    kind, message = mb.arrival_problem(done, 4, 1)  # a third arrival for round 4: too many
    assert kind == "OVER_ARRIVAL" and "expected 2, got 3" in message


def test_transaction_bytes_hold_the_phase_until_delivered():
    bar = mb.arrive(mb.BarrierState.fresh(1), 1, K, expect_tx=4096)
    assert bar.completed == 0 and bar.tx == 4096
    assert "4096 transaction bytes outstanding" in mb.status(bar)
    bar = mb.complete_tx(bar, 1024, K)
    assert bar.completed == 0
    bar = mb.complete_tx(bar, 3072, K)
    assert bar.completed == 1 and bar.tx == 0


def test_bytes_delivered_before_the_arrival_still_complete_the_phase():
    bar = mb.complete_tx(mb.BarrierState.fresh(1), 512, K)
    assert bar.tx == -512 and bar.completed == 0
    bar = mb.arrive(bar, 1, K, expect_tx=512)
    assert bar.completed == 1


def test_stale_pass_and_late_waiter_are_phase_aliasing():
    fresh = mb.BarrierState.fresh(1)
    # A consumer (completion #0) started at phase 1 would pass on the fresh barrier's virtual phase.
    assert "virtual completion #-1" in mb.stale_pass_problem(fresh, 1, 0)
    # The producer's first acquire (completion #-1, parity 1) is exactly what the fresh barrier offers.
    assert mb.stale_pass_problem(fresh, 1, -1) is None
    one = mb.arrive(fresh, 1, K)
    assert mb.stale_pass_problem(one, 0, 0) is None
    three = mb.arrive(mb.arrive(one, 1, K), 1, K)
    assert "stale completion #2" in mb.stale_pass_problem(three, 0, 4)
    late = mb.late_wait_problem(mb.arrive(one, 1, K), 0, 0)
    assert "latest completed phase #1 is already completion #1" in late
    assert mb.late_wait_problem(one, 0, 0) is None
    first = mb.late_wait_problem(one, 1, -1)  # the producer's free first pass, after an arrival came first
    assert "free first pass (completion #-1, parity 1), but phase #0 has already completed (before this wait)" in first


def test_parity_hint_names_the_start_phase_when_parity_and_completion_disagree():
    assert "start phase" in mb.parity_hint(0, -1)
    assert mb.parity_hint(1, -1) == ""


def test_barrier_publishes_the_arrivers_knowledge_when_the_phase_completes():
    a = (("x", 1, 0),)
    b = (("y", 2, 0),)
    bar = mb.arrive(mb.BarrierState.fresh(2), 1, a)
    assert bar.published == ()
    bar = mb.arrive(bar, 1, b)
    assert bar.published == (("x", 1, 0), ("y", 2, 0)) and bar.gathered == ()


# -- flags ------------------------------------------------------------------------------------------
def test_flag_set_wait_clear_and_double_set():
    flag = mb.FlagState.fresh()
    assert not mb.flag_ready(flag)
    flag = mb.set_flag(flag, (("x", 1, 0),))
    assert mb.flag_ready(flag) and flag.published == (("x", 1, 0),)
    with pytest.raises(mb.DoubleSet, match="already set"):
        mb.set_flag(flag, K)
    flag = mb.clear_flag(flag)
    assert not mb.flag_ready(flag)
    assert mb.flag_ready(mb.FlagState.fresh(True))


# -- happens-before cells ---------------------------------------------------------------------------
def names(mask):
    return ",".join(n for bit, n in enumerate(["P", "C"]) if mask >> bit & 1)


def test_join_takes_the_newer_version_or_unites_readers():
    assert mem.join((("a", 1, 0b01),), (("a", 1, 0b10),)) == (("a", 1, 0b11),)
    assert mem.join((("a", 2, 0),), (("a", 1, 0b10),)) == (("a", 2, 0),)
    assert mem.join((("b", 1, 0),), (("a", 3, 0),)) == (("a", 3, 0), ("b", 1, 0))
    assert mem.lookup((("a", 3, 1),), "a") == (3, 1) and mem.lookup(K, "a") == (0, 0)


def test_ordered_write_then_read_then_write():
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names)
    consumer = producer  # the consumer synchronised with the producer
    cell, consumer = mem.read("s", cell, consumer, 0b10, "C")
    assert cell.readers == 0b10 and mem.lookup(consumer, "s") == (1, 0b10)
    cell, producer = mem.write("s", cell, mem.join(producer, consumer), "v2", "P", names)
    assert cell.version == 2 and cell.value == "v2"


def test_read_without_synchronisation_is_uncommitted():
    cell, _ = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names)
    with pytest.raises(mem.Hazard) as err:
        mem.read("s", cell, K, 0b10, "C")
    assert err.value.kind == "READ_UNCOMMITTED"
    with pytest.raises(mem.Hazard, match="nothing has written") as err:
        mem.read("t", mem.UNWRITTEN, K, 0b10, "C")


def test_write_over_an_unreleased_read_is_an_overwrite():
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names)
    cell, _ = mem.read("s", cell, producer, 0b10, "C")
    with pytest.raises(mem.Hazard, match="read of write #1 by C") as err:
        mem.write("s", cell, producer, "v2", "P", names)
    assert err.value.kind == "OVERWRITE_UNRELEASED"


def test_read_after_the_data_it_waited_for_was_overwritten():
    cell, producer = mem.write("s", mem.UNWRITTEN, K, "v1", "P", names)
    consumer = producer
    cell, producer = mem.write("s", cell, producer, "v2", "P", names)
    with pytest.raises(mem.Hazard, match="already overwrote") as err:
        mem.read("s", cell, consumer, 0b10, "C")
    assert err.value.kind == "OVERWRITE_UNRELEASED"


# -- bulk store engine ------------------------------------------------------------------------------
def _fire_log():
    log = []

    def read_source(store):
        log.append(("read", store.src))
        return f"value of {store.src}", store.knowledge + ((store.src, 1, 0b100),)

    def write_destination(store):
        log.append(("write", store.dst))
        return store.knowledge + ((store.dst, 1, 0),)

    return log, read_source, write_destination


def test_wait_group_covers_all_but_the_newest_groups():
    engine = bulk.IDLE
    for tile in range(3):
        engine = bulk.issue(engine, tile, f"slot{tile}", f"C{tile}", K)
        engine = bulk.commit_group(engine)
    log, read_source, write_destination = _fire_log()
    engine, learned = bulk.wait_group(engine, 1, False, read_source, write_destination)
    assert log == [("read", "slot0"), ("write", "C0"), ("read", "slot1"), ("write", "C1")]
    assert [s.dst for s in engine.stores] == ["C2"] and len(learned) == 2
    assert ("C1", 1, 0) in learned[1]


def test_wait_group_read_only_frees_the_source_but_not_the_global_write():
    engine = bulk.commit_group(bulk.issue(bulk.IDLE, 0, "slot0", "C0", K))
    log, read_source, write_destination = _fire_log()
    engine, _ = bulk.wait_group(engine, 0, True, read_source, write_destination)
    assert log == [("read", "slot0")]
    assert engine.stores[0].progress == bulk.SOURCE_READ
    assert "C0" in bulk.outstanding(engine)
    engine, _ = bulk.wait_group(engine, 0, False, read_source, write_destination)
    assert log[-1] == ("write", "C0") and bulk.outstanding(engine) is None


def test_uncommitted_store_belongs_to_no_group():
    engine = bulk.issue(bulk.IDLE, 0, "slot0", "C0", K)
    log, read_source, write_destination = _fire_log()
    engine, learned = bulk.wait_group(engine, 0, False, read_source, write_destination)
    assert log == [] and learned == []
    assert "never committed" in bulk.outstanding(engine)
