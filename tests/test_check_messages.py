"""Findings name what happened in the kernel's own terms."""

from pipes.check import Agent, FindingKind, ModelBarrier, Protocol, check


def test_a_racy_global_read_is_not_called_a_slot():
    def writer(ctx):
        ctx.write_global("C", 1)

    def reader(ctx):
        ctx.read_global("C")

    report = check(Protocol("race", [Agent("w", writer), Agent("r", reader)]))
    messages = [f.message for f in report.findings]
    assert any("a read of global memory whose write is not ordered before it" in m for m in messages), messages
    assert not any("slot" in m for m in messages), messages


def test_a_waiter_that_missed_its_free_first_pass_is_told_so_plainly():
    """An arrival lands before the first wait meant to pass on the fresh barrier: no '#-1 and #0 (1 in all)'."""

    def early(ctx):
        ctx.arrive("empty", 1, completion=0)

    def producer(ctx):
        ctx.wait("empty", 1, completion=-1)  # the producer's free first pass

    protocol = Protocol(
        "early", [Agent("consumer", early), Agent("producer", producer)], barriers=[ModelBarrier("empty", 1)]
    )
    finding = check(protocol).first(FindingKind.PHASE_ALIASING)
    assert finding is not None
    assert "free first pass (completion #-1, parity 1), but phase #0 has already completed" in finding.message
    assert "#-1 and #0" not in finding.message and "(1 in all)" not in finding.message


def test_waiting_on_a_peer_ctas_barrier_is_an_agent_error_naming_both_ctas():
    def remote(ctx):
        ctx.wait("ready", 0, completion=0)

    protocol = Protocol("peer", [Agent("w", remote, cta=0)], barriers=[ModelBarrier("ready", 1, cta=1)])
    message = check(protocol).first(FindingKind.AGENT_ERROR).message
    assert "lives in the shared memory of CTA 1" in message and "in CTA 0 of cluster 0" in message


def test_a_dependent_grid_launched_after_the_earlier_one_completed_sees_its_writes():
    def primary(ctx, trigger=False):
        if trigger:
            ctx.launch_dependents()
        ctx.write_global("x", 1)

    def dependent(ctx):
        assert ctx.read_global("x") == 1  # no griddepcontrol.wait

    stream_order = Protocol("stream", [Agent("p", primary), Agent("d", dependent, grid=1)])
    assert check(stream_order).ok  # without a trigger it starts after the primary completed
    early = Protocol("pdl", [Agent("p", lambda ctx: primary(ctx, True)), Agent("d", dependent, grid=1)])
    assert FindingKind.READ_UNCOMMITTED in check(early).kinds()  # triggered: it may start before the write
