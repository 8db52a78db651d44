"""The arrival-count check before exploring, settled by the search: roles from everything an agent does (not its
first handle), no hang claimed that the search did not find, zero-trip loops and hand-written turns deferred."""

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.check import Agent, FindingKind, ModelBarrier, ModelPipeline, Protocol, check
from pipes.check.catalogue.pipelines import consumer_warpgroups
from pipes.state import CONSUMER_START_PHASE


def late_handle(tiles: int = 3) -> Protocol:
    """The storing agent consumes ``acc`` and reads a tile before it first touches its ``out`` producer handle."""
    acc = PipelineSpec("acc", 2, Role("mma", ArrivalUnit.THREAD), Role("epi", ArrivalUnit.THREAD))
    out = PipelineSpec("out", 2, Role("epi", ArrivalUnit.THREAD), Role("store", ArrivalUnit.THREAD))

    def mma(ctx):
        p = ctx.producer("acc")
        for t in range(tiles):
            slot = p.acquire()
            ctx.write("acc", slot, t)
            p.commit()
        p.tail()

    def epi(ctx):
        c, p = ctx.consumer("acc"), None
        for _ in range(tiles):
            slot = c.wait()
            value = ctx.read("acc", slot)
            c.release()
            p = p or ctx.producer("out")  # the handle, after the first data read
            o = p.acquire()
            ctx.write("out", o, value)
            p.commit()
        p.tail()

    def store(ctx):
        c = ctx.consumer("out")
        for t in range(tiles):
            slot = c.wait()
            assert ctx.read("out", slot) == t
            c.release()

    agents = [Agent("mma", mma), Agent("epi", epi), Agent("store", store)]
    return Protocol("late_handle", agents, [ModelPipeline(acc), ModelPipeline(out)])


def zero_trip() -> Protocol:
    """A producer and a consumer whose loops run zero times: nobody arrives on out.empty, and nobody waits."""
    spec = PipelineSpec("out", 2, Role("epi", ArrivalUnit.THREAD), Role("store", ArrivalUnit.THREAD))

    def epi(ctx):
        p = ctx.producer("out")
        for t in range(0):
            slot = p.acquire()
            ctx.write("out", slot, t)
            p.commit()
        p.tail()

    def store(ctx):
        c = ctx.consumer("out")
        for _ in range(0):
            slot = c.wait()
            ctx.read("out", slot)
            c.release()

    return Protocol("zero_trip", [Agent("epi", epi), Agent("store", store)], [ModelPipeline(spec)])


def raw_turns(tiles: int = 4, k_blocks: int = 2) -> Protocol:
    """Two math warpgroups consume alternate tiles of one mainloop (one declared unit per phase), taking turns
    by hand with ``ctx.wait``/``ctx.arrive`` on raw barriers turn[0], turn[1] instead of an ordered barrier."""
    spec = PipelineSpec(
        "mainloop",
        2,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("math", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES,
        16384,
    )

    def loads(ctx):
        p = ctx.producer("mainloop")
        for tile in range(tiles):
            for k in range(k_blocks):
                slot = p.acquire()
                ctx.load("mainloop", slot, (tile, k))
                p.commit()
        p.tail()

    def math(group: int):
        def run(ctx):
            ops = ctx.pipeline("mainloop")
            state = ops.make_state(CONSUMER_START_PHASE)
            if group:
                state.advance(group * k_blocks)
            for turn, tile in enumerate(range(group, tiles, 2)):
                if group or turn:  # group 0's first turn is free
                    ctx.wait(f"turn[{group}]", (turn - 1 + group) % 2)
                for k in range(k_blocks):
                    ops.consumer_wait(state)
                    assert ctx.read("mainloop", state.index) == (tile, k)
                    ops.consumer_release(state)
                    state.advance()
                ctx.arrive(f"turn[{1 - group}]")
                state.advance(k_blocks)

        return run

    agents = [Agent("tma", loads), Agent("math0", math(0)), Agent("math1", math(1))]
    return Protocol("raw_turns", agents, [ModelPipeline(spec)], barriers=ModelBarrier.array("turn", 2, 1))


def declared_arrivers_short() -> Protocol:
    """A raw barrier declared with one arriver of the two that arrive: the search sees every phase complete."""

    def arriver(ctx):
        ctx.arrive("ready")

    def waiter(ctx):
        ctx.wait("ready", 0)

    agents = [Agent("a", arriver), Agent("b", arriver), Agent("w", waiter)]
    return Protocol("declared_short", agents, barriers=[ModelBarrier("ready", 2, arrivers=["a"])])


def test_a_handle_touched_after_a_data_read_still_counts_its_agent_as_producer():
    report = check(late_handle())
    assert report.exhaustive
    assert FindingKind.ARRIVAL_COUNT not in report.kinds(), str(report)
    assert report.ok and not report.findings, str(report)


def test_a_zero_trip_loop_is_no_hang():
    report = check(zero_trip())
    assert report.ok and not report.findings, str(report)


def test_hand_written_turns_on_raw_barriers_defer_to_the_search():
    report = check(raw_turns())
    assert report.exhaustive and report.ok, str(report)
    assert FindingKind.ARRIVAL_COUNT not in report.kinds()
    assert all(f.kind is FindingKind.STATIC_MISMATCH for f in report.findings)


def test_hand_written_turns_after_a_bounded_search_are_a_note():
    report = check(raw_turns(), max_states=100)
    assert not report.exhaustive and report.ok, str(report)
    note = report.first(FindingKind.STATIC_MISMATCH)
    assert note is not None and "take turns by hand on turn[0], turn[1]" in note.message
    assert "bounded at 100 states" in note.message and "hangs" not in note.message


def test_a_real_count_mismatch_is_an_error_and_the_search_shows_the_deadlock():
    report = check(consumer_warpgroups(declared=2, running=1))
    assert not report.ok
    assert report.findings[0].kind is FindingKind.ARRIVAL_COUNT
    assert "expected 256, got 128" in report.findings[0].message
    assert "waiter hangs" in report.findings[0].message
    assert FindingKind.DEADLOCK in report.kinds()


def test_two_warpgroups_declared_as_one_is_an_error_the_search_confirms():
    report = check(consumer_warpgroups(declared=1))
    assert report.findings[0].kind is FindingKind.ARRIVAL_COUNT
    assert "expected 128, got 256" in report.findings[0].message
    assert FindingKind.OVER_ARRIVAL in report.kinds()


def test_a_mismatch_the_exhaustive_search_contradicts_is_a_note_stating_both_facts():
    report = check(declared_arrivers_short())
    assert report.exhaustive and report.ok, str(report)
    assert [f.kind for f in report.findings] == [FindingKind.STATIC_MISMATCH]
    message = report.findings[0].message
    assert "expects 2 arrivals per phase" in message and "make 1 (expected 2, got 1)" in message
    assert "the search explored every interleaving" in message and "every phase completed" in message
    assert "waiter hangs" not in message


def test_a_bounded_search_words_a_shortfall_as_a_risk():
    report = check(consumer_warpgroups(declared=2, running=1, items=40), max_states=3)
    assert not report.exhaustive
    finding = report.first(FindingKind.ARRIVAL_COUNT)
    assert finding is not None and "a risk" in finding.message and "bounded at 3 states" in finding.message
    assert "no phase ever completes" not in finding.message
