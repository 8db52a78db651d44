"""A remote arrive (or a multicast TMA write) into a CTA whose agents have all finished: REMOTE_AFTER_EXIT.

On an H100 such a write into the shared memory of an exited CTA fails the launch ("unspecified launch
failure"); the stock CUTLASS multicast mainloop without ``producer.tail()`` hit it.
"""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.check import Agent, FindingKind, ModelBarrier, ModelPipeline, Protocol, check, replay
from pipes.check.catalogue import ENTRIES
from pipes.check.catalogue.cluster import HALF, dsmem_relay, multicast_mainloop
from pipes.check.machine import Machine
from pipes.check.report import Severity
from pipes.check.scope import Scope


def _no_exit_check(monkeypatch):
    monkeypatch.setattr(Machine, "exited", lambda self, world, barrier, visitor: None)


def test_the_kind_is_an_error():
    assert FindingKind.REMOTE_AFTER_EXIT.severity is Severity.ERROR


def test_a_producer_without_tail_lets_its_cta_exit_before_the_peers_remote_release():
    report = check(multicast_mainloop(tail=False))
    assert report.exhaustive and not report.ok
    assert report.kinds() == {FindingKind.REMOTE_AFTER_EXIT}, str(report)
    finding = report.findings[0]
    message = finding.message
    assert message.startswith(
        "mma1 (consumer 'mma' of mainloop), in consumer_release, arrives remotely on mainloop.empty[0]@cta0 "
        "in CTA 0 of cluster 0 on device 0, after every agent of that CTA finished (tma0, mma0)"
    ), message
    assert "unspecified launch failure" in message
    assert "producer.tail()" in message and "cluster barrier before exit" in message
    # The interleaving ends with the remote arrive, after CTA 0's agents finished.
    assert finding.schedule[-1] == "mma1"
    assert finding.trace[-1].endswith("arrive on mainloop.empty[0]@cta0 ×128 (for completion #0) [release.cluster]")
    again = replay(multicast_mainloop(tail=False), finding.schedule)
    assert (again.kind, again.message, again.trace) == (finding.kind, finding.message, finding.trace)
    # One move earlier nothing is wrong yet.
    assert replay(multicast_mainloop(tail=False), finding.schedule[:-1]) is None


@pytest.mark.parametrize(
    "options", [{"reduction": False}, {"symmetry": False}, {"reduction": False, "symmetry": False}]
)
def test_every_exploration_mode_finds_it(options):
    report = check(multicast_mainloop(tail=False), **options)
    assert report.exhaustive
    assert [f.kind for f in report.findings] == [FindingKind.REMOTE_AFTER_EXIT]
    assert report.findings[0].message == check(multicast_mainloop(tail=False)).findings[0].message


def test_it_was_silent_before(monkeypatch):
    """Without the check the planted defect passes: nothing else in the model shows it."""
    _no_exit_check(monkeypatch)
    assert check(multicast_mainloop(tail=False)).ok


def test_the_correct_multicast_mainloop_stays_clean_with_as_many_states():
    report = check(multicast_mainloop())
    assert report.ok and not report.findings and report.exhaustive
    assert report.states == 5485  # unchanged: exited CTAs are derived from finished agents, not new state


def test_the_catalogue_entry_and_its_twin():
    entry = ENTRIES["multicast_mainloop_no_tail"]
    assert entry.bad and entry.expect is FindingKind.REMOTE_AFTER_EXIT and entry.twin == "multicast_mainloop"
    assert not ENTRIES[entry.twin].bad


