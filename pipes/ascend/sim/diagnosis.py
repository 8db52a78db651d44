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


@dataclass
class Diagnosis:
    """One problem: its kind, a readable message, and ``signature`` (what makes two reports the same)."""

    kind: Kind
    message: str
    signature: tuple = ()
    severity: Severity = Severity.ERROR
    occurrences: int = 1
    schedules: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        more = f" (×{self.occurrences})" if self.occurrences > 1 else ""
        where = f" [schedules: {', '.join(self.schedules[:4])}{', …' if len(self.schedules) > 4 else ''}]"
        return f"{self.severity.value.upper()} {self.kind.value}{more}: {self.message}{where if self.schedules else ''}"


class Diagnoses:
    """An ordered, de-duplicated collection: a repeat of a signature only bumps its count."""

    def __init__(self) -> None:
        self._by_signature: dict[tuple, Diagnosis] = {}

    def add(self, diagnosis: Diagnosis, schedule: str | None = None) -> None:
        key = (diagnosis.kind, diagnosis.signature or (diagnosis.message,))
        existing = self._by_signature.get(key)
        if existing is None:
            existing = Diagnosis(diagnosis.kind, diagnosis.message, diagnosis.signature, diagnosis.severity, 0)
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
