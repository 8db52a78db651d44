"""pipes.check.comm: ready flags, step counters, credits, the copy engine's stream and the host reader as
checker models; relaxed flag writes; the catalogue's shipping protocols and the defects they must show."""

import pytest

from pipes.check import (
    Agent,
    FindingKind,
    ModelCounter,
    ModelCredits,
    ModelReadyFlags,
    ModelStepCounters,
    Protocol,
    Scope,
    check,
    copy_stream,
    host_reader,
)
from pipes.check.catalogue import comm
from pipes.check.comm import model_epoch
from pipes.epoch import FIRST, FRESH, next_epoch, parity_token, previous
from pipes.errors import ProtocolError, SpecError


@pytest.mark.parametrize("entry", comm.GOOD, ids=lambda e: e.name)
def test_correct_shipping_protocols_check_clean(entry):
    report = check(entry.build())
    assert report.ok and not report.findings and report.exhaustive, str(report)
    assert report.states < 2_000  # small enough to stay well under a second


@pytest.mark.parametrize("entry", comm.BAD, ids=lambda e: e.name)
def test_planted_shipping_defects_are_found_and_named(entry):
    report = check(entry.build())
    assert not report.ok and report.exhaustive
    finding = report.findings[0]
    assert finding.kind is entry.expect, str(report)
    for words in entry.mentions:
        assert words in finding.message, f"{words!r} not in: {finding.message}"
    twin = check({e.name: e for e in comm.GOOD}[entry.twin].build())
    assert twin.ok and not twin.findings


def test_each_planted_defect_names_its_cause():
    """The messages say what is wrong in the kernel's terms, not only which read raced."""
    causes = {
        "epilogue_comm_host_gpu_release": "has GPU scope (.gpu) and does not reach receiver, which runs on the host",
        "epilogue_comm_no_fence": "the flag write was relaxed (no fence / memory barrier before it): it publishes",
        "copy_engine_comm_no_barrier": "the flag write was relaxed (no fence / memory barrier before it)",
        "comm_launches_no_credit": "the reader released nothing after its read that the writer acquired",
        "comm_launches_epoch_bit": "launch 2's token is 2 & 1 = 0 = FRESH: a flag nobody raised already holds it",
        "epilogue_comm_notify_on_read": "comm reads global[('C', 0)], which nothing has written yet",
    }
    entries = {e.name: e for e in comm.BAD}
    for name, cause in causes.items():
        message = check(entries[name].build()).findings[0].message
        assert cause in message, f"{name}: {message}"


# --- relaxed flag writes in the checker core ------------------------------------------------------------
def _flag_chain(relaxed_store=False, relaxed_signal=False, signal=False):
    def writer(ctx):
        ctx.write_global("tile", 1)
        if signal:
            ctx.signal("flag", 1, scope=Scope.SYSTEM, relaxed=relaxed_signal)
        else:
            ctx.store_counter("flag", FIRST, scope=Scope.SYSTEM, relaxed=relaxed_store)

    def reader(ctx):
        ctx.wait_counter("flag", 1 if signal else FIRST, scope=Scope.SYSTEM)
        assert ctx.read_global("tile") == 1

    agents = [Agent("writer", writer), Agent("reader", reader, device="host")]
    return Protocol("flag_chain", agents, counters=[ModelCounter("flag")])


def test_a_release_store_or_signal_publishes_and_a_relaxed_one_does_not():
    assert check(_flag_chain()).ok
    assert check(_flag_chain(signal=True)).ok
    for options in ({"relaxed_store": True}, {"signal": True, "relaxed_signal": True}):
        report = check(_flag_chain(**options))
        finding = report.first(FindingKind.READ_UNCOMMITTED)
        assert finding is not None, str(report)
        assert "writer's write of flag" in finding.message and "it publishes nothing" in finding.message
        assert any("relaxed.sys: publishes nothing" in line for line in finding.trace), finding.trace


def test_a_relaxed_add_keeps_what_earlier_releases_published():
    """An add continues the counter's release sequence: the earlier release still reaches the reader, the
    relaxed add's own writes do not."""

    def writer(ctx):
        ctx.write_global("a", 1)
        ctx.signal("flag", 1, scope=Scope.SYSTEM)
        ctx.write_global("b", 2)
        ctx.signal("flag", 1, scope=Scope.SYSTEM, relaxed=True)

    def reader(ctx):
        ctx.wait_counter("flag", 2, scope=Scope.SYSTEM)
        assert ctx.read_global("a") == 1
        ctx.read_global("b")

    protocol = Protocol(
        "add", [Agent("writer", writer), Agent("reader", reader, device="host")], counters=[ModelCounter("flag")]
    )
    finding = check(protocol).findings[0]
    assert finding.kind is FindingKind.READ_UNCOMMITTED and "reader reads global['b']" in finding.message


def test_relaxed_must_be_a_bool():
    def agent(ctx):
        ctx.store_counter("flag", 1, relaxed="yes")

    report = check(Protocol("bad", [Agent("a", agent)], counters=[ModelCounter("flag")]))
    assert "relaxed = 'yes' is invalid: allowed True or False" in report.findings[0].message


