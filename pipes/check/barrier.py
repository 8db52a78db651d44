"""Models of the two synchronisation objects: the mbarrier (Hopper) and the binary flag (Ascend).

Both are immutable values; every operation returns a new value. Each also carries the happens-before
knowledge it publishes (:mod:`pipes.check.memory`), so a waiter learns what the arrivers had done.

mbarrier semantics modelled here:

* ``completed`` counts finished phases; the current phase is number ``completed`` and its parity is
  ``completed & 1``. A fresh barrier is in phase 0.
* ``try_wait.parity P`` succeeds iff the current phase's parity differs from ``P`` — i.e. the phase
  with parity ``P`` has completed. On a fresh barrier parity 1 passes at once (the "previous" phase
  counts as complete). The completion a passing wait observes is the latest one, ``completed - 1``.
* A phase completes when its pending arrivals reach zero and its transaction count is zero; then the
  pending count resets to ``expected``.
* What a phase publishes is kept in two parts: what arrivals from the barrier's own CTA (and the bytes
  that TMA copies delivered) carried, which every passing wait acquires; and what arrivals from other CTAs
  of the cluster carried (``remote``), which only a cluster-scoped wait acquires — PTX synchronises a
  release with an acquire only when each one's scope includes the other's thread, and
  ``mbarrier.try_wait`` acquires at ``.cta`` unless told ``.cluster``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .memory import EMPTY_KNOWLEDGE, Knowledge, join


class BarrierState(NamedTuple):
    """One mbarrier: ``expected`` arrivals per phase; ``pending`` still missing in the current one."""

    expected: int
    completed: int
    pending: int
    tx: int
    published: Knowledge
    """What the last completed phase's arrivers knew (a passing waiter learns it)."""
    gathered: Knowledge
    """What the current phase's arrivers knew so far."""
    round: int | None = None
    """The completion number the current phase's annotated arrivals mean (None: no annotated arrival yet).
    (Who opened it is deliberately not kept: identical arrivers in different orders must stay one state.)"""
    done_round: int | None = None
    """The completion number the latest completed phase's arrivals meant (None: none, or not annotated)."""
    narrow: tuple[tuple[str, Any, Knowledge], ...] = ()
    """Arrivals whose release scope did not reach the barrier's CTA: (who, scope, what they knew). They
    count, but publish nothing; kept (the latest per arriver) so a hazard they fail to prevent can name them."""
    remote: Knowledge = EMPTY_KNOWLEDGE
    """What the last completed phase's arrivers from other CTAs knew (only a cluster-scoped wait learns it)."""
    remote_gathered: Knowledge = EMPTY_KNOWLEDGE
    """What the current phase's arrivers from other CTAs knew so far."""

    @classmethod
    def fresh(cls, expected: int) -> BarrierState:
        return cls(expected, 0, expected, 0, EMPTY_KNOWLEDGE, EMPTY_KNOWLEDGE)


# -- logical rounds ---------------------------------------------------------------------------------------
# Agents annotate waits and arrivals with the completion they mean. The checker never compares that number
# with the barrier's own phase count — a kernel may number rounds its own way (per slot, per tile, per
# logical round of a two-slot rendezvous) — only with the rounds the barrier's phases actually carried:
# the arrivals of one phase must mean one round, later phases later rounds, and a waiter must pass on the
# phase of the round it means. Negative numbers mean the fresh barrier's virtual completion (#-1, which a
# parity-1 wait passes at once). Unannotated arrivals leave a phase's round unknown; waits on it are then
# judged by phase count (round = phase number), the convention the model pipelines use anyway.

VIRTUAL = -1


def observed_round(bar: BarrierState) -> int:
    """The round a wait passing now observes: the latest completed phase's (by phase count if unannotated)."""
    if bar.completed == 0:
        return VIRTUAL
    return bar.done_round if bar.done_round is not None else bar.completed - 1


