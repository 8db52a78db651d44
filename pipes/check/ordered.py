"""One group's handle on a model ordered barrier (ping-pong turns between math warpgroups).

Group ``g`` waits for its turn on ``barrier[s * groups + g]`` of section ``s``, works, then hands the
turn on by arriving on ``barrier[s * groups + (g + 1) % groups]``. The wait cursor is a core
:class:`pipes.PipelineState` over the ``depth`` sections: group 0 starts at phase 1 (a fresh barrier
lets its first turn through), the others at phase 0, and the phase flips once per round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ProtocolError
from ..state import CONSUMER_START_PHASE, PRODUCER_START_PHASE, PipelineState
from .declarations import ModelOrder
from .ops import Arrive, Wait

if TYPE_CHECKING:
    from .ctx_base import CtxBase


class OrderedTurn:
    """``wait()`` for this group's turn in the next section; ``arrive()`` to hand the turn on."""

    def __init__(self, ctx: CtxBase, order: ModelOrder, barriers: tuple[int, ...], group: int) -> None:
        if isinstance(group, bool) or not isinstance(group, int) or not 0 <= group < order.groups:
            raise ProtocolError(
                f"ModelOrder({order.name!r}) group = {group!r} is invalid: allowed [0, {order.groups - 1}]"
            )
        self._ctx = ctx
        self.order = order
        self.group = group
        self._barriers = barriers
        start = PRODUCER_START_PHASE if group == 0 else CONSUMER_START_PHASE
        self.wait_state = PipelineState(order.depth, 0, start, 0)
        self.arrive_state = PipelineState(order.depth, 0, start, 0)
        self._arrivals = order.role.unit.arrivals * order.role.peers
        self._who = f"{ctx.name} (group {group} of {order.name})"
        self._start = start

    def _barrier(self, section: int, group: int) -> int:
        return self._barriers[section * self.order.groups + group]

    def wait(self) -> None:
        """Block until it is this group's turn in the current section."""
        state = self.wait_state
        turn = state.count // self.order.depth
        # Group 0's round r follows the last group's round r - 1 (#-1: its free first turn).
        completion = turn - self._start
        barrier = self._barrier(state.index, self.group)
        name = self._ctx.layout.barrier_names[barrier]
        self._ctx.emit(Wait(barrier, name, state.phase, completion, self._who, "turn.wait"))
        phase = state.phase
        state.advance()
        if not self.order.phase_flips:
            state.phase = phase  # the modelled defect: a loop-invariant phase

    def arrive(self) -> None:
        """Hand the current section's turn to the next group."""
        state = self.arrive_state
        turn = state.count // self.order.depth
        barrier = self._barrier(state.index, (self.group + 1) % self.order.groups)
        name = self._ctx.layout.barrier_names[barrier]
        self._ctx.emit(Arrive(barrier, name, self._arrivals, turn, self._who, "turn.arrive"))
        state.advance()
