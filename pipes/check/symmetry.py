"""Symmetry reduction: interchangeable agents are explored as one orbit.

Eight consumer warps of one role running the same function are interchangeable: a world where warp 3
is ahead of warp 5 behaves exactly like the one where 5 is ahead of 3, with the names swapped. The
explorer therefore keeps one representative per orbit: it maps every world to a canonical *key* — the
world with the agents of each interchangeable class put in a canonical order — and visits a key once.

* **Who is interchangeable.** Agents running the same function in the same place and launch: the same
  function object, or functions alike in structure (:class:`_Fingerprint`: equal bytecode, constants and
  names — one closure factory called per agent, or two identical ``def`` statements — over the same globals, with
  equal closure values, defaults and bound ``self``; anything that cannot be compared is compared by
  identity). Their operations differ only in the agent name they carry (``who``), which the key ignores.
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
import functools
import types
from collections.abc import Hashable, Sequence
from enum import Enum
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


#: Names whose use lets a function see where or how it was written (its name, file, lines, frames): a
#: function whose code uses one is compared with its name and place in the source too.
_INTROSPECTION = frozenset(
    {
        "__name__", "__qualname__", "__module__", "__code__", "__doc__", "__dict__", "__defaults__",
        "__kwdefaults__", "__closure__", "__globals__", "__wrapped__", "__annotations__", "__self__",
        "__func__", "__traceback__", "co_name", "co_qualname", "co_filename", "co_firstlineno", "co_lines",
        "co_positions", "f_code", "f_lineno", "f_back", "f_locals", "f_globals", "tb_frame", "tb_lineno",
        "_getframe", "currentframe", "stack", "getframeinfo", "extract_stack", "format_stack", "print_stack",
        "inspect", "traceback", "sys",
    }
)  # fmt: skip

#: Values compared by type and value: immutable, and equal values of one type behave alike.
_ATOMS = (type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis))

#: How deep captured values are followed before one is compared by identity.
_DEPTH = 24


class _Fingerprint:
    """What makes two callables behave alike, as a hashable value: equal fingerprints, same behaviour.

    A function is its code (compared by content: bytecode, constants, names — so two separately
    ``def``-ined identical bodies match, whatever they are called, unless their code looks at its own name
    or source position), its module's globals (the same dictionary), and its closure cells, defaults and
    attributes compared by value. Values are compared by type and value where that is sound (numbers,
    strings, containers of such, frozen dataclasses, functions — followed recursively), otherwise by
    hashable equality (``==`` of the value's own type), otherwise by identity. When in doubt: identity,
    i.e. not interchangeable.
    """

    def __init__(self) -> None:
        self._active: dict[int, int] = {}  # id → depth of the objects being fingerprinted (cycles)
        self._keep: list[Any] = []  # keeps objects compared by identity alive, so their ids stay unique

    def _identity(self, value: Any) -> Hashable:
        self._keep.append(value)
        return ("id", id(value))

    def of(self, value: Any, depth: int = 0) -> Hashable:
        kind = type(value)
        if kind in _ATOMS:
            return (kind, value)
        if isinstance(value, Enum):
            return self._identity(value)
        cycle = self._active.get(id(value))
        if cycle is not None:
            return ("cycle", depth - cycle)
        if depth > _DEPTH:
            return self._identity(value)
        self._active[id(value)] = depth
        try:
            return self._compound(value, kind, depth + 1)
        finally:
            del self._active[id(value)]

    def _compound(self, value: Any, kind: type, depth: int) -> Hashable:
        of = self.of
        if kind is types.FunctionType:
            return self._function(value, depth)
        if kind is types.MethodType:
            return ("method", of(value.__func__, depth), of(value.__self__, depth))
        if kind is functools.partial:
            return ("partial", of(value.func, depth), of(value.args, depth), of(value.keywords, depth))
        if kind is types.CodeType:
            return self._code(value, depth)
        if kind in (tuple, list) or (isinstance(value, tuple) and hasattr(kind, "_fields")):  # namedtuples
            return (kind, tuple(of(item, depth) for item in value))
        if kind is dict:  # iteration order is observable: kept
            return (dict, tuple((of(k, depth), of(v, depth)) for k, v in value.items()))
        if kind in (set, frozenset):  # iteration order too: two equal sets iterated differently differ
            return (kind, tuple(of(item, depth) for item in value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and kind.__dataclass_params__.frozen:
            extra = set(vars(value)) - {f.name for f in dataclasses.fields(value)} if hasattr(value, "__dict__") else ()
            if not extra:
                return (kind, tuple(of(getattr(value, f.name), depth) for f in dataclasses.fields(value)))
        if isinstance(value, (type, types.ModuleType, types.BuiltinFunctionType)):
            return self._identity(value)
        try:
            hash(value)
        except TypeError:
            return self._identity(value)
        return ("value", kind, value)  # equal by the value's own ``==`` (as the same function object would be)

    def _function(self, fn: types.FunctionType, depth: int) -> Hashable:
        of = self.of
        cells = []
        for cell in fn.__closure__ or ():
            try:
                cells.append(of(cell.cell_contents, depth))
            except ValueError:  # an empty cell: it may be filled later, by anyone holding it
                cells.append(self._identity(cell))
        code = fn.__code__
        where = (fn.__name__, fn.__qualname__, fn.__module__) if _introspective(code) else ()
        return (
            "function",
            self._code(code, depth),
            self._identity(fn.__globals__),
            tuple(cells),
            of(fn.__defaults__, depth),
            of(fn.__kwdefaults__, depth),
            of(fn.__dict__, depth) if fn.__dict__ else (),
            where,
        )

    def _code(self, code: types.CodeType, depth: int) -> Hashable:
        where = ()
        if _introspective(code):  # it may look at its own name or position: compare those too
            qualname = getattr(code, "co_qualname", "")  # Python 3.11+
            where = (code.co_name, qualname, code.co_filename, code.co_firstlineno, code.co_linetable)
        consts = tuple(self._code(c, depth) if type(c) is types.CodeType else self.of(c, depth) for c in code.co_consts)
        return (
            "code",
            code.co_code,
            consts,
            code.co_names,
            code.co_varnames,
            code.co_freevars,
            code.co_cellvars,
            code.co_argcount,
            code.co_posonlyargcount,
            code.co_kwonlyargcount,
            code.co_nlocals,
            code.co_stacksize,
            code.co_flags,
            getattr(code, "co_exceptiontable", b""),
            where,
        )


@functools.lru_cache(maxsize=1024)
def _introspective(code: types.CodeType) -> bool:
    """Whether ``code`` (or code nested in it) names something that reveals its name or source position."""
    if not _INTROSPECTION.isdisjoint(code.co_names) or not _INTROSPECTION.isdisjoint(code.co_varnames):
        return True
    return any(type(c) is types.CodeType and _introspective(c) for c in code.co_consts)


def _behaviour(agent: Agent, fingerprint: _Fingerprint | None = None) -> Hashable:
    """What makes two agents behave alike (see :class:`_Fingerprint`); the function object itself when its
    structure cannot be compared."""
    fn = agent.fn
    try:
        key = (fingerprint or _Fingerprint()).of(fn)
        hash(key)
    except Exception:  # noqa: BLE001 — anything odd about a value: fall back to identity
        return ("object", id(fn))
    return key


def classes_of(agents: Sequence[Agent], excluded: frozenset[tuple[int, ...]] = frozenset()) -> list[tuple[int, ...]]:
    """The classes of interchangeable agents (two or more members), minus ``excluded`` ones."""
    groups: dict[Hashable, list[int]] = {}
    fingerprint = _Fingerprint()  # one for all agents: what it compares by identity stays alive meanwhile
    behaviours: dict[int, Hashable] = {}  # the same function object always gets the same key
    for index, agent in enumerate(agents):
        if id(agent.fn) not in behaviours:
            behaviours[id(agent.fn)] = _behaviour(agent, fingerprint)
        key = (behaviours[id(agent.fn)], agent.place, agent.grid)
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
        if not bar.published and not bar.gathered and not bar.remote and not bar.remote_gathered:
            return bar
        know = self.know
        return self._cached(
            bar,
            lambda b: b._replace(
                published=know(b.published),
                gathered=know(b.gathered),
                remote=know(b.remote),
                remote_gathered=know(b.remote_gathered),
            ),
        )

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
        return (shapes_key, barriers, world.flags, cells, knowledge, engines, loads, counters, launched, world.peeks)

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
