"""An mbarrier wait's acquire scope: a CTA-scoped wait does not synchronise with a peer CTA's release.

PTX ``mbarrier.try_wait`` acquires at ``.cta`` unless told ``.cluster``; a peer CTA's data read after a
CTA-scoped wait only is ``READ_UNCOMMITTED``, while the wait still orders the peer's reads and writes
before the waiter's own writes (the hand-back of a buffer stays clean).
"""

from __future__ import annotations

import pytest

from pipes.check import Agent, FindingKind, ModelBarrier, ModelCounter, Protocol, Scope, check
from pipes.check.catalogue.cluster import dsmem_relay

BARRIERS = [ModelBarrier("ready", 1, cta=1), ModelBarrier("free", 1, cta=0)]


def test_a_peer_ctas_data_read_after_a_cta_scoped_wait_is_reported():
    report = check(dsmem_relay(acquire=Scope.CTA))
    assert [f.kind for f in report.findings] == [FindingKind.READ_UNCOMMITTED]
    message = report.findings[0].message
    assert message.startswith("receiver reads global[('dsmem', 1)] but its write #1 is not ordered before this read")
    assert "(receiver synchronised with no write of it)" in message
    assert "receiver's wait on ready came after this write" in message
    assert "acquires at CTA scope (acquire.cta)" in message
    assert "mbarrier.try_wait.acquire.cluster" in message


def test_the_cluster_scoped_twin_is_clean():
    report = check(dsmem_relay())
    assert report.ok and report.exhaustive and not report.findings, str(report)


def test_the_trace_shows_a_cluster_scoped_wait():
    report = check(dsmem_relay(rounds=1, scope=Scope.CTA))
    assert any("wait ready parity 0, completion #0 [acquire.cluster]" in line for line in report.findings[0].trace)


def _hand_back(wait_scope: Scope, peer_writes: bool = False):
    """CTA 1's reader reads the tile CTA 0 wrote (acquired at cluster scope) and hands the buffer back on
    CTA 0's ``free``; CTA 0's writer waits for it at ``wait_scope`` and overwrites the tile (``peer_writes``:
    the reader writes the tile itself before handing it back, and the writer then reads it)."""

    def writer(ctx):
        ctx.write_global(("dsmem", 1), "first")
        ctx.arrive("ready", 1, completion=0, scope=Scope.CLUSTER)
        ctx.wait("free", 0, completion=0, scope=wait_scope)
        if peer_writes:
            assert ctx.read_global(("dsmem", 1)) == "second"
        else:
            ctx.write_global(("dsmem", 1), "second")

    def reader(ctx):
        ctx.wait("ready", 0, completion=0, scope=Scope.CLUSTER)
        assert ctx.read_global(("dsmem", 1)) == "first"
        if peer_writes:
            ctx.write_global(("dsmem", 1), "second")
        ctx.arrive("free", 1, completion=0, scope=Scope.CLUSTER)

    agents = [Agent("writer", writer, cta=0), Agent("reader", reader, cta=1)]
    return Protocol("hand_back", agents, barriers=BARRIERS)


@pytest.mark.parametrize("wait_scope", [Scope.CTA, Scope.CLUSTER])
def test_a_cta_scoped_wait_orders_the_peers_read_before_the_overwrite(wait_scope):
    report = check(_hand_back(wait_scope))
    assert report.ok and not report.findings, str(report)


def test_a_cta_scoped_wait_does_not_make_the_peers_write_visible():
    assert check(_hand_back(Scope.CLUSTER, peer_writes=True)).ok
    report = check(_hand_back(Scope.CTA, peer_writes=True))
    assert report.findings[0].kind is FindingKind.READ_UNCOMMITTED
    assert "writer's wait on free came after this write" in report.findings[0].message


def test_a_later_cluster_scoped_acquire_makes_the_write_visible():
    """The CTA-scoped wait only orders; a flag acquired at cluster scope afterwards publishes the same write."""

    def sender(ctx):
        ctx.write_global(("dsmem", 1), "tile")
        ctx.arrive("ready", 1, completion=0, scope=Scope.CLUSTER)
        ctx.store_counter("posted", 1, scope=Scope.CLUSTER)

    def receiver(ctx):
        ctx.wait("ready", 0, completion=0)
        ctx.wait_counter("posted", 1, scope=Scope.CLUSTER)
        assert ctx.read_global(("dsmem", 1)) == "tile"

    agents = [Agent("sender", sender, cta=0), Agent("receiver", receiver, cta=1)]
    protocol = Protocol("seen_later", agents, barriers=[BARRIERS[0]], counters=[ModelCounter("posted")])
    report = check(protocol)
    assert report.ok and not report.findings, str(report)


def test_a_wait_scope_beyond_the_cluster_is_refused():
    def waiter(ctx):
        ctx.wait("ready", 0, completion=0, scope=Scope.GPU)

    protocol = Protocol("gpu_wait", [Agent("w", waiter, cta=1)], barriers=[BARRIERS[0]])
    report = check(protocol)
    assert report.findings[0].kind is FindingKind.AGENT_ERROR
    assert "an mbarrier wait's scope = <Scope.GPU: 2> is invalid: allowed Scope.CTA or Scope.CLUSTER" in (
        report.findings[0].message
    )