# --- the models' arithmetic is pipes.epoch's ---------------------------------------------------------------
class _Recorder:
    """A stand-in agent context that records the synchronising calls the models make."""

    name = "rec"

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def test_flags_hold_the_epoch_or_the_shared_parity_token():
    epochs = [FIRST, next_epoch(FIRST), next_epoch(next_epoch(FIRST))]
    assert [ModelReadyFlags("r", 1).token(e) for e in epochs] == epochs
    tokens = [ModelReadyFlags("r", 1, holds="parity_token").token(e) for e in epochs]
    assert tokens == [parity_token(e) for e in epochs] and FRESH not in tokens
    assert ModelReadyFlags("r", 1, holds="epoch_bit").token(FIRST) == FRESH  # the defect: a fresh flag's value

    ctx = _Recorder()
    ModelReadyFlags("ready", 2, Scope.GPU).publish(ctx, 1, FIRST, fenced=False)
    ModelReadyFlags("ready", 2).wait(ctx, 0, FIRST + 1, scope=Scope.SYSTEM)
    ModelReadyFlags("ready", 2, holds="parity_token").wait(ctx, 1, FIRST)
    assert ctx.calls == [
        ("store_counter", ("ready1", FIRST), {"scope": Scope.GPU, "relaxed": True}),
        ("wait_counter", ("ready0",), {"at_least": FIRST + 1, "scope": Scope.SYSTEM}),
        ("wait_value", ("ready1", parity_token(FIRST)), {"scope": None}),
    ]


def test_credits_wait_for_the_previous_epoch_and_the_first_launch_waits_for_nothing():
    credits = ModelCredits("credit", 2)
    ctx = _Recorder()
    credits.wait(ctx, 0, FIRST)  # previous(FIRST) = 0xFFFFFFFF: a fresh credit has reached it
    assert ctx.calls == []
    credits.wait(ctx, 1, FIRST + 2)
    credits.grant(ctx, 1, FIRST + 1)
    assert ctx.calls == [
        ("wait_counter", ("credit1",), {"at_least": previous(FIRST + 2), "scope": None}),
        ("store_counter", ("credit1", FIRST + 1), {"scope": Scope.SYSTEM}),
    ]


def test_step_counters_count_wait_and_reset():
    steps = ModelStepCounters("step", 2, 3)
    assert [c.name for c in steps.counters()] == ["step0", "step1"] and list(steps.step_tiles(1)) == [3, 4, 5]
    ctx = _Recorder()
    steps.count(ctx, 1)
    steps.wait(ctx, 1)
    steps.reset(ctx, 0)
    assert ctx.calls == [
        ("signal", ("step1", 1), {"scope": Scope.SYSTEM, "relaxed": False}),
        ("wait_counter", ("step1",), {"at_least": 3, "scope": Scope.SYSTEM}),
        ("store_counter", ("step0", 0), {"scope": Scope.SYSTEM}),
    ]


@pytest.mark.parametrize("epoch", [FRESH, 1, 1 << 31, True, 2.0])
def test_model_epochs_start_at_first_and_never_wrap(epoch):
    with pytest.raises(ProtocolError, match=r"allowed an int in \[FIRST = 2, 2\*\*31\)"):
        model_epoch(epoch)


def test_invalid_declarations_say_what_is_allowed():
    with pytest.raises(SpecError, match="holds = 'bit' is invalid"):
        ModelReadyFlags("r", 1, holds="bit")
    with pytest.raises(SpecError, match="count = 0 is invalid: allowed an int >= 1"):
        ModelCredits("c", 0)
    with pytest.raises(ProtocolError, match="index = 2 is invalid: allowed an int in \\[0, 1\\]"):
        ModelReadyFlags("ready", 2).flag(2)
    steps, flags = ModelStepCounters("step", 2, 2), ModelReadyFlags("ready", 3)
    with pytest.raises(ProtocolError, match="ready has 3 flag\\(s\\) but step counts 2 step\\(s\\)"):
        copy_stream("copy", steps, flags, lambda ctx, t: t, lambda ctx, t, v: None)
    with pytest.raises(ProtocolError, match="credit has 1 credit\\(s\\) for 2 flag\\(s\\) × 1 tile\\(s\\) = 2 tiles"):
        host_reader(
            "host", ModelReadyFlags("ready", 2), lambda ctx, t: t, lambda t, e: t, credits=ModelCredits("credit", 1)
        )


def test_the_agent_factories_place_the_copy_engine_and_the_reader_off_the_device():
    steps, flags = ModelStepCounters("step", 1, 1), ModelReadyFlags("ready", 1)
    copy = copy_stream("copy", steps, flags, lambda ctx, t: t, lambda ctx, t, v: None)
    reader = host_reader("host", flags, lambda ctx, t: t, lambda t, e: t)
    peer = host_reader("peer", flags, lambda ctx, t: t, lambda t, e: t, device=1)
    assert copy.place.on_host and reader.place.on_host and peer.place.device == 1


def test_more_launches_and_tiles_stay_clean_and_small():
    for holds in ("epoch", "parity_token"):
        report = check(comm.comm_launches(launches=3, tiles=2, holds=holds))
        assert report.ok and report.exhaustive and report.states < 5_000, str(report)
    # Without credits a launch overwrites a buffer the host may not have read, whatever the flags hold.
    assert not check(comm.comm_launches(launches=3, holds="parity_token", credits=False)).ok
