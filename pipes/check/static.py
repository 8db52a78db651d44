"""The static count check: before exploring, compare each barrier's expected arrivals per phase with the
agents declared to arrive on it, and report a mismatch at the declaration.

A wrong count otherwise surfaces late and indirectly — too few arrivers as a deadlock after the search,
too many as a producer running a ring ahead. Who plays which role is learned from each agent's first
steps (the handles it uses and the ordered-barrier groups it joins before its first data read or
``try_`` token; kernels set their roles up front); raw barriers and counters say it in their declaration
(``ModelBarrier(arrivers=...)``, ``ModelCounter(quorum=..., signallers=...)``). An arriver missing from the
first steps can only make a count look too small, so shortfalls are reported only when every agent's
first steps were conclusive; excess is always reported — except among agents that take turns on one
ordered barrier (ping-pong warpgroups consume alternate tiles of one pipeline: one unit per phase).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..spec import Completion
from .agent_tree import ROOT
from .ops import Arrive, CounterTake, CounterWait, Done, TryWait, Wait

if TYPE_CHECKING:
    from .declarations import ModelPipeline
    from .facts import MachineFacts
    from .report import Finding


@dataclass(frozen=True)
class CountProblem:
    """One mismatch: the message, and the declaration lines a finding shows in place of an interleaving."""

    message: str
    lines: tuple[str, ...]
    barriers: tuple[int, ...] = ()
    """The barrier ids the mismatch is on (every slot of it); empty for a counter."""
    counter: int | None = None
    short: bool = True
    """Too few arrivals (a waiter would hang) rather than too many (a phase completes early)."""
    head: str = ""
    """The message up to its consequence (the counts and who arrives), to reword it after the search."""
    undecided: str = ""
    """Why the count check cannot decide (agents taking turns by hand on raw barriers); empty if it can."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def count_problems(machine: MachineFacts, whole: bool = False) -> list[CountProblem]:
    """Every count mismatch of ``machine``'s protocol (runs each agent's first steps once).

    Who plays which role is what the agents did over every run recorded so far: before the search their first
    steps, after an exhaustive search (``whole``) everything each agent can do.
    """
    conclusive = True
    for tree in machine.trees:
        first = tree.child(ROOT, None)
        ends_done = isinstance(tree.op(_last(tree, first)), Done)
        if not (whole or tree.joined or tree.turns or ends_done):
            conclusive = False
    problems = []
    for model in machine.protocol.pipelines:
        if model.spec.completion is not Completion.FLAG:
            problems += _pipeline(machine, model, conclusive)
    problems += _orders(machine, conclusive)
    problems += _raw(machine)
    return problems


def _last(tree, node: int) -> int:
    """The last node of the segment starting at ``node`` that the first recording produced."""
    while tree.nodes[node].children and None in tree.nodes[node].children:
        node = tree.nodes[node].children[None]
    return node


def _players(machine: MachineFacts, pipe: str, side: str, cta: int) -> list[str]:
    return [machine.names[a] for a, tree in enumerate(machine.trees) if (pipe, side, cta) in tree.joined]


