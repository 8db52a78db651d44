"""Models of the objects a kernel ships finished tiles with: ready flags, step counters, credits, the copy
engine's stream and the reader on the receiving side.

A kernel's communication warp copies each finished tile to a receiver (pinned host memory, another GPU,
device memory) and then raises the tile's ready flag to the launch's *epoch*; the receiver acquires the
flag and reads the tile. With the copy engine, the warp counts each tile into its *step*, and a copy
stream waits for the step's count, copies the step and raises the step's flag. Across back-to-back
launches the receiver hands each tile back with a *credit* (the epoch it consumed), and the sender waits
for the credit of the previous launch before overwriting a buffer. Each object here owns the
:class:`~pipes.check.ModelCounter` values it needs (``counters()``, for ``Protocol(counters=...)``) and
offers the agent-side calls, taking the agent's ``ctx``; :func:`copy_stream` and :func:`host_reader`
build whole agents.

The all-gather runs the other way (:mod:`pipes.check.gather`). A protocol mixes these with its own agents::

    flags = ModelReadyFlags("ready", 2, Scope.SYSTEM)

    def comm(ctx):
        for tile in range(2):
            ctx.write_global(("host", tile), tile)
            flags.publish(ctx, tile, FIRST)

    reader = host_reader("host", flags, lambda ctx, t: ctx.read_global(("host", t)), lambda t, e: t)
    check(Protocol("ship", [Agent("comm", comm), reader], counters=flags.counters()))

The epoch arithmetic is :mod:`pipes.epoch`'s, the same the kernel and the host run. The checker's
counters are non-negative ints compared with ``>=``, so a model's epochs are small ints from
:data:`~pipes.epoch.FIRST` that never wrap: there ``reached(value, epoch)`` is ``value >= epoch``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..epoch import FIRST, FRESH, parity_token, previous, reached
from ..errors import ProtocolError, invalid
from .context import Ctx
from .declarations import ModelCounter
from .protocol import Agent
from .scope import HOST, Scope

HOLDS = ("epoch", "parity_token", "epoch_bit")
"""What a ready flag holds in launch ``e``: ``e`` itself (waited for until reached), the copy engine's
``parity_token(e)`` (1 or 2, waited for exactly), or ``e & 1`` — a 0/1 parity whose token 0 a fresh flag
already holds (a defect, modelled so the checker can show it)."""

EPOCH_LIMIT = 1 << 31
"""Model epochs stay below this: within it ``reached`` is a plain ``>=``, which is what the checker compares."""

TileReader = Callable[[Ctx, int], Any]
"""``read(ctx, tile)``: the agent reads tile ``tile`` (``ctx.read_global`` of its cells) and returns it."""
TileWriter = Callable[[Ctx, int, Any], None]
"""``write(ctx, tile, value)``: the agent writes ``value`` as tile ``tile`` at the receiver."""
Expected = Callable[[int, int], Any]
"""``expect(tile, epoch)``: what tile ``tile`` must hold when launch ``epoch`` flagged it ready."""


def model_epoch(epoch: Any, owner: str = "epoch") -> int:
    """``epoch`` checked to be a model epoch: an int in ``[FIRST, 2³¹)`` (no wrap inside a model)."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not FIRST <= epoch < EPOCH_LIMIT:
        raise ProtocolError(
            f"{owner} = {epoch!r} is invalid: allowed an int in [FIRST = {FIRST}, 2**31): model epochs start at "
            "pipes.epoch.FIRST and never wrap, so the checker's >= is pipes.epoch.reached"
        )
    return epoch


