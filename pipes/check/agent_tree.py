"""What an agent does, as a tree of operations keyed by the results it got (built lazily).

An agent is a deterministic function of the results of its operations. Instead of a thread per agent,
the checker records the agent's operations by running its function against a recording context: the
run goes on through operations whose result is fixed (arrive, write, a blocking wait) and stops at the
first one whose result depends on the interleaving (a ``try_wait`` token, a data read). To learn what
the agent does after result ``r`` there, the function is run again from the start with the results so
far scripted and ``r`` appended. Each node of the tree is one operation; its children are keyed by the
result. Nodes are numbered, so an agent's position in the exploration is one int.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProtocolError
from .context import Ctx
from .layout import Layout
from .ops import Crash, Done, Start
from .protocol import Agent

ROOT = 0


class _Suspend(BaseException):
    """Stops a recording run at an operation whose result is not known yet (not an agent error)."""


class _TooLong(BaseException):
    """Stops a recording run that exceeded the operation limit."""


class _Spin(BaseException):
    """Stops a recording run that polls the same barrier over and over."""


#: Identical polls in a row after which an agent counts as spinning.
MAX_POLLS = 8


@dataclass
class _Node:
    op: Any
    parent: int
    key: Any
    children: dict[Any, int] = field(default_factory=dict)
    shape: int = 0
    """The node's logical place, shared by interchangeable agents (:mod:`pipes.check.symmetry`)."""


class AgentTree:
    """The lazily built tree of one agent's operations; node ``ROOT`` is a :class:`~pipes.check.ops.Start`."""

    def __init__(self, agent: Agent, layout: Layout, max_ops: int = 20_000) -> None:
        self.agent = agent
        self._layout = layout
        self._max_ops = max_ops
        self.nodes: list[_Node] = [_Node(Start(), -1, None)]
        self.runs = 0
        #: Pipeline roles and ordered-barrier groups the agent took part in, over every run so far.
        self.joined: set[tuple[str, str, int]] = set()
        self.turns: set[tuple[str, int]] = set()
        #: Numbers each new node's shape from (parent shape, result, operation); None: no symmetry.
        self.shaper: Callable[[int, Any, Any], int] | None = None

    def op(self, node: int) -> Any:
        return self.nodes[node].op

    def child(self, node: int, result: Any) -> int:
        """The node after ``node`` produced ``result`` (running the agent again if not known yet)."""
        try:
            known = self.nodes[node].children.get(result)
        except TypeError as exc:  # unhashable result
            raise ProtocolError(f"agent {self.agent.name!r}: values read must be hashable, got {result!r}") from exc
        if known is not None:
            return known
        return self._expand(node, result)

    def _path(self, node: int) -> list[int]:
        path = []
        while node != ROOT:
            path.append(node)
            node = self.nodes[node].parent
        path.reverse()
        return path

    def _expand(self, node: int, result: Any) -> int:
        path = self._path(node)
        expected = [self.nodes[n].op for n in path]
        script = [self.nodes[n].key for n in path[1:]] + ([result] if path else [])
        recorded, ending = self._record(expected, script)
        parent, key = node, result
        first = -1
        for op in [*recorded, *([ending] if ending is not None else [])]:
            shape = self.shaper(self.nodes[parent].shape, key, op) if self.shaper is not None else 0
            self.nodes.append(_Node(op, parent, key, shape=shape))
            new = len(self.nodes) - 1
            self.nodes[parent].children[key] = new
            if first < 0:
                first = new
            parent, key = new, None
        return first

    def _record(self, expected: list[Any], script: list[Any]) -> tuple[list[Any], Any]:
        """Run the agent with ``script`` as the results of its first operations; record what follows.

        Returns the operations after the script and the terminal record (:class:`Done` or
        :class:`Crash`), or None when the run stopped at a branching operation (the last recorded).
        """
        self.runs += 1
        recorded: list[Any] = []
        position = 0
        repeats = 0
        name = self.agent.name

        def emit(op: Any) -> Any:
            nonlocal position, repeats
            index = position
            position += 1
            # A poll repeated with nothing in between is a spin loop: every repetition would be a new
            # branch (and a new run), so stop it early with a clear error.
            previous = expected[index - 1] if 0 < index <= len(expected) else (recorded[-1] if recorded else None)
            repeats = repeats + 1 if op.branching and op == previous else 0
            if repeats >= MAX_POLLS:
                raise _Spin
            if index < len(script):
                if op != expected[index]:
                    raise ProtocolError(
                        f"agent {name!r} is not deterministic: operation {index + 1} was "
                        f"{expected[index].describe()!r}, now {op.describe()!r} with the same results before it"
                    )
                return script[index]
            recorded.append(op)
            if op.branching:
                raise _Suspend
            if index >= self._max_ops:
                raise _TooLong
            return None

        ctx = Ctx(name, self._layout, emit, self.agent.place)
        try:
            return self._run(ctx, recorded, script, lambda: position)
        finally:
            self.joined |= ctx.joined
            self.turns |= ctx.turns

    def _run(self, ctx: Ctx, recorded: list[Any], script: list[Any], position: Any) -> tuple[list[Any], Any]:
        name = self.agent.name
        try:
            self.agent.fn(ctx)
        except _Suspend:
            return recorded, None
        except _Spin:
            return recorded, Crash(
                f"ProtocolError: it repeats the same poll {MAX_POLLS} times in a row — a spin on "
                "try_wait/try_acquire; use the token with a blocking wait instead"
            )
        except _TooLong:
            return recorded, Crash(
                f"ProtocolError: more than {self._max_ops} operations — does it spin on try_wait/try_acquire? "
                "(use the token with a blocking wait instead)"
            )
        except Exception as exc:  # noqa: BLE001 - any agent error becomes a finding, not a checker crash
            return recorded, Crash(f"{type(exc).__name__}: {exc}")
        if position() < len(script):
            return recorded, Crash(
                f"ProtocolError: agent {name!r} is not deterministic: it returned after {position()} operations, "
                f"before {len(script)} it made with the same results"
            )
        return recorded, Done(ctx.outstanding())