def _meant_phase(bar: BarrierState, completion: int) -> int | None:
    """The phase number a wait for ``completion`` means, as far as the barrier's rounds tell (None: unknown)."""
    if completion < 0:
        return VIRTUAL
    if bar.completed and completion == observed_round(bar):
        return bar.completed - 1
    if bar.round is None or completion == bar.round:
        return bar.completed if completion > observed_round(bar) else None
    return None


def passes(bar: BarrierState, parity: int) -> bool:
    """Whether ``try_wait.parity parity`` succeeds now."""
    return (bar.completed & 1) != parity


class OverArrival(Exception):
    """An arrive asked for more arrivals than the current phase still needs."""


def note_narrow(bar: BarrierState, who: str, scope: Any, knowledge: Knowledge) -> BarrierState:
    """Record an arrival whose release is too narrow to reach the barrier's CTA (it publishes nothing)."""
    kept = tuple(entry for entry in bar.narrow if entry[0] != who)
    return bar._replace(narrow=(*kept, (who, scope, knowledge)))


def arrive(
    bar: BarrierState,
    count: int,
    knowledge: Knowledge,
    expect_tx: int = 0,
    completion: int | None = None,
    who: str = "",
    remote: bool = False,
) -> BarrierState:
    """``count`` arrivals (and ``expect_tx`` more outstanding bytes) into the current phase, for ``completion``.

    ``remote``: the arriver runs in another CTA of the cluster (what it knew goes to :attr:`BarrierState.remote`).
    """
    if count > bar.pending:
        raise OverArrival(f"{count} arrivals with only {bar.pending} of {bar.expected} pending")
    if remote:
        far = join(bar.remote_gathered, knowledge)
        return _update(bar, bar.pending - count, bar.tx + expect_tx, bar.gathered, completion, far)
    return _update(bar, bar.pending - count, bar.tx + expect_tx, join(bar.gathered, knowledge), completion)


def _update(
    bar: BarrierState,
    pending: int,
    tx: int,
    gathered: Knowledge,
    completion: int | None,
    remote_gathered: Knowledge | None = None,
) -> BarrierState:
    """The barrier after an arrival or delivered bytes: one construction (this runs on every move)."""
    expected, completed, _, _, published, _, round_, done_round, narrow, remote, far = bar
    if remote_gathered is not None:
        far = remote_gathered
    if round_ is None:
        round_ = completion
    if pending == 0 and tx == 0:
        return BarrierState(
            expected, completed + 1, expected, 0, gathered, EMPTY_KNOWLEDGE, None, round_, narrow, far, EMPTY_KNOWLEDGE
        )
    return BarrierState(expected, completed, pending, tx, published, gathered, round_, done_round, narrow, remote, far)


def complete_tx(
    bar: BarrierState, nbytes: int, knowledge: Knowledge, completion: int | None = None, who: str = ""
) -> BarrierState:
    """An asynchronous copy delivered ``nbytes`` to this barrier's transaction count."""
    return _update(bar, bar.pending, bar.tx - nbytes, join(bar.gathered, knowledge), completion)


def status(bar: BarrierState) -> str:
    """Where the barrier stands, for messages."""
    arrived = bar.expected - bar.pending
    text = f"{bar.completed} phase(s) completed; phase #{bar.completed} has {arrived} of {bar.expected} arrivals"
    if bar.tx:
        text += f" and {bar.tx} transaction bytes outstanding"
    return text


def arrival_problem(
    bar: BarrierState, completion: int | None, count: int, what: str = "arrivals"
) -> tuple[str, str] | None:
    """Judge ``count`` arrivals (or bytes) meant for ``completion``: ``(kind name, detail)`` or None when fine.

    Judged on rounds, not on the phase count: the arrivals of one phase must mean one completion, and a
    completion whose phase already completed gets no more arrivals.
    """
    if completion is None:
        return None
    done = bar.done_round if bar.done_round is not None else (bar.completed - 1 if bar.completed else None)
    if (bar.round is None or completion == bar.round) and (done is None or completion > done):
        return None
    if done is not None and completion <= done:
        got = f"expected {bar.expected}, got {bar.expected + count}" if what == "arrivals" else f"{count} more bytes"
        return (
            "OVER_ARRIVAL",
            f"more {what} for completion #{completion} than the barrier expects ({got}): that completion's phase "
            f"had already completed, so these {what} land in phase #{bar.completed}"
            + (f", which earlier arrivals opened for completion #{bar.round}" if bar.round is not None else ""),
        )
    ahead, behind = (what, "earlier arrivals") if completion > bar.round else ("earlier arrivals", what)
    return (
        "PHASE_ALIASING",
        f"phase #{bar.completed} mixes two rounds: it holds arrivals for completion #{bar.round}, and {what} for "
        f"completion #{completion} now land in it — the {ahead} are a full round ahead of the {behind}, so the "
        "phase completes with arrivals of two rounds",
    )


