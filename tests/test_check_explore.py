"""The checker's API: bounds, seeded random runs, replay, reduction, agent errors, declarations."""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, ProtocolError, Role, SpecError
from pipes.check import Agent, FindingKind, ModelBarrier, ModelOrder, ModelPipeline, Protocol, check, replay
from pipes.check.catalogue import GOOD, async_pipeline, handoff, ping_pong, tma_pipeline

SPEC = PipelineSpec("data", 2, Role("load"), Role("math", ArrivalUnit.WARP))


def protocol_of(*agents, spec=SPEC, **options):
    return Protocol("t", [Agent(name, fn) for name, fn in agents], [ModelPipeline(spec, **options)])


def correct_producer(items=3):
    def producer(ctx):
        p = ctx.producer("data")
        for item in range(items):
            slot = p.acquire()
            ctx.write("data", slot, item)
            p.commit()
        p.tail()

    return producer


def correct_consumer(items=3):
    def consumer(ctx):
        c = ctx.consumer("data")
        for _ in range(items):
            slot = c.wait()
            ctx.read("data", slot)
            c.release()

    return consumer


# -- bounds and random runs ---------------------------------------------------------------------------
def test_hitting_the_state_bound_is_not_exhaustive():
    full = check(ping_pong())
    bounded = check(ping_pong(), max_states=20)
    assert full.exhaustive and not bounded.exhaustive
    assert bounded.states == 20 < full.states
    assert "not a proof" in str(bounded)


def test_random_runs_are_reproducible_for_a_seed():
    first = check(ping_pong(stages=3, tiles=6), max_states=0, random_runs=30, seed=7)
    second = check(ping_pong(stages=3, tiles=6), max_states=0, random_runs=30, seed=7)
    other = check(ping_pong(stages=3, tiles=6), max_states=0, random_runs=30, seed=8)
    assert first.ok and first.states == second.states and first.transitions == second.transitions
    assert first.seed == 7 and "30 random runs (seed 7)" in str(first)
    assert other.states != first.states  # a different seed walks different interleavings


def test_random_runs_beyond_the_bound_find_a_deep_bug_reproducibly():
    bad = handoff(stages=3, tiles=6, notify_on="smem_read")
    first = check(bad, max_states=0, random_runs=20, seed=3)
    second = check(bad, max_states=0, random_runs=20, seed=3)
    assert FindingKind.READ_UNCOMMITTED in first.kinds()
    assert [f.schedule for f in first.findings] == [f.schedule for f in second.findings]
    finding = first.first(FindingKind.READ_UNCOMMITTED)
    assert replay(bad, finding.schedule).message == finding.message
    # Random schedules are cut down before they are reported: here to the breadth-first length.
    shortest = check(bad).first(FindingKind.READ_UNCOMMITTED)
    assert len(finding.schedule) <= len(shortest.schedule) + 2


# -- replay -------------------------------------------------------------------------------------------
def test_replay_of_a_complete_correct_schedule_finds_nothing():
    protocol = async_pipeline(1, items=2)
    # load: start, acquire+write, commit; math: start, wait+read, release; and again; then load's tail.
    schedule = ["load", "load", "load", "math", "math", "math", "load", "load", "math", "math", "load"]
    assert replay(protocol, schedule) is None


def test_replay_rejects_an_impossible_move():
    with pytest.raises(ProtocolError, match="move 2 of the schedule .'math'. is not possible"):
        replay(async_pipeline(1, items=2), ["math", "math"])


# -- reduction ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [lambda: handoff(3, 4), lambda: async_pipeline(2, bug="release_before_read")])
def test_one_move_per_operation_gives_the_same_verdict_with_more_states(build):
    reduced, plain = check(build()), check(build(), reduction=False)
    assert reduced.kinds() == plain.kinds()
    assert plain.states > reduced.states


# -- agent errors -------------------------------------------------------------------------------------
def test_an_agent_assertion_is_an_agent_error_with_its_message():
    def picky(ctx):
        c = ctx.consumer("data")
        slot = c.wait()
        assert ctx.read("data", slot) == 42, "expected the answer"
        c.release()

    report = check(protocol_of(("load", correct_producer(1)), ("math", picky)))
    finding = report.first(FindingKind.AGENT_ERROR)
    assert finding is not None and "expected the answer" in finding.message


def test_commit_before_acquire_is_a_protocol_error():
    def eager(ctx):
        ctx.producer("data").commit()

    report = check(protocol_of(("load", eager), ("math", correct_consumer(0))))
    assert "acquire before commit" in report.first(FindingKind.AGENT_ERROR).message


def test_release_before_wait_is_a_protocol_error():
    def early(ctx):
        ctx.consumer("data").release()

    report = check(protocol_of(("load", correct_producer(0)), ("math", early)))
    assert "wait before release" in report.first(FindingKind.AGENT_ERROR).message


