"""Producer and consumer handles: the cursor bookkeeping every backend shares.

A backend implements :class:`PipelineOps` — the explicit-state calls named as in ``cutlass.pipeline``
(``producer_acquire(state)``, ``consumer_wait(state)``, …). The handles here own the cursors so kernel
code never touches an index or phase:

* a :class:`Producer` keeps an *acquire* cursor and a *commit* cursor; ``acquire()`` waits for the
  next empty slot and returns its index, ``commit()`` publishes the oldest acquired, uncommitted slot;
* a :class:`Consumer` keeps a *wait* cursor and a *release* cursor likewise.

Two cursors per side let a role hold several slots at once (acquire ahead, commit behind; keep one
wgmma in flight and release the slot before it) without hand-kept second states.

Counts (``cutlass.pipeline``'s ``state.count``): ``producer.count`` is the number of slots acquired so
far — the iteration number of the next ``acquire`` — and ``producer.committed`` the number committed;
``consumer.count`` / ``consumer.released`` likewise. They are the cursors' own counts, advanced by the
same core arithmetic as the index and phase. There is no ``reset_count``: the count is part of the
protocol state (the store-notify tail derives its pending notifications from it), so take a per-tile
k index as a difference: ``first = consumer.count`` at the top of the tile, ``k = consumer.count - first``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .spec import PipelineSpec, Role
from .state import CONSUMER_START_PHASE, PRODUCER_START_PHASE, PipelineState


@runtime_checkable
class PipelineOps(Protocol):
    """What a backend implements for one pipeline; the handles below drive it.

    ``token`` arguments follow ``cutlass.pipeline``: the result of a ``try_`` call; when it is true
    the blocking wait is skipped.
    """

    spec: PipelineSpec

    def make_state(self, start_phase: int) -> PipelineState: ...

    def producer_acquire(self, state: PipelineState, token: Any = None) -> None: ...

    def producer_try_acquire(self, state: PipelineState) -> Any: ...

    def producer_commit(self, state: PipelineState, *payload: Any) -> None: ...

    def producer_tail(self, state: PipelineState) -> None: ...

    def consumer_wait(self, state: PipelineState, token: Any = None) -> None: ...

    def consumer_try_wait(self, state: PipelineState) -> Any: ...

    def consumer_release(self, state: PipelineState) -> None: ...


def acquire_every_slot(ops: PipelineOps, state: PipelineState) -> None:
    """The generic producer tail: acquire each slot once more, so every release has landed.

    A producer that exits with releases still in flight leaves arrivals on barriers of a CTA that is
    gone (undefined on a cluster peer); waiting for all ``stages`` slots to be empty again prevents it.
    """
    for _ in range(ops.spec.stages):
        ops.producer_acquire(state)
        state.advance()


class Producer:
    """The producer side of one pipeline (one role instance: a thread, warp or warpgroup)."""

    def __init__(self, ops: PipelineOps, role: Role | None = None) -> None:
        self.ops = ops
        self.role = role if role is not None else ops.spec.producer
        self.acquire_state = ops.make_state(PRODUCER_START_PHASE)
        self.commit_state = ops.make_state(PRODUCER_START_PHASE)

    @property
    def count(self) -> Any:
        """Slots acquired so far: the iteration number of the next :meth:`acquire` (``state.count``)."""
        return self.acquire_state.count

    @property
    def committed(self) -> Any:
        """Slots committed so far."""
        return self.commit_state.count

    def try_acquire(self) -> Any:
        """Poll the next slot without blocking; pass the token to :meth:`acquire`."""
        return self.ops.producer_try_acquire(self.acquire_state)

    def acquire(self, token: Any = None) -> Any:
        """Wait until the next slot is empty; returns its stage index."""
        index = self.acquire_state.index
        self.ops.producer_acquire(self.acquire_state, token)
        self.acquire_state.advance()
        return index

    def commit(self, *payload: Any) -> Any:
        """Publish the oldest acquired slot (with optional payload, e.g. tile metadata); returns its index."""
        index = self.commit_state.index
        self.ops.producer_commit(self.commit_state, *payload)
        self.commit_state.advance()
        return index

    def tail(self) -> None:
        """Before exit: make sure every slot's release has landed (and, per kind, flush what is in flight)."""
        self.ops.producer_tail(self.acquire_state)

    # cutlass.pipeline.PipelineProducer spellings
    def acquire_and_advance(self, token: Any = None) -> Any:
        return self.acquire(token)


class Consumer:
    """The consumer side of one pipeline, for one consumer role instance."""

    def __init__(self, ops: PipelineOps, role: Role | None = None) -> None:
        self.ops = ops
        self.role = role if role is not None else ops.spec.consumer()
        self.wait_state = ops.make_state(CONSUMER_START_PHASE)
        self.release_state = ops.make_state(CONSUMER_START_PHASE)

    @property
    def count(self) -> Any:
        """Slots waited for so far: the iteration number of the next :meth:`wait` (``state.count``)."""
        return self.wait_state.count

    @property
    def released(self) -> Any:
        """Slots released so far."""
        return self.release_state.count

    def try_wait(self) -> Any:
        """Poll the next slot without blocking; pass the token to :meth:`wait`."""
        return self.ops.consumer_try_wait(self.wait_state)

    def wait(self, token: Any = None) -> Any:
        """Wait until the next slot is full; returns its stage index."""
        index = self.wait_state.index
        self.ops.consumer_wait(self.wait_state, token)
        self.wait_state.advance()
        return index

    def release(self) -> Any:
        """Hand the oldest waited-for slot back to the producer; returns its index."""
        index = self.release_state.index
        self.ops.consumer_release(self.release_state)
        self.release_state.advance()
        return index

    def skip(self, steps: Any) -> None:
        """Pass over ``steps`` slots that another instance of this role consumes (ping-pong).

        Two math warpgroups that take turns on one pipeline each skip the other's slots: both cursors
        move ``steps`` forward with the core ring arithmetic, nothing is waited for or released.
        Call it only while this consumer holds no slot (every waited slot released). ``steps`` may
        be a run-time value.
        """
        self.wait_state.advance(steps)
        self.release_state.advance(steps)

    # cutlass.pipeline.PipelineConsumer spellings
    def wait_and_advance(self, token: Any = None) -> Any:
        return self.wait(token)