def _pipeline(machine: MachineFacts, model: ModelPipeline, conclusive: bool) -> list[CountProblem]:
    spec = model.spec
    layout = machine.layout
    used = any(
        (spec.name, side, cta) in t.joined for t in machine.trees for side in _sides(model) for cta in model.ctas
    )
    if not used:
        return []
    cluster = len(model.ctas) > 1
    problems = []
    for cta in model.ctas:
        # full[s]: the producer units of this CTA's copy.
        producer = spec.producer
        players = _players(machine, spec.name, "producer", cta)
        per_unit = producer.unit.arrivals * (1 if cluster else producer.peers)
        expected = layout.barrier_expected[layout.full[spec.name, cta][0]]
        got = len(players) * per_unit
        why = f"producer '{producer.name}': count {producer.count} × {producer.unit.name} ({producer.unit.arrivals})"
        if not cluster and producer.peers > 1:
            why += f" × {producer.peers} peers"
        problems += _judge(
            layout.barrier_names[layout.full[spec.name, cta][0]],
            expected,
            got,
            why,
            players,
            per_unit,
            conclusive,
            layout.full[spec.name, cta],
        )
        # empty[s]: every releasing consumer unit whose releases reach this CTA's copy.
        arrivals, who, parts, everyone = 0, [], [], []
        for role in spec.consumers:
            if role.name in model.silent:
                continue
            per_unit = role.unit.arrivals * (1 if model.multicast else role.peers)
            sources = model.ctas if model.multicast else (cta,)
            role_players = [p for c in sources for p in _players(machine, spec.name, role.name, c)]
            arrivals += _units(machine, role_players) * per_unit
            everyone += role_players
            if role_players:
                who.append(f"{', '.join(role_players)} (consumer '{role.name}', {_plural(per_unit, 'arrival')} each)")
            parts.append(
                f"consumer '{role.name}': count {role.count} × {role.unit.name} ({role.unit.arrivals})"
                + (f" × {role.peers} peers" if role.peers > 1 else "")
            )
        empty = layout.empty[spec.name, cta][0]
        problems += _judge(
            layout.barrier_names[empty].replace("[0]", "[s]"),
            model.empty_arrivals,
            arrivals,
            " + ".join(parts),
            who,
            None,
            conclusive,
            layout.empty[spec.name, cta],
            _by_hand(machine, everyone),
        )
    return problems


def _units(machine: MachineFacts, players: list[str]) -> int:
    """Units arriving per phase: agents that take turns on one ordered barrier count once (they alternate)."""
    orders: set[str] = set()
    alone = 0
    for name in players:
        taken = {order for order, _ in machine.trees[machine.agent_index[name]].turns}
        if taken:
            orders |= taken
        else:
            alone += 1
    return alone + len(orders)


def _sides(model: ModelPipeline) -> list[str]:
    return ["producer", *(r.name for r in model.spec.consumers)]


def _by_hand(machine: MachineFacts, players: list[str]) -> str:
    """The raw barriers through which two or more of ``players`` take turns by hand (each uses raw barriers, and
    between them they wait on and arrive on them), which the count check cannot follow; empty if they do not."""
    raw = {machine.layout.barrier_ids[b.name] for b in machine.protocol.barriers}
    if len(players) < 2 or not raw:
        return ""
    waits: set[str] = set()
    arrives: set[str] = set()
    for name in players:
        ops = [node.op for node in machine.trees[machine.agent_index[name]].nodes]
        waited = {op.barrier_name for op in ops if isinstance(op, (Wait, TryWait)) and op.barrier in raw}
        arrived = {op.barrier_name for op in ops if isinstance(op, Arrive) and op.barrier in raw}
        if not (waited or arrived):
            return ""  # one of them synchronises with no raw barrier (as far as it was recorded)
        waits |= waited
        arrives |= arrived
    return ", ".join(sorted(waits | arrives)) if waits and arrives else ""


def _judge(
    barrier: str,
    expected: int,
    got: int,
    why: str,
    players: list[str],
    per_unit: int | None,
    conclusive: bool,
    barriers: tuple[int, ...] = (),
    undecided: str = "",
) -> list[CountProblem]:
    if got == expected or (got < expected and not conclusive):
        return []
    barrier = barrier.replace("[0]", "[s]")
    arrivers = "; ".join(players) if per_unit is None else ", ".join(players)
    if not players:
        arrivers = "no agent"
    elif per_unit is not None:
        arrivers = f"{arrivers} ({_plural(per_unit, 'arrival')} each)"
    if got > expected:
        consequence = "a phase completes before all of them arrived, so one side runs a round ahead"
        fix = "declare the count the kernel really runs"
    else:
        consequence = "no phase ever completes: its waiter hangs"
        fix = "run every declared unit, or declare fewer"
    head = (
        f"{barrier} expects {expected} arrivals per phase ({why}), but the agents declared to arrive on it make "
        f"{got} (expected {expected}, got {got}): {arrivers}"
    )
    lines = (f"declared: {barrier} expects {expected} arrivals per phase ({why})", f"arrive on it: {arrivers} → {got}")
    return [CountProblem(f"{head} — {consequence}; {fix}", lines, barriers, None, got < expected, head, undecided)]