def test_spinning_on_try_wait_hits_the_operation_limit():
    def spinner(ctx):
        c = ctx.consumer("data")
        while not c.try_wait():
            pass

    report = check(protocol_of(("load", correct_producer(0)), ("math", spinner)))
    assert "spin on try_wait" in report.first(FindingKind.AGENT_ERROR).message


def test_a_nondeterministic_agent_is_reported():
    calls = []

    def moody(ctx):
        calls.append(1)
        c = ctx.consumer("data")
        slot = c.wait()
        ctx.read("data", slot)
        if len(calls) % 2:
            c.release()
        else:
            ctx.read("data", slot)

    report = check(protocol_of(("load", correct_producer(1)), ("math", moody)))
    assert "not deterministic" in report.first(FindingKind.AGENT_ERROR).message


def test_producer_without_tail_leaves_store_notifications_pending():
    spec = PipelineSpec("out", 2, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)

    def epilogue(ctx):
        out = ctx.producer("out")
        slot = out.acquire()
        ctx.write("out", slot, 0)
        ctx.store("out", slot, 0)
        out.commit(0)

    report = check(protocol_of(("epi", epilogue), spec=spec, lag=1))
    message = report.first(FindingKind.UNBALANCED_EXIT).message
    assert "never notified committed slot(s) 0" in message and "tail()" in message


def test_bulk_store_without_wait_group_is_unbalanced_at_exit():
    def lonely(ctx):
        ctx.write("data", 0, 1)
        ctx.store("data", 0, "C")
        ctx.bulk_commit_group()

    report = check(protocol_of(("load", lonely)))
    assert "wait_group.read 0" in report.first(FindingKind.UNBALANCED_EXIT).message


def test_raw_barrier_partial_phase_is_unbalanced_at_exit():
    def half(ctx):
        ctx.arrive("sync", 1)

    report = check(Protocol("raw", [Agent("a", half)], barriers=[ModelBarrier("sync", 2)]))
    assert "sync ends mid-phase: 0 phase(s) completed; phase #0 has 1 of 2 arrivals" in report.findings[0].message


def test_tma_load_bytes_landing_in_a_completed_phase_is_over_arrival():
    spec = PipelineSpec("smem", 1, Role("tma"), Role("math"), Completion.TRANSACTION_BYTES, 64)

    def double_load(ctx):
        p = ctx.producer("smem")
        p.acquire()
        ctx.load("smem", 0, "a")
        ctx.load("smem", 0, "b")
        p.commit()

    report = check(protocol_of(("tma", double_load), spec=spec), max_findings=20)
    assert FindingKind.OVER_ARRIVAL in report.kinds() or FindingKind.OVERWRITE_UNRELEASED in report.kinds()


# -- declarations ----------------------------------------------------------------------------------------
def test_model_pipeline_options_are_validated():
    store = PipelineSpec("out", 3, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)
    with pytest.raises(SpecError, match=r"lag = 3 is invalid: allowed an int in \[0, stages - 1\] = \[0, 2\]"):
        ModelPipeline(store, lag=3)
    with pytest.raises(SpecError, match="lag = 1 is invalid: allowed None unless completion is STORE_COMPLETE"):
        ModelPipeline(SPEC, lag=1)
    with pytest.raises(SpecError, match="notify_on = 'never'"):
        ModelPipeline(store, notify_on="never")
    assert ModelPipeline(store).store_lag == 2


def test_protocol_declarations_are_validated():
    agent = Agent("a", lambda ctx: None)
    with pytest.raises(SpecError, match="distinct agent names"):
        Protocol("p", [agent, agent])
    with pytest.raises(SpecError, match="at least one Agent"):
        Protocol("p", [])
    with pytest.raises(SpecError, match="distinct names"):
        Protocol("p", [agent], [ModelPipeline(SPEC)], barriers=[ModelBarrier("data", 1)])
    with pytest.raises(SpecError, match="groups = 1 is invalid"):
        ModelOrder("o", 1)
    with pytest.raises(SpecError, match="Agent.name = 'not a name'"):
        Agent("not a name", lambda ctx: None)


def test_unknown_names_and_slots_are_agent_errors_naming_what_exists():
    def lost(ctx):
        ctx.producer("nope")

    def off_by_one(ctx):
        ctx.write("data", 2, 0)

    assert "declared: ['data']" in check(protocol_of(("a", lost))).findings[0].message
    assert (
        "slot 2 of pipeline 'data' is invalid: allowed [0, 1]"
        in check(protocol_of(("a", off_by_one))).findings[0].message
    )


def test_load_needs_a_transaction_bytes_pipeline():
    def wrong(ctx):
        ctx.load("data", 0, 1)

    assert "needs a TRANSACTION_BYTES pipeline" in check(protocol_of(("a", wrong))).findings[0].message


