"""The facts one protocol compiles to, before any world is explored.

:class:`MachineFacts` is what :class:`~pipes.check.machine.Machine` derives from a
:class:`~pipes.check.protocol.Protocol` in its constructor. :mod:`.move` (one move's effects),
:mod:`.static` (the count checks before exploring) and :mod:`.symmetry` (canonical keys) read these facts;
the machine is a :class:`MachineFacts` that also lists and applies moves, so none of them imports it.
"""

from __future__ import annotations

from typing import Any

from . import memory as mem
from . import scope as sc
from .agent_tree import AgentTree
from .ops import Done
from .protocol import Protocol, compile_layout
from .world import World


class MachineFacts:
    """What :class:`~pipes.check.machine.Machine` derives from one protocol before exploring: the compiled
    layout, each agent's operation tree, names and indices, grid dependencies, the CTAs' residents, and the
    questions about a world that only these facts answer (who finished, whether a CTA exited, whether a
    release reaches a barrier).

    A leaf below the machine: :mod:`.move`, :mod:`.static` and :mod:`.symmetry` read these facts instead of
    importing the machine that moves through worlds.
    """

    def __init__(self, protocol: Protocol, reduction: bool = True, max_ops: int = 20_000) -> None:
        self.protocol = protocol
        self.layout = compile_layout(protocol)
        self.trees = [AgentTree(agent, self.layout, max_ops) for agent in protocol.agents]
        self.names = [agent.name for agent in protocol.agents]
        self.agent_index = {name: i for i, name in enumerate(self.names)}
        self.reduction = reduction
        self._interned: dict[Any, Any] = {}
        self._reach: dict[tuple[Any, int, int], bool] = {}
        grids = self.layout.grids
        #: Per agent: the agents of earlier grids (the launches it depends on), as a bitmask.
        self.earlier = [sum(1 << b for b, g in enumerate(grids) if g < grids[a]) for a in range(len(grids))]
        hosted: dict[sc.Place, int] = {}
        for agent, place in enumerate(self.layout.places):
            hosted[place] = hosted.get(place, 0) | 1 << agent
        #: Per barrier: the agents placed in its CTA, as a bitmask (0: a CTA that hosts no agent never exits).
        self.residents = [hosted.get(place, 0) for place in self.layout.barrier_places]

    def finished(self, world: World) -> int:
        """Bitmask of the agents whose function returned."""
        return sum(1 << a for a, node in enumerate(world.positions) if type(self.trees[a].op(node)) is Done)

    def exited(self, world: World, barrier: int, visitor: int) -> str | None:
        """Whether ``barrier``'s CTA has exited — every agent placed in it finished — when ``visitor`` (an agent
        of another CTA) writes into it: the message naming what landed, or None while the CTA still runs."""
        residents = self.residents[barrier]
        if not residents or residents >> visitor & 1:
            return None
        members = [a for a in range(len(self.names)) if residents >> a & 1]
        if any(type(self.trees[a].op(world.positions[a])) is not Done for a in members):
            return None
        return (
            f"{self.layout.barrier_places[barrier]}, after every agent of that CTA finished "
            f"({', '.join(self.names[a] for a in members)}): the CTA has exited, and a remote arrive or write into "
            "an exited CTA's shared memory fails the launch (unspecified launch failure) — the CTA's producer must "
            "wait for every slot's empty barrier before it exits: producer.tail(); for a hand-written pipeline, the "
            "same wait or a cluster barrier before exit"
        )

    def reader_names(self, mask: int) -> str:
        count = len(self.names)
        kinds = {0: "{}", 1: "{}'s TMA store", 2: "{} (fenced)", mem.REREAD: "{} (after its release)"}
        names = []
        for bit in range((mem.REREAD + 1) * count):
            if mask >> bit & 1 and bit // count in kinds:
                names.append(kinds[bit // count].format(self.names[bit % count]))
        return ", ".join(names)

    def reaches(self, scope: sc.Scope, agent: int, barrier: int) -> bool:
        """Whether ``agent``'s release at ``scope`` reaches ``barrier``'s CTA (memoised: it runs on every arrive)."""
        key = (scope, agent, barrier)
        known = self._reach.get(key)
        if known is None:
            known = self._reach[key] = sc.reaches(scope, self.layout.places[agent], self.layout.barrier_places[barrier])
        return known

    def intern(self, value: Any) -> Any:
        return self._interned.setdefault(value, value)