def _single_cta_tma(tail: bool) -> Protocol:
    spec = PipelineSpec(
        "smem", 2, Role("tma", ArrivalUnit.ELECTED_PER_WARP), Role("math", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES, 2 * HALF,
    )  # fmt: skip

    def producer(ctx):
        p = ctx.producer("smem")
        for item in range(3):
            ctx.load("smem", p.acquire(), item)
            p.commit()
        if tail:
            p.tail()

    def consumer(ctx):
        c = ctx.consumer("smem")
        for item in range(3):
            assert ctx.read("smem", c.wait(), proxy="async") == item
            c.release()

    return Protocol("single_cta", [Agent("tma", producer), Agent("math", consumer)], [ModelPipeline(spec)])


@pytest.mark.parametrize("tail", [True, False])
def test_a_single_cta_without_tail_gets_no_new_finding(tail, monkeypatch):
    report = check(_single_cta_tma(tail))
    assert FindingKind.REMOTE_AFTER_EXIT not in report.kinds()
    _no_exit_check(monkeypatch)
    before = check(_single_cta_tma(tail))
    assert [(f.kind, f.message) for f in report.findings] == [(f.kind, f.message) for f in before.findings]
    assert (report.states, report.transitions) == (before.states, before.transitions)


def test_a_hand_written_remote_arrive_after_the_peer_exited():
    """The relay's sender in CTA 0 exits right after its last hand-off; the receiver's last hand-back lands
    on CTA 0's ``free`` barrier after that."""

    def sender(ctx):
        ctx.write_global(("dsmem", 1), "tile")
        ctx.arrive("ready", 1, completion=0, scope=Scope.CLUSTER)

    def receiver(ctx):
        ctx.wait("ready", 0, completion=0, scope=Scope.CLUSTER)  # the tile comes from CTA 0
        assert ctx.read_global(("dsmem", 1)) == "tile"
        ctx.arrive("free", 1, completion=0, scope=Scope.CLUSTER)

    barriers = [ModelBarrier("ready", 1, cta=1), ModelBarrier("free", 1, cta=0)]
    agents = [Agent("sender", sender, cta=0), Agent("receiver", receiver, cta=1)]
    report = check(Protocol("relay_once", agents, barriers=barriers))
    assert [f.kind for f in report.findings] == [FindingKind.REMOTE_AFTER_EXIT]
    assert report.findings[0].message.startswith(
        "receiver, in arrive, arrives remotely on free in CTA 0 of cluster 0 on device 0, after every agent of that "
        "CTA finished (sender)"
    )
    assert check(dsmem_relay()).ok  # the catalogue's relay waits for the last hand-back before exiting


def test_a_barrier_in_a_cta_without_agents_never_exits():
    def one(ctx):
        ctx.arrive("mailbox", 1, completion=0, scope=Scope.CLUSTER)

    def two(ctx):
        ctx.arrive("mailbox", 1, completion=0, scope=Scope.CLUSTER)

    barriers = [ModelBarrier("mailbox", 2, cta=1)]  # CTA 1 hosts no agent
    report = check(Protocol("mailbox", [Agent("one", one), Agent("two", two)], barriers=barriers))
    assert report.ok, str(report)


def test_a_multicast_load_landing_in_an_exited_cta():
    """CTA 1's consumer takes one k block of two and its producer skips the tail: CTA 1 exits while CTA 0's
    multicast load of the second block is still to land in it."""
    spec = PipelineSpec(
        "mainloop", 2, Role("tma", ArrivalUnit.ELECTED_PER_WARP), Role("mma", ArrivalUnit.WARPGROUP, peers=2),
        Completion.TRANSACTION_BYTES, 2 * HALF,
    )  # fmt: skip

    def loads(cta):
        def run(ctx):
            p = ctx.producer("mainloop")
            for k in range(2 if cta == 0 else 1):
                slot = p.acquire()
                ctx.load("mainloop", slot, ("B", k, cta), nbytes=HALF, part=f"half{cta}", multicast=True)
                p.commit()

        return run

    def mma(blocks):
        def run(ctx):
            c = ctx.consumer("mainloop")
            for _ in range(blocks):
                slot = c.wait()
                for h in range(2):
                    ctx.read("mainloop", slot, part=f"half{h}", proxy="async")
                c.release()

        return run

    agents = [
        Agent("tma0", loads(0), cta=0),
        Agent("tma1", loads(1), cta=1),
        Agent("mma0", mma(1), cta=0),
        Agent("mma1", mma(1), cta=1),
    ]
    model = ModelPipeline(spec, fence_reads=False, ctas=(0, 1), multicast=True)
    protocol = Protocol("multicast_lands_late", agents, [model])
    report = check(protocol)
    landing = [
        f for f in report.findings if f.kind is FindingKind.REMOTE_AFTER_EXIT and f.message.startswith("the multicast")
    ]
    assert landing, str(report)
    finding = landing[0]
    assert finding.message.startswith(
        "the multicast TMA load issued by tma0 writes mainloop.slot[1].half0@cta1 and completes its bytes on "
        "mainloop.full[1]@cta1 in CTA 1 of cluster 0 on device 0, after every agent of that CTA finished (tma1, mma1)"
    ), finding.message
    assert finding.schedule[-1].startswith("tma:tma0#")
    again = replay(protocol, finding.schedule)
    assert (again.kind, again.message) == (finding.kind, finding.message)
