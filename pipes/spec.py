"""The one description of a pipeline: stages, producer role, consumer roles, what completes a stage.

A :class:`PipelineSpec` is built once, validated on construction and immutable. The CuTe backend
traces it into mbarrier code, the Ascend backend lowers it to ``set_flag``/``wait_flag`` pairs and the
CPU checker runs it; the arrival counts each of them uses come from :meth:`Role.arrivals` here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import invalid

#: An mbarrier's pending-arrival count is a 20-bit field: at most this many arrivals per phase.
MAX_ARRIVALS = (1 << 20) - 1

WARP_THREADS = 32
WARPGROUP_THREADS = 128


class ArrivalUnit(enum.Enum):
    """Who executes one unit of a role, and how many barrier arrivals that unit makes per stage.

    ``value`` is ``(threads in one unit, arrivals one unit makes)``.
    """

    THREAD = (1, 1)
    """Every thread arrives once."""
    ELECTED_PER_WARP = (WARP_THREADS, 1)
    """A warp, of which one elected thread arrives (``elect_one``)."""
    WARP = (WARP_THREADS, WARP_THREADS)
    """A warp, all 32 threads arrive."""
    WARPGROUP = (WARPGROUP_THREADS, WARPGROUP_THREADS)
    """A warpgroup (4 warps), all 128 threads arrive."""
    ELECTED_PER_WARPGROUP = (WARPGROUP_THREADS, 1)
    """A warpgroup of which one elected thread arrives."""

    @property
    def threads(self) -> int:
        return self.value[0]

    @property
    def arrivals(self) -> int:
        return self.value[1]


class Completion(enum.Enum):
    """What makes a stage *full* (ready for the consumer)."""

    ARRIVAL = "arrival"
    """The producer's arrivals on the full barrier (threads wrote the data themselves)."""
    TRANSACTION_BYTES = "transaction_bytes"
    """The producer arms the full barrier with a byte count; TMA loads complete it."""
    STORE_COMPLETE = "store_complete"
    """The producer's bulk (TMA) stores are complete in global memory (``wait_group`` without ``.read``)."""
    FLAG = "flag"
    """A binary hardware flag between two in-order pipes (Ascend ``set_flag``/``wait_flag``)."""