def test_two_producer_warps_fill_their_own_parts_of_a_slot():
    spec = PipelineSpec("data", 2, Role("load", ArrivalUnit.WARP, count=2), Role("math", ArrivalUnit.WARP))

    def half(part):
        def producer(ctx):
            p = ctx.producer("data")
            for item in range(3):
                slot = p.acquire()
                ctx.write("data", slot, item, part=part)
                p.commit()
            p.tail()

        return producer

    def consumer(ctx):
        c = ctx.consumer("data")
        for item in range(3):
            slot = c.wait()
            assert (ctx.read("data", slot, part=0), ctx.read("data", slot, part=1)) == (item, item)
            c.release()

    report = check(protocol_of(("w0", half(0)), ("w1", half(1)), ("math", consumer), spec=spec))
    assert report.ok, str(report)


def test_exhaustive_large_tma_pipeline_stays_clean():
    assert check(tma_pipeline(3, items=9)).ok


# -- phase aliasing and ordered barriers ------------------------------------------------------------------
def test_a_consumer_whose_phase_never_flips_passes_on_a_stale_phase():
    def frozen(ctx):
        ops = ctx.pipeline("data")
        state = ops.make_state(0)
        for _ in range(3):
            ops.consumer_wait(state)
            ctx.read("data", state.index)
            ops.consumer_release(state)
            phase = state.phase
            state.advance()
            state.phase = phase  # the bug: the parity is a loop-invariant constant

    spec = PipelineSpec("data", 1, Role("load"), Role("math", ArrivalUnit.WARP))
    finding = check(protocol_of(("load", correct_producer()), ("math", frozen), spec=spec)).findings[0]
    assert finding.kind is FindingKind.PHASE_ALIASING
    assert "data.full[0]" in finding.message and "completion #1" in finding.message
    assert "stale completion #0" in finding.message


def sections(depth, rounds=2):
    def group(g):
        def run(ctx):
            turn = ctx.order("order", g)
            for r in range(rounds):
                for s in range(depth):
                    turn.wait()
                    ctx.write_global(("section", s), (g, r))
                    turn.arrive()

        return run

    return group


@pytest.mark.parametrize("depth", [1, 2])
def test_ordered_sections_serialise_the_groups(depth):
    group = sections(depth)
    protocol = Protocol(
        "order", [Agent(f"g{g}", group(g)) for g in range(3)], orders=[ModelOrder("order", 3, depth=depth)]
    )
    report = check(protocol)
    assert report.ok and report.exhaustive, str(report)


def test_ordered_sections_without_the_barrier_race():
    def free(g):
        def run(ctx):
            for r in range(2):
                ctx.write_global(("section", 0), (g, r))

        return run

    report = check(Protocol("free", [Agent(f"g{g}", free(g)) for g in range(2)]))
    assert report.first(FindingKind.OVERWRITE_UNRELEASED) is not None


@pytest.mark.parametrize("depth", [1, 2])
def test_an_ordered_barrier_with_a_constant_phase_is_caught(depth):
    group = sections(depth)
    order = ModelOrder("order", 2, depth=depth, phase_flips=False)
    report = check(Protocol("order", [Agent(f"g{g}", group(g)) for g in range(2)], orders=[order]))
    assert report.findings[0].kind in (FindingKind.PHASE_ALIASING, FindingKind.DEADLOCK)
    assert "order[" in report.findings[0].message


def test_unhashable_values_are_an_agent_error_not_a_checker_crash():
    def listy(ctx):
        p = ctx.producer("data")
        slot = p.acquire()
        ctx.write("data", slot, [1, 2])
        p.commit()

    message = check(protocol_of(("load", listy))).first(FindingKind.AGENT_ERROR).message
    assert "is not hashable: use a tuple" in message


# -- the search's key -----------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", GOOD, ids=lambda e: e.name)
def test_two_worlds_share_a_search_key_exactly_when_they_are_equal(entry):
    """Machine.key compares the interned parts of a world by identity: over the worlds breadth-first search
    reaches (up to 3,000 of each protocol), equal keys must mean equal worlds and unequal keys unequal
    worlds — else the search would merge different states or count one state twice."""
    from collections import deque

    from pipes.check.machine import Machine

    machine = Machine(entry.build(), symmetry=False)
    start = machine.initial()
    keys = {start: machine.key(start)}
    queue = deque([start])
    while queue and len(keys) < 3_000:
        world = queue.popleft()
        labels, problem = machine.moves(world)
        for label in labels if problem is None else []:
            following = machine.step(world, label).world
            if following is None:
                continue
            if following in keys:  # an equal world reached again, along another schedule: the same key
                assert machine.key(following) == keys[following], f"one world, two keys, after {label}"
            else:
                keys[following] = machine.key(following)
                queue.append(following)
    assert len(keys) > 1
    assert len(set(keys.values())) == len(keys), "two different worlds got one key"
