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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..spec import Completion
from .agent_tree import ROOT
from .ops import Done

if TYPE_CHECKING:
    from .declarations import ModelPipeline
    from .facts import MachineFacts


@dataclass(frozen=True)
class CountProblem:
    """One mismatch: the message, and the declaration lines a finding shows in place of an interleaving."""

    message: str
    lines: tuple[str, ...]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def count_problems(machine: MachineFacts) -> list[CountProblem]:
    """Every count mismatch of ``machine``'s protocol (runs each agent's first steps once)."""
    conclusive = True
    for tree in machine.trees:
        first = tree.child(ROOT, None)
        ends_done = isinstance(tree.op(_last(tree, first)), Done)
        if not (tree.joined or tree.turns or ends_done):
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
            layout.barrier_names[layout.full[spec.name, cta][0]], expected, got, why, players, per_unit, conclusive
        )
        # empty[s]: every releasing consumer unit whose releases reach this CTA's copy.
        arrivals, who, parts = 0, [], []
        for role in spec.consumers:
            if role.name in model.silent:
                continue
            per_unit = role.unit.arrivals * (1 if model.multicast else role.peers)
            sources = model.ctas if model.multicast else (cta,)
            role_players = [p for c in sources for p in _players(machine, spec.name, role.name, c)]
            arrivals += _units(machine, role_players) * per_unit
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


def _judge(
    barrier: str, expected: int, got: int, why: str, players: list[str], per_unit: int | None, conclusive: bool
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
    message = (
        f"{barrier} expects {expected} arrivals per phase ({why}), but the agents declared to arrive on it make "
        f"{got} (expected {expected}, got {got}): {arrivers} — {consequence}; {fix}"
    )
    lines = (f"declared: {barrier} expects {expected} arrivals per phase ({why})", f"arrive on it: {arrivers} → {got}")
    return [CountProblem(message, lines)]


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
            problems += _judge(barrier, role.arrivals, got, why, players, per_unit, conclusive)
    return problems


def _raw(machine: MachineFacts) -> list[CountProblem]:
    problems = []
    for barrier in machine.protocol.barriers:
        if barrier.arrivers is None:
            continue
        got = sum(count for _, count in barrier.arrivers)
        players = [f"{name} ×{count}" for name, count in barrier.arrivers]
        problems += _judge(barrier.name, barrier.expected, got, "declared", players, None, True)
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
            problems.append(CountProblem(message, lines))
    return problems