def check_positive(owner: str, name: str, value: Any) -> None:
    """``ValueError`` naming ``owner.name`` unless ``value`` is an int of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(owner, name, value, "an int >= 1")


def _index(owner: str, index: Any, count: int) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ProtocolError(f"{owner}: index = {index!r} is invalid: allowed an int in [0, {count - 1}]")
    return index


@dataclass(frozen=True)
class ModelReadyFlags:
    """``count`` ready flags, one word each (``name0``, ``name1``, …), released at ``scope``.

    ``holds`` (:data:`HOLDS`): ``"epoch"`` for flags the SM raises (``st.release.<scope>`` of the epoch,
    waited for until :func:`~pipes.epoch.reached`); ``"parity_token"`` for flags a copy engine raises to a
    constant per launch parity (waited for exactly: two values suffice only with credits);
    ``"epoch_bit"`` models the 0/1-parity defect. ``initial``: what the words hold at the start (FRESH:
    a new sequence; a later model epoch: what an earlier launch left).
    """

    name: str
    count: int
    scope: Scope = Scope.SYSTEM
    holds: str = "epoch"
    initial: int = FRESH

    def __post_init__(self) -> None:
        owner = f"ModelReadyFlags({self.name!r})"
        if not isinstance(self.name, str) or not self.name:
            raise invalid("ModelReadyFlags", "name", self.name, "a non-empty string")
        check_positive(owner, "count", self.count)
        if not isinstance(self.scope, Scope):
            raise invalid(owner, "scope", self.scope, "a pipes.check.Scope")
        if self.holds not in HOLDS:
            raise invalid(owner, "holds", self.holds, f"one of {HOLDS}")
        if isinstance(self.initial, bool) or not isinstance(self.initial, int) or not 0 <= self.initial < EPOCH_LIMIT:
            raise invalid(owner, "initial", self.initial, "an int in [0, 2**31) (FRESH, or a model epoch's token)")

    def counters(self) -> tuple[ModelCounter, ...]:
        """The flag words, for ``Protocol(counters=...)``."""
        return tuple(ModelCounter(self.flag(i), initial=self.initial) for i in range(self.count))

    def flag(self, index: int) -> str:
        """The counter name of flag ``index``."""
        return f"{self.name}{_index(self.name, index, self.count)}"

    def token(self, epoch: int) -> int:
        """The value flag words hold once launch ``epoch`` raised them."""
        epoch = model_epoch(epoch)
        if self.holds == "epoch":
            return epoch
        if self.holds == "parity_token":
            return parity_token(epoch)
        return epoch & 1

    def publish(self, ctx: Ctx, index: int, epoch: int, fenced: bool = True) -> None:
        """Raise flag ``index`` for launch ``epoch``: every lane's ``fence.acq_rel.<scope>``, ``bar.warp.sync``,
        lane 0's ``st.release.<scope>`` (a copy engine: its memory barrier, then the flag write).

        ``fenced=False``: the fence (or the memory barrier) is missing — a *relaxed* store: the receiver sees
        the value but is not ordered after the tile's data.
        """
        ctx.store_counter(self.flag(index), self.token(epoch), scope=self.scope, relaxed=not fenced)

    def wait(self, ctx: Ctx, index: int, epoch: int, scope: Scope | None = None) -> None:
        """Acquire flag ``index`` for launch ``epoch`` (``ld.acquire.<scope>`` polled; ``scope`` None: the
        agent's own — ``.gpu`` on a device, ``.sys`` on the host): until it has reached the epoch, or, for
        token flags, until it holds this launch's token exactly."""
        flag, token = self.flag(index), self.token(epoch)
        if self.holds == "epoch":
            ctx.wait_counter(flag, at_least=token, scope=scope)
        else:
            ctx.wait_value(flag, token, scope=scope)

    def confusion(self, epoch: int) -> str:
        """Why a wait for launch ``epoch``'s token may pass on a value another launch left, or ``""``."""
        token = self.token(epoch)
        if self.holds == "epoch":
            return ""
        if token == FRESH:
            return (
                f"the flag holds epoch & 1, and launch {epoch}'s token is {epoch} & 1 = {token} = FRESH: a flag "
                "nobody raised already holds it"
            )
        if epoch - 2 >= FIRST and self.token(epoch - 2) == token:
            return (
                f"the flag's tokens repeat every 2 launches: launch {epoch - 2}'s token is also {token}, and without "
                "a credit its flag may still hold it"
            )
        return ""


@dataclass(frozen=True)
class ModelStepCounters:
    """``steps`` step counters (``name0``, …): the communication warp adds 1 per tile of a step
    (``red.release.<scope>.add``), and the copy engine's stream waits until a step holds its ``tiles``
    (``cuStreamWaitValue32``, an acquire at system scope). A launching stream resets them per launch."""

    name: str
    steps: int
    tiles: int
    scope: Scope = Scope.SYSTEM

    def __post_init__(self) -> None:
        owner = f"ModelStepCounters({self.name!r})"
        if not isinstance(self.name, str) or not self.name:
            raise invalid("ModelStepCounters", "name", self.name, "a non-empty string")
        check_positive(owner, "steps", self.steps)
        check_positive(owner, "tiles", self.tiles)
        if not isinstance(self.scope, Scope):
            raise invalid(owner, "scope", self.scope, "a pipes.check.Scope")

    def counters(self) -> tuple[ModelCounter, ...]:
        """The step counters, for ``Protocol(counters=...)``."""
        return tuple(ModelCounter(self.counter(s)) for s in range(self.steps))

    def counter(self, step: int) -> str:
        """The counter name of step ``step``."""
        return f"{self.name}{_index(self.name, step, self.steps)}"

    def step_tiles(self, step: int) -> range:
        """The tiles of step ``step``: ``tiles`` consecutive ones."""
        step = _index(self.name, step, self.steps)
        return range(step * self.tiles, (step + 1) * self.tiles)

    def count(self, ctx: Ctx, step: int, fenced: bool = True) -> None:
        """Count one tile into step ``step`` (``fenced=False``: a relaxed add, which publishes nothing)."""
        ctx.signal(self.counter(step), 1, scope=self.scope, relaxed=not fenced)

    def wait(self, ctx: Ctx, step: int, scope: Scope | None = Scope.SYSTEM) -> None:
        """Block until step ``step`` holds all its tiles, acquiring at ``scope``."""
        ctx.wait_counter(self.counter(step), at_least=self.tiles, scope=scope)

    def reset(self, ctx: Ctx, step: int) -> None:
        """Set step ``step`` back to 0 before a launch (``cudaMemsetAsync`` in the launching stream)."""
        ctx.store_counter(self.counter(step), 0, scope=self.scope)


@dataclass(frozen=True)
class ModelCredits:
    """``count`` credits (``name0``, …), one per receive buffer: the receiver stores the epoch it consumed
    (``credit[i] = epoch``, released at ``scope``); before launch ``e`` overwrites buffer ``i`` the sender
    waits until ``credit[i]`` has reached ``previous(e)``. The words start FRESH, which has reached
    ``previous(FIRST)``: the first launch of a sequence waits for nothing."""

    name: str
    count: int
    scope: Scope = Scope.SYSTEM

    def __post_init__(self) -> None:
        owner = f"ModelCredits({self.name!r})"
        if not isinstance(self.name, str) or not self.name:
            raise invalid("ModelCredits", "name", self.name, "a non-empty string")
        check_positive(owner, "count", self.count)
        if not isinstance(self.scope, Scope):
            raise invalid(owner, "scope", self.scope, "a pipes.check.Scope")

    def counters(self) -> tuple[ModelCounter, ...]:
        """The credit words, for ``Protocol(counters=...)``."""
        return tuple(ModelCounter(self.credit(i), initial=FRESH) for i in range(self.count))

    def credit(self, index: int) -> str:
        """The counter name of credit ``index``."""
        return f"{self.name}{_index(self.name, index, self.count)}"

    def grant(self, ctx: Ctx, index: int, epoch: int) -> None:
        """The receiver has consumed buffer ``index`` of launch ``epoch``: hand it back (a release store)."""
        ctx.store_counter(self.credit(index), model_epoch(epoch), scope=self.scope)

    def wait(self, ctx: Ctx, index: int, epoch: int, scope: Scope | None = None) -> None:
        """Before launch ``epoch`` overwrites buffer ``index``: wait until its credit has reached
        ``previous(epoch)`` (an acquire at ``scope``; None: the agent's own)."""
        credit, need = self.credit(index), previous(model_epoch(epoch))
        if reached(FRESH, need):
            return  # previous(FIRST) = 0xFFFFFFFF, which the fresh credit has reached: nothing to wait for
        ctx.wait_counter(credit, at_least=need, scope=scope)


def copy_stream(
    name: str,
    counts: ModelStepCounters,
    flags: ModelReadyFlags,
    read_tile: TileReader,
    write_tile: TileWriter,
    *,
    epoch: int = FIRST,
    barrier: bool = True,
    flag_first: bool = False,
) -> Agent:
    """The copy engine's stream for launch ``epoch``, as an agent: per step, wait for the step's count
    (``cuStreamWaitValue32``), read the step's tiles, write them to the receiver, then its memory barrier
    and the step's flag (``cuStreamWriteValue32``; ``flags`` has one flag per step of ``counts``).

    The copy engine is outside the PTX memory model; it runs off the SMs, placed with the host, where only
    system-scope operations reach it. ``barrier=False``: the flag write has no memory barrier before it (a
    relaxed write: it publishes nothing); ``flag_first``: the flag is raised before the step's data.
    """
    if flags.count != counts.steps:
        raise ProtocolError(
            f"copy_stream {name}: {flags.name} has {flags.count} flag(s) but {counts.name} counts {counts.steps} "
            "step(s): one flag per step"
        )
    model_epoch(epoch)

    def run(ctx: Ctx) -> None:
        for step in range(counts.steps):
            counts.wait(ctx, step)
            tiles = counts.step_tiles(step)
            data = [read_tile(ctx, tile) for tile in tiles]
            if flag_first:
                flags.publish(ctx, step, epoch, fenced=barrier)
            for tile, value in zip(tiles, data, strict=True):
                write_tile(ctx, tile, value)
            if not flag_first:
                flags.publish(ctx, step, epoch, fenced=barrier)

    return Agent(name, run, device=HOST)


def host_reader(
    name: str,
    flags: ModelReadyFlags,
    read_tile: TileReader,
    expect: Expected,
    *,
    tiles_per_flag: int = 1,
    epochs: Sequence[int] = (FIRST,),
    credits: ModelCredits | None = None,
    scope: Scope = Scope.SYSTEM,
    device: int | str = HOST,
    cluster: int = 0,
    cta: int = 0,
) -> Agent:
    """The receiver, as an agent: per launch of ``epochs`` and per flag, acquire the flag at ``scope``, read
    the flag's ``tiles_per_flag`` tiles, check each is ``expect(tile, epoch)``, and (with ``credits``) hand
    each tile back. A host thread by default; ``device=1`` (or another ``cluster``) with its ``scope`` for
    a reader on a peer GPU (or in another CTA of the device)."""
    check_positive("host_reader", "tiles_per_flag", tiles_per_flag)
    epochs = tuple(model_epoch(e, f"host_reader {name}: epoch") for e in epochs)
    if credits is not None and credits.count < flags.count * tiles_per_flag:
        raise ProtocolError(
            f"host_reader {name}: {credits.name} has {credits.count} credit(s) for {flags.count} flag(s) × "
            f"{tiles_per_flag} tile(s) = {flags.count * tiles_per_flag} tiles: one credit per tile"
        )

    def run(ctx: Ctx) -> None:
        for epoch in epochs:
            for index in range(flags.count):
                flags.wait(ctx, index, epoch, scope)
                for tile in range(index * tiles_per_flag, (index + 1) * tiles_per_flag):
                    got, want = read_tile(ctx, tile), expect(tile, epoch)
                    if got != want:
                        raise AssertionError(_stale(ctx.name, flags, index, epoch, tile, got, want))
                    if credits is not None:
                        credits.grant(ctx, tile, epoch)

    return Agent(name, run, device=device, cluster=cluster, cta=cta)


def _stale(who: str, flags: ModelReadyFlags, index: int, epoch: int, tile: int, got: Any, want: Any) -> str:
    relation = ">=" if flags.holds == "epoch" else "=="
    text = (
        f"{who} read tile {tile} as {got!r} in launch {epoch}, expected {want!r}: its wait for "
        f"{flags.flag(index)} {relation} {flags.token(epoch)} passed on a value that did not mean this launch's tile"
    )
    why = flags.confusion(epoch)
    return f"{text} — {why}" if why else text


__all__ = [
    "EPOCH_LIMIT",
    "HOLDS",
    "ModelCredits",
    "ModelReadyFlags",
    "ModelStepCounters",
    "TileReader",
    "check_positive",
    "copy_stream",
    "host_reader",
    "model_epoch",
]
