"""The reduce-scatter's copy-engine launch protocol over more than two GPUs, through ``pipes.check``.

:mod:`tile_comm.protocol_peer` with ``ranks = 3``: every rank's launching stream, kernel and copy stream,
each rank shipping a row block to each of the other two into its own inbox slot (own flags, own binary
credit). What these tests prove:

* the model's routing is the implementation's: block ``p`` of rank ``r`` goes to the rank
  :func:`tile_comm.peer.block_order` names, into the slot :func:`tile_comm.role.inbox_slot` names;
* the clean protocol passes the checker *exhaustively* (no finding in any interleaving) for two
  back-to-back launches (marked slow), where the credits and the alternating flag tokens matter;
* each necessary piece, removed, is caught with the finding it should produce: a credit given before the
  senders' flags (a race on the credit word), no credit (an overwrite of an inbox slot still being read),
  the flag before the data or a flag without its fence (a read of data not yet ordered), the
  ``epoch & 1`` token (what a fresh flag holds). The other planted defects are the two-rank model's
  (tests/test_peer.py): they do not depend on the number of ranks.

The sizes are the smallest that show each point (one band, one copy stream): the state space grows fast
with ranks (two copy streams at three ranks pass 200,000 states). Bug runs stop at their first finding
(``max_findings=1``), which the breadth-first search reaches along a shortest schedule.
"""

from __future__ import annotations

import pytest
from tile_comm.protocol_peer import (
    check_reduce_scatter,
    reduce_scatter_protocol,
    sender_of,
    shipped_to,
)

RANKS = 3


def _first(bug: str, launches: int) -> tuple[str, str]:
    """The first finding (kind, message) of ``bug`` planted in the three-rank model."""
    report = check_reduce_scatter(launches, 1, bug, ranks=RANKS, max_findings=1)
    assert len(report.findings) == 1, str(report)
    finding = report.findings[0]
    return finding.kind.name, finding.message


def test_the_models_routing_is_the_implementations():
    """Block p of rank r goes to block_order(r, W)[p], into that rank's slot inbox_slot(r, ·, W) = p, and
    slot p's sender is the rank it names; the two-rank model keeps its names and label."""
    pytest.importorskip("cutlass")
    from tile_comm.peer import block_order
    from tile_comm.role import inbox_slot

    for world in (2, 3, 4, 5):
        for rank in range(world):
            order = block_order(rank, world)
            for p in range(world - 1):
                receiver = shipped_to(rank, p, world)
                assert receiver == order[p]
                assert inbox_slot(rank, receiver, world) == p
                assert sender_of(receiver, p, world) == rank


def test_two_ranks_keep_the_two_gpu_names_and_more_ranks_number_the_slots():
    two = reduce_scatter_protocol(1, 2)
    assert two.name == "tp_reduce_scatter"
    names = {c.name for c in two.counters}
    assert {"credit0", "credit1", "flag0_0", "flag1_1", "count0_1"} <= names
    assert not any(n.startswith("credit0_") for n in names)
    three = reduce_scatter_protocol(1, 1, "no_fence", ranks=RANKS)
    assert three.name == "tp_reduce_scatter_3ranks_no_fence"
    names = {c.name for c in three.counters}
    # Each rank: a credit and a flag per inbox slot, a step counter per shipped (block, band).
    for r in range(RANKS):
        assert {f"credit{r}_0", f"credit{r}_1", f"flag{r}_0_0", f"flag{r}_1_0", f"count{r}_0", f"count{r}_1"} <= names
    assert len(names) == len(three.counters)  # no two ranks or slots share a word
    assert {a.name for a in three.agents} == {f"launch{r}" for r in range(RANKS)} | {f"copy{r}_0" for r in range(RANKS)}
    with pytest.raises(ValueError, match="ranks = 1 is invalid"):
        reduce_scatter_protocol(ranks=1)


@pytest.mark.slow
def test_three_ranks_two_launches_pass_the_checker_exhaustively():
    """Two back-to-back launches (~145,000 states, ~40 s): the per-slot credits keep every inbox slot from
    being overwritten while read, and the two alternating tokens are never confused."""
    report = check_reduce_scatter(2, 1, ranks=RANKS)
    assert report.ok and report.exhaustive and not report.findings, str(report)


def test_a_credit_given_before_the_flags_races_the_senders_clear():
    """Rank 0 grants credit0_0 while rank 2 (its slot-0 sender) clears it: two unordered stores to one word."""
    kind, message = _first("credit_before_flags", 1)
    assert kind == "FLAG_RACE"
    assert "credit0_0" in message and "copy2_0" in message


def test_without_the_credit_a_sender_overwrites_a_slot_still_being_read():
    kind, message = _first("no_credit", 2)
    assert kind == "OVERWRITE_UNRELEASED"
    assert "('inbox', 1, 0, 0)" in message  # rank 0's next launch over rank 1's slot 0 (rank 0 is its sender)


@pytest.mark.parametrize("bug", ["flag_before_data", "no_fence"])
def test_a_flag_not_ordered_after_its_data_lets_the_owner_read_early(bug):
    kind, message = _first(bug, 1)
    assert kind == "READ_UNCOMMITTED"
    assert "reads global[('inbox'" in message


def test_the_parity_bit_token_is_what_a_fresh_flag_holds():
    kind, message = _first("parity_flag", 1)
    assert kind == "AGENT_ERROR"
    assert "added ('before the first launch', 0, 0)" in message and "= FRESH" in message