def _orders(machine: MachineFacts, conclusive: bool) -> list[CountProblem]:
    problems = []
    for name, (order, barriers) in machine.layout.orders.items():
        groups = {
            g: [machine.names[a] for a, t in enumerate(machine.trees) if (name, g) in t.turns]
            for g in range(order.groups)
        }
        if not any(groups.values()):
            continue
        for group, players in groups.items():
            barrier = machine.layout.barrier_names[barriers[(group + 1) % order.groups]]
            role = order.role
            per_unit = role.unit.arrivals * role.peers
            why = f"one group of role '{role.name}': count {role.count} × {role.unit.name} ({role.unit.arrivals})"
            got = len(players) * per_unit
            ids = tuple(barriers[s * order.groups + (group + 1) % order.groups] for s in range(order.depth))
            problems += _judge(barrier, role.arrivals, got, why, players, per_unit, conclusive, ids)
    return problems


def _raw(machine: MachineFacts) -> list[CountProblem]:
    problems = []
    for barrier in machine.protocol.barriers:
        if barrier.arrivers is None:
            continue
        got = sum(count for _, count in barrier.arrivers)
        players = [f"{name} ×{count}" for name, count in barrier.arrivers]
        ids = (machine.layout.barrier_ids[barrier.name],)
        problems += _judge(barrier.name, barrier.expected, got, "declared", players, None, True, ids)
    for counter in machine.protocol.counters:
        if counter.quorum is None or counter.signallers is None:
            continue
        got = counter.initial + sum(count for _, count in counter.signallers)
        if got < counter.quorum:
            who = ", ".join(f"{name} ×{count}" for name, count in counter.signallers)
            message = (
                f"counter {counter.name}: its readers wait for a quorum of {counter.quorum}, but it starts at "
                f"{counter.initial} and its declared signallers ({who}) add only {got - counter.initial}: it never "
                f"reaches {counter.quorum} (expected {counter.quorum}, got {got}) — a waiter hangs"
            )
            lines = (
                f"declared: {counter.name} quorum {counter.quorum}, initial {counter.initial}",
                f"signallers: {who}",
            )
            head = message.split(" — ")[0]
            counter_id = machine.layout.counter_ids[counter.name]
            problems.append(CountProblem(message, lines, (), counter_id, True, head))
    return problems


def _waited(machine: MachineFacts, problem: CountProblem) -> bool:
    """Whether any agent, in anything it was recorded doing, waits for a phase of the problem's barrier (or its
    counter) to complete: a wait for the phase before the first (a producer's free first round) needs none."""
    ids = set(problem.barriers)
    for tree in machine.trees:
        for node in tree.nodes:
            op = node.op
            if isinstance(op, (Wait, TryWait)) and op.barrier in ids and (op.completion is None or op.completion >= 0):
                return True
            if isinstance(op, (CounterWait, CounterTake)) and op.counter == problem.counter:
                return True
    return False


def _names(machine: MachineFacts, problem: CountProblem) -> list[str]:
    if problem.counter is not None:
        return [machine.layout.counters[problem.counter].name]
    return [machine.layout.barrier_names[b] for b in problem.barriers]


def _shown(machine: MachineFacts, problem: CountProblem, found: list[Finding]) -> list[Finding]:
    """The search's errors on the problem's barrier: a deadlock or phase aliasing on it for too few arrivals,
    any error naming it for too many."""
    from .report import FindingKind, Severity

    # Compared with the numbers stripped, as the search keeps findings (one per site: slots and CTAs alike).
    patterns = [re.compile(re.escape(_stripped(name)) + r"(?![\w@\[])") for name in _names(machine, problem)]
    hangs = (FindingKind.DEADLOCK, FindingKind.PHASE_ALIASING)
    return [
        f
        for f in found
        if f.severity is Severity.ERROR
        and f.kind is not FindingKind.ARRIVAL_COUNT
        and (not problem.short or f.kind in hangs)
        and any(p.search(_stripped(f.message)) for p in patterns)
    ]


