"""The all-gather's CPU models (:mod:`pipes.check.comm`): the gate waits for what the kernel's gate waits for,
the pusher pushes in the host's order, and the catalogue's protocol refuses what it cannot model.

Whether each planted defect is found, with its finding and words, and each twin is clean, is checked with
the whole catalogue (``tests/test_check_catalogue.py``: ``all_gather_*``); here the parts it is built from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from pipes.check import ModelChunkGate, ModelReadyFlags, Scope, check, chunk_pusher
from pipes.check.catalogue import ENTRIES, all_gather_launches
from pipes.check.catalogue.all_gather import AG_BUGS, GATHER_BAD, GATHER_GOOD
from pipes.chunks import ChunkPlan
from pipes.comm import push_plan
from pipes.epoch import FIRST, next_epoch
from pipes.errors import ProtocolError


@dataclass
class Recorder:
    """A stand-in for an agent's ``ctx`` that writes down the calls a model makes."""

    name: str = "agent"
    calls: list[tuple] = field(default_factory=list)

    def wait_value(self, counter: str, value: int, scope: Any = None) -> None:
        self.calls.append(("wait", counter, value))

    def wait_counter(self, counter: str, at_least: int | None = None, scope: Any = None) -> None:
        self.calls.append(("wait", counter, at_least))

    def store_counter(self, counter: str, value: int, scope: Any = None, relaxed: bool = False) -> None:
        self.calls.append(("store", counter, value))

    def read_global(self, key: Any, proxy: str = "generic") -> Any:
        self.calls.append(("read", key))
        return key

    def write_global(self, key: Any, value: Any) -> None:
        self.calls.append(("write", key))


def test_the_gate_model_waits_once_per_peer_chunk_and_never_for_its_own_rows():
    plan = ChunkPlan(rows=8, world=2, chunk_rows=2)  # chunks 0, 1 on rank 0; 2, 3 on rank 1
    flags = ModelReadyFlags("flag", plan.chunks, Scope.SYSTEM, holds="parity_token")
    gate = ModelChunkGate(flags, plan, rank=0, tile_m=3)
    ctx = Recorder()
    passed = gate.wait_tile(ctx, 0, FIRST)  # rows 0..2: chunks 0, 1 — its own
    assert ctx.calls == [] and passed == frozenset()
    passed = gate.wait_tile(ctx, 1, FIRST, passed)  # rows 3..5: chunks 1 (own) and 2
    passed = gate.wait_tile(ctx, 2, FIRST, passed)  # rows 6..8: chunk 3 (row 8 is past the edge)
    passed = gate.wait_tile(ctx, 1, FIRST, passed)  # again: passed already
    token = flags.token(FIRST)
    assert ctx.calls == [("wait", "flag2", token), ("wait", "flag3", token)] and passed == {2, 3}
    with pytest.raises(ProtocolError, match="3 flag\\(s\\) for the plan's 4 chunks"):
        ModelChunkGate(ModelReadyFlags("flag", 3), plan, rank=0)


@pytest.mark.parametrize("world", [2, 3])
def test_the_pusher_model_takes_every_credit_first_and_pushes_in_the_hosts_order(world):
    plan = ChunkPlan(rows=world * 4, world=world, chunk_rows=2)
    rank = world - 1
    flags = {p: ModelReadyFlags(f"flag{p}_", plan.chunks) for p in range(world) if p != rank}
    credits = {p: f"credit{p}_{rank}" for p in flags}
    epochs = (FIRST, next_epoch(FIRST))
    agent = chunk_pusher(
        "push",
        plan,
        rank,
        flags,
        lambda ctx, chunk: ctx.read_global(("src", chunk)),
        lambda ctx, peer, chunk, value: ctx.write_global(("A", peer, chunk), value),
        epochs=epochs,
        credits=credits,
        start="start",
        pushed="pushed",
    )
    ctx = Recorder()
    agent.fn(ctx)
    host = [(c.chunk, c.peer) for c in push_plan(plan, rank, 64, 64, 64)]
    for epoch, launch in zip(epochs, _split(ctx.calls, ("store", "pushed")), strict=True):
        assert launch[0] == ("wait", "start", epoch)
        takes = [c for c in launch if str(c[1]).startswith("credit")]
        first_write = next(i for i, c in enumerate(launch) if c[0] == "write")
        assert all(launch.index(t) < first_write for t in takes)  # every credit before any chunk
        assert [c[1] for c in takes[::2]] == [credits[p] for p in plan.push_peers(rank)]
        assert [(c[1][2], c[1][1]) for c in launch if c[0] == "write"] == host
        assert launch[-1] == ("store", "pushed", epoch)


def _split(calls: list[tuple], end: tuple) -> list[list[tuple]]:
    """The calls per launch, each ending with a call that starts with ``end``."""
    out, current = [], []
    for call in calls:
        current.append(call)
        if call[: len(end)] == end:
            out.append(current)
            current = []
    return out


def test_all_gather_protocol_refuses_what_it_cannot_model():
    with pytest.raises(ValueError, match="bug = 'typo' is invalid"):
        all_gather_launches(bug="typo")
    with pytest.raises(ValueError, match="needs engine 'sm'"):
        all_gather_launches(bug="gpu_release")
    with pytest.raises(ValueError, match="engine = 'dma' is invalid"):
        all_gather_launches(engine="dma")


def test_a_granting_stream_that_waits_for_the_start_event_races_the_senders_take():
    """``grant_beside``: the credits from a stream of their own. After the event behind the kernel the model
    is clean (the catalogue's ``all_gather_copy_grant_beside``); a granting stream that waits for the launch's
    start event instead gives the credit back while the sender may still take it (the first finding; the
    exhaustive search takes ~20 s, so it stops there)."""
    with pytest.raises(ValueError, match="grant_beside needs engine 'copy'"):
        all_gather_launches(engine="sm", grant_beside=True)
    found = check(all_gather_launches(grant_beside=True, bug="credit_before_kernel"), max_findings=1)
    assert [f.kind.name for f in found.findings] == ["FLAG_RACE"]
    assert "grant1" in str(found.findings[0]) or "grant0" in str(found.findings[0])
    assert "credit" in str(found.findings[0]).splitlines()[0]


def test_every_defect_has_a_catalogue_entry_with_a_clean_twin():
    planted = {e.name.removeprefix("all_gather_").removeprefix("sm_") for e in GATHER_BAD}
    assert planted == set(AG_BUGS)
    assert all(ENTRIES[e.twin] in GATHER_GOOD for e in GATHER_BAD)


def test_the_whole_catalogue_checks_the_all_gather_entries():
    """``tests/test_check_catalogue.py`` runs every catalogue entry: each defect must give its finding with
    its words, each twin must check clean and exhaustively. The all-gather's entries are among them."""
    from pipes.check.catalogue import BAD, GOOD

    assert all(e in GOOD for e in GATHER_GOOD) and all(e in BAD for e in GATHER_BAD)
    assert all(e.expect is not None and e.mentions for e in GATHER_BAD)


def test_loading_the_own_rows_too_checks_clean():
    """The own rows need no wait: the launching stream put them in place before the kernel started."""
    report = check(all_gather_launches(launches=1, own_rows=True))
    assert report.ok and report.exhaustive, str(report)
