"""What the simulator found: one :class:`Diagnosis` per distinct problem, gathered into reports."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Kind(enum.Enum):
    """The kinds of problem the simulator reports."""

    DEADLOCK = "deadlock"
    UNMATCHED_WAIT = "wait never matched"
    DOUBLE_SET = "set on an already-set flag"
    FLAG_LEFT_SET = "flag left set at exit"
    FRAMEWORK_FLAG = "framework pre-set flag disturbed"
    ID_OUT_OF_RANGE = "event id out of range"
    ID_RESERVED = "reserved event id"
    ILLEGAL_PAIR = "illegal flag pair"
    SHARED_SOURCE_ID = "id shared from one source pipe"
    LOST_SIGNAL = "cross-core flag set again before it was taken (binary reading)"
    COUNTER_OVERFLOW = "cross-core counter overflow"
    CREDITS_LEFT = "cross-core signals left untaken at exit"
    DATA_HAZARD = "data hazard"
    WRONG_RESULT = "wrong result"


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


FINDING_NAMES: dict[Kind, str] = {
    Kind.DEADLOCK: "DEADLOCK",
    Kind.UNMATCHED_WAIT: "DEADLOCK",
    Kind.DOUBLE_SET: "DOUBLE_SET",
    Kind.FLAG_LEFT_SET: "UNBALANCED_EXIT",
    Kind.FRAMEWORK_FLAG: "UNBALANCED_EXIT",
    Kind.ID_OUT_OF_RANGE: "ILLEGAL_FLAG",
    Kind.ILLEGAL_PAIR: "ILLEGAL_FLAG",
    Kind.ID_RESERVED: "FLAG_CAUTION",
    Kind.SHARED_SOURCE_ID: "FLAG_CAUTION",
    Kind.LOST_SIGNAL: "COUNTER_OVERFLOW",
    Kind.COUNTER_OVERFLOW: "COUNTER_OVERFLOW",
    Kind.CREDITS_LEFT: "CREDITS_LEFT",
    Kind.WRONG_RESULT: "WRONG_RESULT",
}
"""One naming for :meth:`Simulator.explore` (sampled runs), :meth:`Simulator.prove` (every schedule) and
``pipes.check``: each simulator :class:`Kind` → the :class:`pipes.check.FindingKind` name both report it as
(:attr:`Diagnosis.name`; ``prove``'s findings carry it as their ``kind``). For each pair the more precise name
wins:

- ``LOST_SIGNAL`` / ``COUNTER_OVERFLOW`` → ``COUNTER_OVERFLOW``: the cause (a cross-core counter full; under the
  binary reading, ``cross_core_capacity=1``, it holds one signal) rather than its consequence;
- ``DATA_HAZARD`` → ``READ_UNCOMMITTED`` (a read not ordered after a write of the data) or
  ``OVERWRITE_UNRELEASED`` (a write not ordered after an earlier read or write) — set per hazard by
  :func:`.verdict.report_hazard`, a cross-core race named by the access the schedule runs second;
- ``UNMATCHED_WAIT`` → ``DEADLOCK`` (``prove`` folds the unmatched waits into the deadlock's message);
- ``FLAG_LEFT_SET`` / ``FRAMEWORK_FLAG`` → ``UNBALANCED_EXIT``; ``ID_OUT_OF_RANGE`` / ``ILLEGAL_PAIR`` →
  ``ILLEGAL_FLAG``; ``ID_RESERVED`` / ``SHARED_SOURCE_ID`` → ``FLAG_CAUTION`` (the finer simulator kind stays
  in :attr:`Diagnosis.kind` and, for ``prove``'s recording findings, in the message);
- ``WRONG_RESULT`` only comes from runs with values (``explore``); ``prove`` computes none (its hazards stand
  for the wrong results), so it has no ``FindingKind``.

The messages are the same text in both (built by the same machine): only a hazard's closing remark differs —
a sampled run says what its timing showed, ``prove`` says what the schedule shows.
"""


@dataclass
class Diagnosis:
    """One problem: its kind, a readable message, and ``signature`` (what makes two reports the same)."""

    kind: Kind
    message: str
    signature: tuple = ()
    severity: Severity = Severity.ERROR
    occurrences: int = 1
    schedules: list[str] = field(default_factory=list)
    finding: str | None = None
    """The shared finding-kind name where the kind alone does not decide it (a data hazard's)."""

    @property
    def name(self) -> str:
        """The kind's name as ``prove`` and ``pipes.check`` report it (see :data:`FINDING_NAMES`)."""
        if self.finding is not None:
            return self.finding
        return FINDING_NAMES.get(self.kind, self.kind.name)

    def __str__(self) -> str:
        more = f" (×{self.occurrences})" if self.occurrences > 1 else ""
        where = f" [schedules: {', '.join(self.schedules[:4])}{', …' if len(self.schedules) > 4 else ''}]"
        head = f"{self.severity.value.upper()} {self.name} ({self.kind.value}){more}"
        return f"{head}: {self.message}{where if self.schedules else ''}"


class Diagnoses:
    """An ordered, de-duplicated collection: a repeat of a signature only bumps its count."""

    def __init__(self) -> None:
        self._by_signature: dict[tuple, Diagnosis] = {}

    def add(self, diagnosis: Diagnosis, schedule: str | None = None) -> None:
        key = (diagnosis.kind, diagnosis.signature or (diagnosis.message,))
        existing = self._by_signature.get(key)
        if existing is None:
            existing = Diagnosis(
                diagnosis.kind, diagnosis.message, diagnosis.signature, diagnosis.severity, 0, finding=diagnosis.finding
            )
            self._by_signature[key] = existing
        existing.occurrences += diagnosis.occurrences
        if schedule is not None and schedule not in existing.schedules:
            existing.schedules.append(schedule)

    def __iter__(self):
        return iter(self._by_signature.values())

    def __len__(self) -> int:
        return len(self._by_signature)

    def of(self, kind: Kind) -> list[Diagnosis]:
        return [d for d in self if d.kind is kind]

    @property
    def errors(self) -> list[Diagnosis]:
        return [d for d in self if d.severity is Severity.ERROR]


@dataclass
class RunResult:
    """One schedule's run: what it found and the GM tensors it left."""

    schedule: str
    diagnoses: Diagnoses
    outputs: dict[str, Any]
    steps: int
    completed: bool

    @property
    def ok(self) -> bool:
        return not self.diagnoses.errors

    def kinds(self) -> set[Kind]:
        return {d.kind for d in self.diagnoses}

    def names(self) -> set[str]:
        """The finding-kind names found, as ``prove`` names them (:data:`FINDING_NAMES`)."""
        return {d.name for d in self.diagnoses}


@dataclass
class Report:
    """Every schedule explored, and the union of their diagnoses."""

    runs: list[RunResult]
    diagnoses: Diagnoses
    seconds: float = 0.0
    """Wall time of the whole exploration."""

    @property
    def ok(self) -> bool:
        return not self.diagnoses.errors

    def kinds(self) -> set[Kind]:
        return {d.kind for d in self.diagnoses}

    def names(self) -> set[str]:
        """The finding-kind names found, as ``prove`` names them (:data:`FINDING_NAMES`)."""
        return {d.name for d in self.diagnoses}

    def of(self, kind: Kind) -> list[Diagnosis]:
        return self.diagnoses.of(kind)

    def text(self, limit: int = 20) -> str:
        head = f"{len(self.runs)} schedule(s) explored: " + (
            "no problems found" if not len(self.diagnoses) else f"{len(self.diagnoses)} distinct problem(s)"
        )
        lines = [head]
        for i, d in enumerate(self.diagnoses):
            if i == limit:
                lines.append(f"… and {len(self.diagnoses) - limit} more")
                break
            lines.append("- " + str(d).replace("\n", "\n    "))
        return "\n".join(lines)

    __str__ = text
