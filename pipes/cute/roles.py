"""Role layout: which warps of a CTA play which pipeline role, checked against pipeline specs.

Use::

    from pipes.cute.roles import RoleLayout, Warps

    layout = RoleLayout(block_threads=384, roles={
        "load": Warps(0, 1, threads=1),     # one elected thread of warp 0 issues TMA
        "mma":  Warps(4, 8),                # warps 4..11: two warpgroups
        "epi":  Warps(4, 8),                # the same warps in another pipeline
    })
    layout.check(spec)                      # trace time: raises ProtocolError with the arithmetic
    if layout.is_role("load"):              # kernel: role dispatch on the warp index
        ...

The arrival counts of every barrier come from the spec (``Role.arrivals``); the layout says how many
threads actually execute each role. A spec role must have exactly as many threads as the layout
gives it, otherwise each stage would see too many arrivals (phases complete early: a data race) or
too few (a hang). :meth:`RoleLayout.check` turns that into a trace-time error that shows the sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ProtocolError, SpecError
from ..spec import WARP_THREADS, PipelineSpec, Role
from .state import TraceStatic

__all__ = ["RoleLayout", "Warps"]


@dataclass(frozen=True)
class Warps(TraceStatic):
    """Warps ``first .. first+count-1`` of the CTA; ``threads`` of them execute the role's calls.

    ``threads`` defaults to every thread of those warps; give it when fewer threads execute the
    role (one elected thread that issues TMA: ``Warps(0, 1, threads=1)``).
    """

    first: int
    count: int = 1
    threads: int | None = None

    def __post_init__(self) -> None:
        for name, value, low in (("first", self.first, 0), ("count", self.count, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise SpecError(f"Warps.{name} = {value!r} is invalid: allowed an int >= {low}")
        if self.threads is not None:
            top = self.count * WARP_THREADS
            if isinstance(self.threads, bool) or not isinstance(self.threads, int) or not 1 <= self.threads <= top:
                raise SpecError(
                    f"Warps.threads = {self.threads!r} is invalid: allowed an int in [1, {top}] "
                    f"({self.count} warp(s) × {WARP_THREADS})"
                )

    @property
    def executing_threads(self) -> int:
        return self.threads if self.threads is not None else self.count * WARP_THREADS

    @property
    def last(self) -> int:
        return self.first + self.count - 1

    def describe(self) -> str:
        span = f"warp {self.first}" if self.count == 1 else f"warps {self.first}..{self.last}"
        if self.threads is None:
            return f"{span} ({self.count} warp(s) × {WARP_THREADS} = {self.executing_threads} threads)"
        return f"{span} ({self.threads} executing thread(s))"


@dataclass(frozen=True)
class RoleLayout(TraceStatic):
    """The CTA's warp-to-role map for one kernel: ``block_threads`` and ``roles`` name → :class:`Warps`."""

    block_threads: int
    roles: dict[str, Warps] = field(default_factory=dict)
    cluster_size: int = 1

    def __post_init__(self) -> None:
        bt = self.block_threads
        if isinstance(bt, bool) or not isinstance(bt, int) or bt < WARP_THREADS or bt % WARP_THREADS or bt > 1024:
            raise SpecError(
                f"RoleLayout.block_threads = {bt!r} is invalid: allowed a multiple of {WARP_THREADS} in [32, 1024]"
            )
        if isinstance(self.cluster_size, bool) or not isinstance(self.cluster_size, int) or self.cluster_size < 1:
            raise SpecError(f"RoleLayout.cluster_size = {self.cluster_size!r} is invalid: allowed an int >= 1")
        warps = bt // WARP_THREADS
        for name, span in self.roles.items():
            if not isinstance(span, Warps):
                raise SpecError(f"RoleLayout.roles[{name!r}] = {span!r} is invalid: allowed a Warps(first, count)")
            if span.last >= warps:
                raise SpecError(
                    f"RoleLayout.roles[{name!r}] = {span.describe()} does not fit the block: "
                    f"block_threads={bt} has warps 0..{warps - 1} ({bt} / {WARP_THREADS})"
                )

    def warps(self, role: str) -> Warps:
        try:
            return self.roles[role]
        except KeyError:
            raise ProtocolError(f"role {role!r} is not in the role layout (roles: {sorted(self.roles)})") from None

    def check(self, spec: PipelineSpec) -> None:
        """Raise :class:`ProtocolError` unless every role of ``spec`` has the threads the layout gives it."""
        for side, role in (("producer", spec.producer), *(("consumer", c) for c in spec.consumers)):
            self._check_role(spec, side, role)

    def _check_role(self, spec: PipelineSpec, side: str, role: Role) -> None:
        barrier = "full" if side == "producer" else "empty"
        if role.name not in self.roles:
            raise ProtocolError(
                f"pipeline {spec.name!r}: {side} role {role.name!r} has no warps in the role layout "
                f"(layout roles: {sorted(self.roles)}); add roles={{{role.name!r}: Warps(first, count)}}"
            )
        span = self.roles[role.name]
        declared = role.threads
        actual = span.executing_threads
        if declared != actual:
            per_thread = role.unit.arrivals / role.unit.threads
            would = int(actual * per_thread) * role.peers
            raise ProtocolError(
                f"pipeline {spec.name!r}: {side} role {role.name!r} arrival count mismatch: the spec declares "
                f"count={role.count} × {role.unit.name} ({role.unit.threads} threads, {role.unit.arrivals} "
                f"arrival(s) each) = {declared} threads → {role.arrivals} arrivals per stage on the {barrier} "
                f"barrier (× {role.peers} peer CTA(s)), but the role layout gives {role.name!r} {span.describe()}, "
                f"which would make {would} arrivals per stage. {_advice(role, actual)}"
            )
        if role.peers > self.cluster_size:
            raise ProtocolError(
                f"pipeline {spec.name!r}: {side} role {role.name!r} has peers={role.peers} but the cluster has "
                f"{self.cluster_size} CTA(s) (RoleLayout.cluster_size)"
            )

    def is_role(self, role: str) -> Any:
        """Kernel code: a Boolean, true in the warps that play ``role`` (warp-uniform)."""
        from .barriers import warp_uniform_index

        span = self.warps(role)
        warp = warp_uniform_index()
        if span.count == 1:
            return warp == span.first
        return (warp >= span.first) & (warp <= span.last)


def _advice(role: Role, actual_threads: int) -> str:
    unit_threads = role.unit.threads
    if actual_threads % unit_threads == 0:
        return f"Fix: count={actual_threads // unit_threads} (or change the layout)."
    return (
        f"Fix: {actual_threads} threads is not a whole number of {role.unit.name} units ({unit_threads} threads); "
        "change the unit, the count or the layout."
    )