def _check_int(owner: str, name: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(owner, name, value, f"an int in [{low}, {high if high is not None else '∞'}]")
    if value < low or (high is not None and value > high):
        allowed = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise invalid(owner, name, value, allowed)


@dataclass(frozen=True)
class Role:
    """One side of a pipeline: ``count`` units of kind ``unit``, possibly repeated on ``peers`` CTAs.

    ``peers`` counts the CTAs of a cluster whose units all arrive on the same barrier (the consumers
    of a TMA multicast release the producer CTA's empty barrier remotely).
    """

    name: str
    unit: ArrivalUnit = ArrivalUnit.THREAD
    count: int = 1
    peers: int = 1

    def __post_init__(self) -> None:
        owner = f"Role({self.name!r})"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("Role", "name", self.name, "a non-empty identifier")
        if not isinstance(self.unit, ArrivalUnit):
            raise invalid(owner, "unit", self.unit, f"one of {[u.name for u in ArrivalUnit]}")
        _check_int(owner, "count", self.count, 1, MAX_ARRIVALS)
        _check_int(owner, "peers", self.peers, 1, 16)
        if self.arrivals > MAX_ARRIVALS:
            raise invalid(
                owner,
                "count",
                self.count,
                f"count × {self.unit.arrivals} arrivals per unit × {self.peers} peers <= {MAX_ARRIVALS} "
                f"(the mbarrier arrival limit); got {self.arrivals}",
            )

    @property
    def arrivals(self) -> int:
        """Barrier arrivals this role makes per stage: ``count × unit.arrivals × peers``."""
        return self.count * self.unit.arrivals * self.peers

    @property
    def threads(self) -> int:
        """Threads that execute this role in one CTA."""
        return self.count * self.unit.threads


@dataclass(frozen=True)
class PipelineSpec:
    """An immutable, validated description of one producer→consumer pipeline.

    ``consumers`` may hold several roles (fan-out): a stage is empty again only when every consumer
    role released it, so the empty barrier expects the sum of their arrivals.
    """

    name: str
    stages: int
    producer: Role
    consumers: tuple[Role, ...] | Role
    completion: Completion = Completion.ARRIVAL
    tx_bytes: int = 0

    def __post_init__(self) -> None:
        owner = f"PipelineSpec({self.name!r})"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise invalid("PipelineSpec", "name", self.name, "a non-empty identifier")
        _check_int(owner, "stages", self.stages, 1, 64)
        if isinstance(self.consumers, Role):
            object.__setattr__(self, "consumers", (self.consumers,))
        else:
            object.__setattr__(self, "consumers", tuple(self.consumers))
        if not isinstance(self.producer, Role):
            raise invalid(owner, "producer", self.producer, "a Role")
        if not self.consumers or not all(isinstance(c, Role) for c in self.consumers):
            raise invalid(owner, "consumers", self.consumers, "one Role or a non-empty tuple of Roles")
        if not isinstance(self.completion, Completion):
            raise invalid(owner, "completion", self.completion, f"one of {[c.name for c in Completion]}")
        names = [self.producer.name, *(c.name for c in self.consumers)]
        if len(set(names)) != len(names):
            raise invalid(owner, "consumers", names, "distinct role names (producer and each consumer)")
        if self.empty_arrivals > MAX_ARRIVALS:
            raise invalid(
                owner, "consumers", self.consumers, f"at most {MAX_ARRIVALS} arrivals in all; got {self.empty_arrivals}"
            )
        self._check_completion(owner)

    def _check_completion(self, owner: str) -> None:
        if self.completion is Completion.TRANSACTION_BYTES:
            # mbarrier tx-count is a signed 20-bit field.
            _check_int(owner, "tx_bytes", self.tx_bytes, 1, MAX_ARRIVALS)
        elif self.tx_bytes != 0:
            raise invalid(
                owner,
                "tx_bytes",
                self.tx_bytes,
                f"0 unless completion is TRANSACTION_BYTES (it is {self.completion.name})",
            )
        if self.completion is Completion.FLAG:
            for role in (self.producer, *self.consumers):
                if role.arrivals != 1:
                    raise invalid(
                        owner,
                        f"{role.name}.arrivals",
                        role.arrivals,
                        "1 with FLAG completion (a binary flag joins exactly one producer pipe and one consumer pipe)",
                    )
            if len(self.consumers) != 1:
                raise invalid(owner, "consumers", len(self.consumers), "exactly 1 consumer role with FLAG completion")
        if self.completion is Completion.STORE_COMPLETE and self.producer.peers != 1:
            raise invalid(
                owner,
                "producer.peers",
                self.producer.peers,
                "1 with STORE_COMPLETE (bulk groups are per thread, per CTA)",
            )

    @property
    def full_arrivals(self) -> int:
        """Arrivals that complete one phase of a full barrier."""
        return self.producer.arrivals

    @property
    def empty_arrivals(self) -> int:
        """Arrivals that complete one phase of an empty barrier: every consumer role's."""
        return sum(c.arrivals for c in self.consumers)

    def consumer(self, name: str | None = None) -> Role:
        """The consumer role called ``name`` (the only one when ``name`` is None)."""
        if name is None:
            if len(self.consumers) != 1:
                raise invalid(
                    f"PipelineSpec({self.name!r})", "consumer name", None, f"one of {[c.name for c in self.consumers]}"
                )
            return self.consumers[0]
        for role in self.consumers:
            if role.name == name:
                return role
        raise invalid(
            f"PipelineSpec({self.name!r})", "consumer name", name, f"one of {[c.name for c in self.consumers]}"
        )
