"""Ordered barrier: N groups (math warpgroups) take turns, round after round, in a fixed order.

The ping-pong GEMM's two math warpgroups must not issue their MMAs (or run their epilogues) at the
same time: group 0 goes, then group 1, then group 0 again... Each of ``depth`` *ordered sections*
per round (``depth=2``: MMA and epilogue) is its own ring of turns over ``groups`` mbarriers::

    barrier[s * groups + g]   section s, "it is group g's turn"

    group g, section s:  wait(barrier[s*N + g], phase)  ... work ...  arrive(barrier[s*N + (g+1) % N])

Group 0 starts at phase 1 (a fresh barrier lets parity 1 through: its first turn is free); every
other group starts at phase 0 and waits for its predecessor. The cursor (section index, phase) moves
with the core ring arithmetic (:func:`pipes.state.advance_position`): the phase flips every time a
group has been through all ``depth`` sections.

Unlike ``cutlass.pipeline.PipelineOrder`` (a frozen dataclass whose built-in state a dynamic
``cutlass.range`` loop does not carry, so its parity is a loop-invariant constant and the second
round waits on the wrong phase), :class:`OrderedBarrier` is a loop-carried value: its cursor travels
through ``cutlass.range`` / ``while`` loops like any ``Int32``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute

from ..errors import invalid
from ..spec import Role
from .barriers import MBARRIER_BYTES, MbarrierRing, WaitSite, arrive_as_unit
from .debug import DebugConfig, TraceEvent, resolve_debug
from .state import CuteState, TraceStatic

__all__ = ["OrderSpec", "OrderedBarrier"]

MAX_GROUPS = 16


@dataclass(frozen=True)
class OrderSpec(TraceStatic):
    """What an ordered barrier sequences: ``groups`` instances of ``role`` taking turns in
    ``depth`` independent sections per round.

    ``role`` describes *one* group (e.g. ``Role("math", ArrivalUnit.WARPGROUP)``); the barrier of a
    turn expects ``role.arrivals`` arrivals, the arrivals one group makes when it hands the turn on.
    """

    name: str
    groups: int
    role: Role
    depth: int = 1

    def __post_init__(self) -> None:
        owner = f"OrderSpec({self.name!r})"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("OrderSpec", "name", self.name, "a non-empty identifier")
        for field, value, low, high in (("groups", self.groups, 2, MAX_GROUPS), ("depth", self.depth, 1, 16)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise invalid(owner, field, value, f"an int in [{low}, {high}]")
        if not isinstance(self.role, Role):
            raise invalid(owner, "role", self.role, "a pipes.Role describing one group")
        if self.role.peers != 1:
            raise invalid(owner, "role.peers", self.role.peers, "1 (an ordered barrier lives in one CTA)")

    @property
    def arrivals(self) -> int:
        """Arrivals that complete one turn: what one group makes when it hands the turn on."""
        return self.role.arrivals

    @property
    def barriers(self) -> int:
        """mbarriers the ordered barrier needs: one per (section, group)."""
        return self.groups * self.depth

    @property
    def smem_bytes(self) -> int:
        """Shared memory of the barrier array (8-byte aligned)."""
        return self.barriers * MBARRIER_BYTES

    @property
    def block_threads(self) -> int:
        """Threads the groups occupy in one CTA (the block must have at least this many)."""
        return self.groups * self.role.threads


def _check_group_id(spec: OrderSpec, group_id: Any) -> None:
    if isinstance(group_id, bool):
        raise invalid(f"OrderedBarrier({spec.name!r})", "group_id", group_id, f"an int in [0, {spec.groups - 1}]")
    if isinstance(group_id, int) and not 0 <= group_id < spec.groups:
        raise invalid(
            f"OrderedBarrier({spec.name!r})",
            "group_id",
            group_id,
            f"an int in [0, {spec.groups - 1}] (groups={spec.groups})",
        )


class OrderedBarrier:
    """One group's view of an ordered barrier: :meth:`wait` for its turn, :meth:`arrive` to pass it on.

    Create it with :meth:`create` in every thread of the CTA (it initializes the barriers once and
    syncs the CTA), before the role branches; ``group_id`` may be a run-time value (e.g.
    ``warp_idx // 4 - 1``). The object is loop-carried, so use it directly inside dynamic loops::

        order = OrderedBarrier.create(spec, storage, group_id=math_wg)
        for tile in cutlass.range(tiles):
            order.wait()        # my turn at the MMA section
            ...                 # issue MMAs
            order.arrive()      # the next warpgroup's turn

    ``debug`` (True, a :class:`~pipes.cute.debug.DebugConfig`, or None for ``PIPES_DEBUG``) bounds
    the wait: a turn that never comes prints the barrier's name, role, barrier index and phase, then
    traps. ``tracer`` records WAIT (turn taken) and RELEASE (turn handed on) events. ``suspend_waits``
    (default False: a turn is a short hand-off, polling measured faster) makes the wait suspend between
    tries, as the pipelines' option of the same name.
    """

    def __init__(
        self,
        spec: OrderSpec,
        ring: MbarrierRing,
        group_id: Any,
        state: CuteState,
        *,
        debug: DebugConfig | None = None,
        tracer: Any = None,
        trace_id: int = 0,
        suspend_waits: bool = False,
    ) -> None:
        _check_group_id(spec, group_id)
        if not isinstance(suspend_waits, bool):
            raise invalid(f"OrderedBarrier({spec.name!r})", "suspend_waits", suspend_waits, "True or False")
        self.suspend_waits = suspend_waits
        self.spec = spec
        self.ring = ring
        self.group_id = group_id
        self.state = state
        self.debug = debug
        self.tracer = tracer
        self.trace_id = trace_id

    # --- construction --------------------------------------------------------------------------
    @staticmethod
    @cute.jit
    def init_barriers(spec: cutlass.Constexpr, storage: cute.Pointer) -> None:
        """Initialize the barrier array (one elected thread of warp 0) and fence the inits.

        The caller must then sync the CTA before any group waits; :meth:`create` does both.
        """
        if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 0:
            with cute.arch.elect_one():
                MbarrierRing(storage, spec.barriers).init(spec.arrivals)
        cute.arch.mbarrier_init_fence()

    @classmethod
    def create(
        cls,
        spec: OrderSpec,
        storage: cute.Pointer,
        group_id: Any,
        *,
        sync: bool = True,
        debug: bool | DebugConfig | None = None,
        tracer: Any = None,
        trace_id: int = 0,
        suspend_waits: bool = False,
    ) -> OrderedBarrier:
        """Initialize the barriers and return group ``group_id``'s cursor at its first turn.

        Every thread of the CTA must call this (warp 0 initializes, then the CTA syncs); with
        ``sync=False`` the caller syncs the CTA itself before the first :meth:`wait` (to batch the
        inits of several pipelines behind one ``bar.sync``).
        """
        if not isinstance(storage, cute.Pointer):
            raise TypeError(f"OrderedBarrier storage must be a cute.Pointer to {spec.barriers} Int64; got {storage!r}")
        _check_group_id(spec, group_id)
        cls.init_barriers(spec, storage)
        if sync:
            cute.arch.sync_threads()
        return cls.at_start(
            spec, storage, group_id, debug=debug, tracer=tracer, trace_id=trace_id, suspend_waits=suspend_waits
        )

    @classmethod
    def at_start(
        cls,
        spec: OrderSpec,
        storage: cute.Pointer,
        group_id: Any,
        *,
        debug: bool | DebugConfig | None = None,
        tracer: Any = None,
        trace_id: int = 0,
        suspend_waits: bool = False,
    ) -> OrderedBarrier:
        """Group ``group_id``'s cursor at its first turn, over barriers already initialized."""
        _check_group_id(spec, group_id)
        # Group 0's first turn is free: a fresh mbarrier lets parity 1 through.
        if isinstance(group_id, int):
            start_phase: Any = int(group_id == 0)
        else:
            start_phase = cutlass.Uint32(cutlass.Int32(group_id) == 0)
        return cls(
            spec,
            MbarrierRing(storage, spec.barriers),
            group_id,
            CuteState(spec.depth, 0, start_phase, 0),
            debug=resolve_debug(debug),
            tracer=tracer,
            trace_id=trace_id,
            suspend_waits=suspend_waits,
        )

    @property
    def count(self) -> Any:
        """Turns this group has handed on so far (sections passed, a ``Uint32``)."""
        return self.state.count

    # --- the protocol ---------------------------------------------------------------------------
    def _barrier_index(self, group: Any) -> Any:
        return cutlass.Int32(self.state.index) * self.spec.groups + group

    def wait(self) -> None:
        """Block until it is this group's turn in the current section."""
        index, phase = self._barrier_index(self.group_id), cutlass.Int32(self.state.phase)
        site = WaitSite(self.spec.name, self.spec.role.name, "turn")
        self.ring.wait(index, phase, site=site, debug=self.debug, suspend=self.suspend_waits)
        if self.tracer is not None:
            self.tracer.record(int(TraceEvent.WAIT), self.trace_id, self.state.index)

    def arrive(self) -> None:
        """Hand the current section's turn to the next group and move to this group's next section."""
        if self.tracer is not None:
            self.tracer.record(int(TraceEvent.RELEASE), self.trace_id, self.state.index)
        successor = (self.group_id + 1) % self.spec.groups
        arrive_as_unit(self.ring, self._barrier_index(successor), self.spec.role.unit)
        self.state.advance()

    # --- DSL loop-carry protocol: the cursor is the only run-time state --------------------------
    def __extract_mlir_values__(self) -> list[Any]:
        return self.state.__extract_mlir_values__()

    def __get_mlir_types__(self) -> list[Any]:
        return self.state.__get_mlir_types__()

    def __new_from_mlir_values__(self, values: list[Any]) -> OrderedBarrier:
        return OrderedBarrier(
            self.spec,
            self.ring,
            self.group_id,
            self.state.__new_from_mlir_values__(values),
            debug=self.debug,
            tracer=self.tracer,
            trace_id=self.trace_id,
            suspend_waits=self.suspend_waits,
        )