def late_wait_problem(bar: BarrierState, parity: int, completion: int | None) -> str | None:
    """A waiter that can no longer observe the completion it means to: the barrier moved past it."""
    if completion is None or bar.completed == 0:
        return None
    latest = observed_round(bar)
    phases = f"{bar.completed} phase(s) completed in all" if bar.completed > 1 else "before this wait"
    if completion < 0:
        return (
            f"it waits for the fresh barrier's free first pass (completion #-1, parity {parity}), but phase #0 "
            f"has already completed ({phases}): its parity now names a later phase, so it hangs or passes on the "
            "wrong one — an arrival came before the first wait it was meant to follow"
        )
    if completion >= latest:
        return None
    return (
        f"it waits for completion #{completion} (parity {parity}), but the barrier's latest completed phase "
        f"#{bar.completed - 1} is already completion #{latest}: a parity wait sees only the latest phase, so it "
        "hangs or passes on the wrong one — another agent ran a full round ahead"
    )


def stale_pass_problem(bar: BarrierState, parity: int, completion: int | None) -> str | None:
    """A wait that passes now, but not on the completion it means to observe (its parity aliases)."""
    if completion is None or not passes(bar, parity):
        return None
    seen = observed_round(bar)
    if (completion < 0) == (seen < 0) and (completion < 0 or completion == seen):
        return None
    if seen < 0:
        return (
            f"it passes a wait for completion #{completion} (parity {parity}) on the fresh barrier's free first pass "
            "(the virtual completion #-1, which every parity-1 wait sees before phase #0 completes): nothing has "
            "completed yet"
        )
    age = "stale" if seen < completion else "later"
    return (
        f"it passes a wait for completion #{completion} (parity {parity}) on phase #{bar.completed - 1}, the {age} "
        f"completion #{seen}, which has the same parity"
    )


def parity_hint(parity: int, completion: int | None, bar: BarrierState | None = None) -> str:
    """A note when a waiter's parity cannot match the completion it means to observe."""
    if completion is None:
        return ""
    meant = _meant_phase(bar, completion) if bar is not None else (VIRTUAL if completion < 0 else completion)
    if meant is None or (meant & 1) == parity:
        return ""
    return (
        f" — its parity {parity} does not match completion #{completion} (parity {meant & 1}): "
        "is the cursor's start phase or phase flip wrong (a producer starts at phase 1, a consumer at 0)?"
    )


class FlagState(NamedTuple):
    """A binary flag (Ascend ``set_flag``/``wait_flag``) and what its setter knew."""

    is_set: bool
    published: Knowledge

    @classmethod
    def fresh(cls, is_set: bool = False) -> FlagState:
        return cls(is_set, EMPTY_KNOWLEDGE)


class DoubleSet(Exception):
    """``set_flag`` on a flag that is already set (undefined behaviour on Ascend)."""


def set_flag(flag: FlagState, knowledge: Knowledge) -> FlagState:
    if flag.is_set:
        raise DoubleSet("set_flag on a flag that is already set: a second set before the wait")
    return FlagState(True, knowledge)


def flag_ready(flag: FlagState) -> bool:
    """Whether ``wait_flag`` can pass now (it then clears the flag)."""
    return flag.is_set


def clear_flag(flag: FlagState) -> FlagState:
    return FlagState(False, EMPTY_KNOWLEDGE)