def _stripped(text: str) -> str:
    return re.sub(r"\d+", "#", text)


def settle(
    machine: MachineFacts,
    before: list[CountProblem],
    found: list[Finding],
    exhaustive: bool,
    states: int,
    bound: int,
) -> tuple[list[Finding], list[Finding]]:
    """The count findings to report once the search is over, given what it ``found``.

    ``before``: the mismatches seen before the search. Returns the errors (reported first) and the notes (last).

    After a complete search (exhaustive, no error cut a path short) the counts are judged again with the roles
    each agent played in everything it can do (not only its first steps). Then: a mismatch the search confirms (a
    deadlock on the barrier for too few arrivals, any error on it for too many) is an ``ARRIVAL_COUNT`` error as
    before; too few arrivals on a barrier no agent ever waits on is no finding (nothing can hang: a loop of zero
    trips); one a complete search contradicts is a ``STATIC_MISMATCH`` note stating both facts; otherwise it stays
    an error worded as a risk — a note if the agents take turns by hand on raw barriers, which the count check
    cannot follow (the search decides).
    """
    from .report import Finding, FindingKind, Severity

    # Complete: every interleaving ran to its end (no bound, no error cut a path short), so each agent's tree
    # holds everything it can do. Otherwise only mismatches seen before the search are judged again.
    complete = exhaustive and not any(f.severity is Severity.ERROR for f in found)
    seen = {(p.barriers, p.counter) for p in before}
    problems = [p for p in count_problems(machine, whole=complete) if complete or (p.barriers, p.counter) in seen]
    if exhaustive:
        scope = "the search stopped at the errors below before it could show it (not a proof either way)"
    else:
        scope = f"the search was bounded at {bound} states and did not show it (not a proof either way)"
    settled: list[Finding] = []
    for problem in problems:
        if problem.short and complete and not _waited(machine, problem):
            continue
        if _shown(machine, problem, found):
            settled.append(Finding(FindingKind.ARRIVAL_COUNT, problem.message, problem.lines, ()))
            continue
        if complete:
            effect = (
                "every phase completed: no agent hangs on it"
                if problem.short
                else "no phase completed before all its arrivals were in: no agent runs ahead on it"
            )
            by_hand = f" (they take turns by hand on {problem.undecided})" if problem.undecided else ""
            message = (
                f"{problem.head}{by_hand}; the search explored every interleaving ({states} states) and {effect} — "
                "the declared count is not what the agents make per phase, check the declaration"
            )
            settled.append(Finding(FindingKind.STATIC_MISMATCH, message, problem.lines, ()))
            continue
        if problem.short:
            risk = f"a risk: if that is what runs, no phase completes and its waiter would hang; {scope}"
        else:
            risk = f"a risk: if that is what runs, a phase completes before all of them arrived; {scope}"
        if problem.undecided:
            message = (
                f"{problem.head} — they take turns by hand on {problem.undecided}, which the count check cannot "
                f"follow, so the search decides; {scope}"
            )
            settled.append(Finding(FindingKind.STATIC_MISMATCH, message, problem.lines, ()))
        else:
            settled.append(Finding(FindingKind.ARRIVAL_COUNT, f"{problem.head} — {risk}", problem.lines, ()))
    once: dict[tuple[FindingKind, str], Finding] = {}
    for finding in settled:  # one per site, as the search keeps its own
        once.setdefault((finding.kind, _stripped(finding.message)), finding)
    errors = [f for f in once.values() if f.severity is Severity.ERROR]
    return errors, [f for f in once.values() if f.severity is not Severity.ERROR]
