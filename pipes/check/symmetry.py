"""Symmetry reduction: interchangeable agents are explored as one orbit.

Eight consumer warps of one role running the same function are interchangeable: a world where warp 3
is ahead of warp 5 behaves exactly like the one where 5 is ahead of 3, with the names swapped. The
explorer therefore keeps one representative per orbit: it maps every world to a canonical *key* — the
world with the agents of each interchangeable class put in a canonical order — and visits a key once.

* **Who is interchangeable.** Agents running the same function (the same function object, or the same
  code over equal closure values and defaults) in the same place and launch. Their operations differ
  only in the agent name they carry (``who``), which the key ignores.
* **Positions across trees.** Each agent's operation tree numbers its nodes in the order it learns
  them, so node numbers mean nothing across agents. Every node gets a *shape* instead: a number
  interned from (parent shape, result, the operation without its agent name), equal for
  interchangeable agents at the same logical point.
* **The key** sorts each class's members by a signature that does not depend on their names (shape,
  bulk engine, what they know with every bit of a fellow member made anonymous), then renames agents
  by that order everywhere: positions, knowledge and reader bitmasks (of cells, barriers, counters,
  loads and stores), launch bits, loads in flight. Two worlds with equal keys are the same world up to
  renaming interchangeable agents, so merging them loses no finding (each finding still comes with a
  concrete interleaving: the search expands representatives, not keys).
* **Safety net.** If two members ever do different things at the same shape (an agent that branches
  on its own name), they were not interchangeable: :class:`SymmetryBroken` is raised and the check
  starts again without that class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from . import memory as mem
from .ops import Crash, Done

if TYPE_CHECKING:
    from .facts import MachineFacts
    from .protocol import Agent
    from .world import World


def _same(value: Any) -> Any:
    return value


class SymmetryBroken(Exception):
    """Two agents assumed interchangeable did different things at the same point."""

    def __init__(self, members: tuple[int, ...]) -> None:
        super().__init__(f"agents {members} are not interchangeable")
        self.members = members


def _behaviour(agent: Agent) -> Hashable | None:
    """What makes two agents behave alike: function code, closure values and defaults (None: unhashable)."""
    fn = agent.fn
    code = getattr(fn, "__code__", None)
    if code is None:
        return ("object", id(fn))
    try:
        cells = tuple(cell.cell_contents for cell in (fn.__closure__ or ()))
        key = (code, cells, fn.__defaults__, tuple(sorted((fn.__kwdefaults__ or {}).items())))
        hash(key)
    except (TypeError, ValueError):  # an unhashable closure value, or an empty cell
        return ("object", id(fn))
    return key


def classes_of(agents: Sequence[Agent], excluded: frozenset[tuple[int, ...]] = frozenset()) -> list[tuple[int, ...]]:
    """The classes of interchangeable agents (two or more members), minus ``excluded`` ones."""
    groups: dict[Hashable, list[int]] = {}
    for index, agent in enumerate(agents):
        key = (_behaviour(agent), agent.place, agent.grid)
        groups.setdefault(key, []).append(index)
    found = [tuple(members) for members in groups.values() if len(members) > 1]
    return [members for members in found if members not in excluded]


def _anonymous(op: Any) -> Hashable:
    """An operation without the agent name it carries (terminal records reduced to their kind)."""
    if isinstance(op, Done):
        return ("done", bool(op.problems))
    if isinstance(op, Crash):
        return ("crash",)
    if dataclasses.is_dataclass(op) and any(f.name == "who" for f in dataclasses.fields(op)):
        return dataclasses.replace(op, who="")
    return op


class _Renaming:
    """One renaming of agents applied to world parts, memoised by the parts' identity.

    World parts are interned and shared by many states, so each is renamed once per renaming; the memo
    keeps the part alive, so its identity stays valid.
    """

    def __init__(self, remap: Any) -> None:
        self.remap = remap
        self._memo: dict[int, tuple[Any, Any]] = {}

    def _cached(self, part: Any, how: Any) -> Any:
        hit = self._memo.get(id(part))
        if hit is not None and hit[0] is part:
            return hit[1]
        result = how(part)
        self._memo[id(part)] = (part, result)
        return result

    def know(self, knowledge: tuple) -> tuple:
        if not knowledge:
            return knowledge
        remap = self.remap
        return self._cached(knowledge, lambda k: tuple((c, v, remap(r)) for c, v, r in k))

    def barrier(self, bar: Any) -> Any:
        if not bar.published and not bar.gathered:
            return bar
        return self._cached(bar, lambda b: b._replace(published=self.know(b.published), gathered=self.know(b.gathered)))

    def cells(self, cells: tuple) -> tuple:
        remap = self.remap
        return self._cached(
            cells, lambda cs: tuple((name, cell._replace(readers=remap(cell.readers))) for name, cell in cs)
        )


class Symmetry:
    """Canonical keys of worlds for one machine's interchangeable agents."""

    def __init__(self, machine: MachineFacts, classes: list[tuple[int, ...]]) -> None:
        self.machine = machine
        self.classes = classes
        count = len(machine.names)
        self.count = count
        self.class_of = {a: members for members in classes for a in members}
        self._shapes: dict[tuple[int, Hashable, Hashable], int] = {}
        self._followers: dict[tuple[tuple[int, ...], int, Hashable], int] = {}
        for agent, tree in enumerate(machine.trees):
            tree.shaper = self._shaper(agent)
        # Kinds of per-agent bits in a mask (read, engine read, fenced, writer, read again, released); bit 4n
        # (a version's writer fenced it) is global.
        self._kinds = (0, 1, 2, 3, mem.REREAD, mem.RELEASED)
        self._identity = list(range(count))
        self._renamings: dict[tuple[int, ...], _Renaming] = {}
        self._anonymous_memo: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._signature_memo: dict[tuple, tuple[Any, Any, Any]] = {}

    # -- shapes ---------------------------------------------------------------------------------------
    def _shaper(self, agent: int):
        members = self.class_of.get(agent)

        def shape(parent: int, key: Hashable, op: Any) -> int:
            anonymous = _anonymous(op)
            number = self._shapes.setdefault((parent, key, anonymous), len(self._shapes) + 1)
            if members is not None:
                # Interchangeable agents must do the same thing after the same results.
                seen = self._followers.setdefault((members, parent, key), number)
                if seen != number:
                    raise SymmetryBroken(members)
            return number

        return shape

    # -- keys -----------------------------------------------------------------------------------------
    def key(self, world: World) -> Hashable:
        """The canonical key of ``world``: its agents renamed so that each class is in canonical order.

        Parts that name no agent are kept as they are (so a world already in order costs little); node
        numbers become shapes; the rest is renamed.
        """
        trees = self.machine.trees
        positions = world.positions
        order = list(self._identity)  # order[new] = old: the agent whose state goes to index ``new``
        for members in self.classes:
            shapes = [trees[a].nodes[positions[a]].shape for a in members]
            if len(set(shapes)) == len(shapes):
                ranked = [a for _, a in sorted(zip(shapes, members, strict=True))]
            else:  # a tie in position: order by everything that does not name them
                ranked = sorted(members, key=lambda a: self._signature(world, a, members))
            for slot, agent in zip(members, ranked, strict=True):
                order[slot] = agent
        shapes_key = tuple(trees[old].nodes[positions[old]].shape for old in order)
        if order == self._identity:
            remap = know = _same
            barriers, cells, knowledge, launched = world.barriers, world.cells, world.knowledge, world.launched
            rename = self._identity
        else:
            rename = [0] * self.count
            for new, old in enumerate(order):
                rename[old] = new
            renaming = self._renaming(tuple(rename))
            remap, know = renaming.remap, renaming.know
            barriers = tuple(renaming.barrier(bar) for bar in world.barriers)
            cells = renaming.cells(world.cells)
            knowledge = tuple(know(world.knowledge[old]) for old in order)
            launched = remap(world.launched) if world.launched else 0
        engines = tuple(self._engine(world.engines[old], old, know) for old in order)
        loads = tuple(sorted(self._load(load, rename, know) for load in world.loads)) if world.loads else ()
        counters = tuple(self._counter(c, know, rename) for c in world.counters) if world.counters else ()
        return (shapes_key, barriers, world.flags, cells, knowledge, engines, loads, counters, launched)

    def _load(self, load: Any, rename: list[int], know) -> Hashable:
        agent = load.agent
        shape = self.machine.trees[agent].nodes[load.node].shape if agent >= 0 else load.node
        destination = load.label.rsplit("@", 1)[1] if "@" in load.label else ""
        return (
            rename[agent] if agent >= 0 else -1,
            shape,
            destination,
            know(load.knowledge),
            load.cell,
            load.value,
            load.barrier,
            load.nbytes,
            load.completion,
        )

    def _signature(self, world: World, agent: int, members: tuple[int, ...]) -> Hashable:
        knowledge, engine, launched = world.knowledge[agent], world.engines[agent], world.launched >> agent & 1
        # Knowledge and engines are interned and shared by many states: memoise on their identity.
        memo_key = (agent, world.positions[agent], id(knowledge), id(engine), launched)
        hit = self._signature_memo.get(memo_key)
        if hit is not None and hit[0] is knowledge and hit[1] is engine:
            return hit[2]
        tree = self.machine.trees[agent]
        stores = tuple((tree.nodes[s.ident].shape, s.group, s.progress, s.src, s.dst, s.value) for s in engine.stores)
        signature = (
            tree.nodes[world.positions[agent]].shape,
            self._anonymous_knowledge(knowledge, agent, members),
            engine.committed_groups,
            stores,
            launched,
        )
        self._signature_memo[memo_key] = (knowledge, engine, signature)
        return signature

    def _anonymous_knowledge(self, knowledge: tuple, agent: int, members: tuple[int, ...]) -> tuple:
        """``knowledge`` with the agent's own bits and its fellow members' made anonymous (memoised: knowledge
        tuples are interned and shared by many states)."""
        memo = self._anonymous_memo
        hit = memo.get((id(knowledge), agent))
        if hit is not None and hit[0] is knowledge:
            return hit[1]
        anonymous = self._anonymizer(agent, members)
        result = tuple((cell, version, anonymous(readers)) for cell, version, readers in knowledge)
        memo[(id(knowledge), agent)] = (knowledge, result)
        return result

    def _anonymizer(self, agent: int, members: tuple[int, ...]):
        n = self.count
        own = sum(1 << (k * n + agent) for k in self._kinds)
        fellows = sum(1 << (k * n + m) for k in self._kinds for m in members if m != agent)

        def anonymous(mask: int) -> tuple[int, tuple[int, ...]]:
            # Own bits as "self", fellow members' bits counted per kind, every other bit kept.
            mine = tuple((mask >> (k * n + agent)) & 1 for k in self._kinds)
            counted = tuple(sum(mask >> (k * n + m) & 1 for m in members if m != agent) for k in self._kinds)
            return (mask & ~own & ~fellows, mine + counted)

        return anonymous

    def _renaming(self, rename: tuple[int, ...]) -> _Renaming:
        found = self._renamings.get(rename)
        if found is None:
            found = self._renamings[rename] = _Renaming(self._mask_mapper(list(rename)))
        return found

    def _mask_mapper(self, rename: list[int]):
        n = self.count
        cache: dict[int, int] = {}

        def remap(mask: int) -> int:
            done = cache.get(mask)
            if done is not None:
                return done
            out = 0
            rest = mask
            while rest:
                low = rest & -rest
                bit = low.bit_length() - 1
                kind, agent = divmod(bit, n)
                out |= low if kind not in self._kinds else 1 << (kind * n + rename[agent])
                rest ^= low
            cache[mask] = out
            return out

        return remap

    def _engine(self, engine: Any, owner: int, know) -> Hashable:
        if not engine.stores:
            return engine  # equal, as a tuple, to any other idle engine with as many groups
        nodes = self.machine.trees[owner].nodes
        return (
            engine.committed_groups,
            tuple(
                (nodes[s.ident].shape, s.group, s.progress, know(s.knowledge), s.src, s.dst, s.value)
                for s in engine.stores
            ),
        )

    def _counter(self, counter: Any, know, rename: list[int]) -> Hashable:
        names = self.machine.names
        index = self.machine.agent_index

        def release(r: Any) -> Hashable:
            who = names[rename[index[r.who]]] if r.who in index else r.who
            return (r.place, r.scope, who, know(r.knowledge), r.relaxed)

        return (
            counter.value,
            tuple(tuple(release(r) for r in unit) for unit in counter.pending),
            tuple(release(r) for r in counter.published),
        )
