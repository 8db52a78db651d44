"""What the checker reports: findings, each with an interleaving that reproduces it, and a summary."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(enum.Enum):
    """An error breaks the kernel; a warning names something harmless here that is worth knowing."""

    ERROR = "error"
    WARNING = "warning"


class FindingKind(enum.Enum):
    """The kinds of protocol problems the checker finds; ``value`` is the one-line meaning."""

    DEADLOCK = "no agent can move and not all have finished"
    READ_UNCOMMITTED = "a read of data whose write is not ordered before it"
    OVERWRITE_UNRELEASED = "an overwrite of data whose earlier readers or writer are not ordered before it"
    OVER_ARRIVAL = "more arrivals in a phase than the barrier expects"
    WRONG_ROLE = "an agent arrives on a pipeline barrier that only the other side of the pipeline arrives on"
    FLAG_RACE = "two stores to one counter/flag word, neither ordered after the other (a write-write race)"
    PHASE_ALIASING = "a waiter passes (or can only pass) on the wrong phase of a barrier"
    DOUBLE_SET = "a set_flag on a flag that is already set"
    UNBALANCED_EXIT = "state left unbalanced at exit (outstanding commits, un-drained slots, flags, bulk stores)"
    AGENT_ERROR = "an agent function raised (a misuse of the pipeline API, or its own check failed)"
    COUNTER_OVERFLOW = "a counter signalled beyond its capacity (the signal is lost)"
    ARRIVAL_COUNT = (
        "a barrier's expected arrivals do not match the agents declared to arrive on it (found before exploring)"
    )
    REMOTE_AFTER_EXIT = (
        "a remote arrive or multicast TMA write into a peer CTA after every agent of that CTA finished (it has exited)"
    )
    CREDITS_LEFT = "signals left untaken on a counter at exit (harmless to this kernel)"
    ILLEGAL_FLAG = "a flag the target does not have: an illegal pipe pair, an id out of range (Ascend)"
    FLAG_CAUTION = "a legal but risky flag: an explicit reserved id, one id from one source pipe to two pipes (Ascend)"
    PEEK_NEVER_COMPLETES = (
        "a try_wait/try_acquire on a phase that does not complete before exit: on the GPU it blocks until "
        "mbarrier.try_wait's time limit (~4 µs on an H100) at every launch"
    )
    STATIC_MISMATCH = (
        "a note: the count check before exploring saw a mismatch the search did not confirm (it decides: no hang found)"
    )

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self in _WARNINGS else Severity.ERROR


_WARNINGS = frozenset(
    {FindingKind.CREDITS_LEFT, FindingKind.FLAG_CAUTION, FindingKind.STATIC_MISMATCH, FindingKind.PEEK_NEVER_COMPLETES}
)


@dataclass(frozen=True)
class Finding:
    """One protocol error: ``kind``, a message naming the barrier/slot/role, and how to reproduce it.

    ``trace`` is the numbered interleaving (one line per operation); ``schedule`` is the sequence of
    moves (agent names, or ``tma:...`` for a TMA load landing) that :func:`pipes.check.replay` re-runs.
    """

    kind: FindingKind
    message: str
    trace: tuple[str, ...]
    schedule: tuple[str, ...]

    @property
    def severity(self) -> Severity:
        return self.kind.severity

    def __str__(self) -> str:
        steps = "\n".join(f"    {i}. {line}" for i, line in enumerate(self.trace, 1))
        label = self.kind.name if self.severity is Severity.ERROR else f"{self.kind.name} (warning)"
        if not self.schedule and self.trace and self.trace[0].startswith("declared:"):
            return f"{label}: {self.message}\n  before exploring:\n{steps}"
        return f"{label}: {self.message}\n  interleaving ({len(self.schedule)} moves):\n{steps}"


@dataclass
class Report:
    """The result of :func:`pipes.check.check`.

    ``states`` counts distinct model states visited (exhaustive search plus random runs);
    ``exhaustive`` is True when the search covered every reachable state (no bound was hit), which
    makes an ``ok`` report a proof for this protocol's parameters.
    """

    protocol: str
    findings: list[Finding] = field(default_factory=list)
    states: int = 0
    transitions: int = 0
    exhaustive: bool = False
    max_states: int = 0
    random_runs: int = 0
    seed: int | None = None
    seconds: float = 0.0
    agent_runs: int = 0
    symmetric: tuple[tuple[str, ...], ...] = ()
    """Groups of interchangeable agents explored as one orbit (``states`` counts orbits)."""

    @property
    def ok(self) -> bool:
        """No errors (warnings may be present)."""
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    def kinds(self) -> set[FindingKind]:
        return {f.kind for f in self.findings}

    def first(self, kind: FindingKind) -> Finding | None:
        return next((f for f in self.findings if f.kind is kind), None)

    def __str__(self) -> str:
        scope = "exhaustive" if self.exhaustive else f"bounded at {self.max_states} states (not a proof)"
        random = f", {self.random_runs} random runs (seed {self.seed})" if self.random_runs else ""
        if self.symmetric:
            random += ", symmetry: " + "; ".join("{" + ", ".join(group) + "}" for group in self.symmetric)
        if self.ok:
            verdict = "OK" + (f" with {len(self.warnings)} warning(s)" if self.warnings else "")
        else:
            verdict = f"{len(self.findings)} finding(s)"
        head = (
            f"pipes.check {self.protocol}: {verdict} — "
            f"{self.states} states, {self.transitions} transitions, {scope}{random}, {self.seconds:.2f} s"
        )
        return "\n".join([head, *(f"[{i}] {f}" for i, f in enumerate(self.findings, 1))])
