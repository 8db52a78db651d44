"""pipes.check counters read for an exact token (``Ctx.wait_value``): flags whose values alternate."""

from __future__ import annotations

from pipes.check import HOST, Agent, ModelCounter, Protocol, Scope, check

SYS = Scope.SYSTEM


def token(launch: int) -> int:
    return 1 + (launch & 1)


def parity_flags(launches: int, credit: bool, exact: bool = True) -> Protocol:
    """A sender writes launch ``e``'s data, then raises the flag to ``token(e)`` (two alternating values);
    the receiver waits for its launch's token, reads, and (``credit``) hands a credit back."""

    def sender(ctx):
        for e in range(1, launches + 1):
            if credit and e > 1:
                ctx.wait_counter("credit", e - 1, scope=SYS)
            ctx.write_global("data", e)
            ctx.store_counter("flag", token(e), scope=SYS)

    def receiver(ctx):
        for e in range(1, launches + 1):
            if exact:
                ctx.wait_value("flag", token(e), scope=SYS)
            else:
                ctx.wait_counter("flag", token(e), scope=SYS)
            got = ctx.read_global("data")
            assert got == e, f"launch {e} read the data of launch {got}"
            ctx.store_counter("credit", e, scope=SYS)

    agents = [Agent("sender", sender, device=HOST), Agent("receiver", receiver, device=0)]
    counters = [ModelCounter("flag"), ModelCounter("credit")]
    return Protocol("parity_flags", agents, [], counters=counters, initial={"data": 0})


def test_alternating_tokens_with_a_credit_per_launch_are_proven():
    report = check(parity_flags(4, credit=True))
    assert report.ok and report.exhaustive, report


def test_alternating_tokens_without_the_credit_let_the_sender_lap_the_receiver():
    report = check(parity_flags(4, credit=False))
    assert not report.ok
    # The sender overwrites data the receiver has not read; two launches ahead, its token looks like the
    # receiver's own (or the receiver waits forever for a token already gone).
    kinds = {f.kind.name for f in report.findings}
    assert "OVERWRITE_UNRELEASED" in kinds and "DEADLOCK" in kinds, kinds


def test_at_least_is_not_the_same_question_as_equals():
    # Tokens 2, 1, 2, ...: a ">= token" wait lets launch 2 (token 1) pass on launch 1's token 2.
    report = check(parity_flags(2, credit=True, exact=False))
    assert [f.kind.name for f in report.findings][:1] == ["AGENT_ERROR"]
    assert "launch 2 read the data of launch 1" in str(report)


def test_a_blocked_exact_wait_names_the_relation():
    def never(ctx):
        ctx.wait_value("flag", 2, scope=SYS)

    def writer(ctx):
        ctx.store_counter("flag", 1, scope=SYS)

    protocol = Protocol(
        "never", [Agent("w", writer, device=HOST), Agent("r", never, device=0)], [], counters=[ModelCounter("flag")]
    )
    report = check(protocol)
    assert not report.ok
    assert "flag == 2; it is 1" in str(report)
