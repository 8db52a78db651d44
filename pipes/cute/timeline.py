"""Host side of trace mode: turn a :class:`~pipes.cute.trace.TraceLog` into spans and timeline PNGs.

One picture per SM: a row per (block, warp) that recorded, time along x. A producer holds a slot
from ``ACQUIRE`` (the slot was empty) to ``COMMIT``; a consumer from ``WAIT`` (the slot was full) to
``RELEASE`` — an ordered barrier's group holds its turn from ``WAIT`` to ``RELEASE`` likewise. Bars
of the same pipeline share a colour family, one shade per slot; producer bars are hatched; wide bars
show their slot number. Long runs are zoomed to the first ``spans_per_row`` spans per warp. Overlap
between roles is then visible directly: the TMA warp's bars under the math warpgroups', one
warpgroup's epilogue under the other's MMA.

Needs matplotlib (the ``dev`` extra); :func:`spans` does not.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .trace import TraceLog

__all__ = ["EVENT_NAMES", "Span", "draw_timeline", "draw_timelines", "spans"]

ACQUIRE, COMMIT, WAIT, RELEASE = 0, 1, 2, 3  # pipes.cute.debug.TraceEvent
EVENT_NAMES = {ACQUIRE: "acquire", COMMIT: "commit", WAIT: "wait", RELEASE: "release"}
_OPENS = {ACQUIRE: "producer", WAIT: "consumer"}
_CLOSES = {COMMIT: "producer", RELEASE: "consumer"}


@dataclass(frozen=True)
class Span:
    """One slot (or turn) held by one warp: ``side`` is "producer" or "consumer"."""

    sm: int
    block: int
    warp: int
    pipeline: int
    side: str
    slot: int
    start: int
    end: int


def spans(records: np.ndarray) -> list[Span]:
    """Pair each ACQUIRE with the next COMMIT and each WAIT with the next RELEASE of the same warp and
    pipeline (handles hand slots out and back in FIFO order). Unpaired events make no span."""
    open_: dict[tuple[int, int, int, int, str], deque] = defaultdict(deque)
    out: list[Span] = []
    for r in np.sort(records, order="time"):
        key = (int(r["sm"]), int(r["block"]), int(r["warp"]), int(r["pipeline"]))
        event = int(r["event"])
        if event in _OPENS:
            open_[(*key, _OPENS[event])].append((int(r["time"]), int(r["slot"])))
        elif event in _CLOSES and open_[(*key, _CLOSES[event])]:
            start, slot = open_[(*key, _CLOSES[event])].popleft()
            out.append(Span(*key, _CLOSES[event], slot, start, int(r["time"])))
    return out


def _unit(log: TraceLog) -> tuple[float, str]:
    return (1e-3, "µs") if log.clock == "globaltimer" else (1.0, "cycles")


def _window_end(found: list[Span], per_row: int) -> int | None:
    """End of the ``per_row``-th span of the busiest rows: zoom there when rows hold more than that."""
    by_row: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s in found:
        by_row[(s.block, s.warp)].append(s.end)
    ends = [sorted(v)[per_row - 1] for v in by_row.values() if len(v) > per_row]
    return min(ends) if ends else None


_SHADES = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys")


def _colour(pipeline_rank: int, slot: int):  # noqa: ANN202 - an RGBA tuple
    import matplotlib

    cmap = matplotlib.colormaps[_SHADES[pipeline_rank % len(_SHADES)]]
    return cmap(0.45 + 0.15 * (slot % 4))


def _draw_sm(ax, log: TraceLog, sm: int, max_rows: int, per_row: int) -> None:  # noqa: ANN001 - Axes
    records = log.for_sm(sm)
    if len(records) == 0:
        ax.set_title(f"SM {sm}: no records")
        return
    scale, unit = _unit(log)
    t0 = int(records["time"].min())
    rows = sorted({(int(r["block"]), int(r["warp"])) for r in records})[:max_rows]
    row_of = {row: i for i, row in enumerate(rows)}
    pipelines = sorted({int(p) for p in records["pipeline"]})
    rank = {p: i for i, p in enumerate(pipelines)}
    found = spans(records)
    until = _window_end(found, per_row)
    shown = [s for s in found if (s.block, s.warp) in row_of and (until is None or s.start <= until)]
    last = until if until is not None else int(records["time"].max())
    extent = max(1, last - t0)
    for s in shown:
        row = row_of[(s.block, s.warp)]
        if (s.end - s.start) > extent / 50:  # room for the slot number
            ax.text((s.start + s.end - 2 * t0) / 2 * scale, row, str(s.slot), ha="center", va="center", fontsize=6)
        ax.broken_barh(
            [((s.start - t0) * scale, max((s.end - s.start) * scale, scale))],
            (row - 0.35, 0.7),
            facecolors=_colour(rank[s.pipeline], s.slot),
            edgecolor="black",
            linewidth=0.3,
            hatch="//" if s.side == "producer" else None,
        )
    events = [r for r in records if until is None or int(r["time"]) <= until]
    if len(events) <= 3000:
        for r in events:
            row = row_of.get((int(r["block"]), int(r["warp"])))
            if row is not None:
                ax.plot((int(r["time"]) - t0) * scale, row, marker="|", color="black", markersize=4, linewidth=0)
    ax.set_xlim(-0.01 * extent * scale, 1.01 * extent * scale)
    ax.set_yticks(range(len(rows)), [f"block {b} warp {w}" for b, w in rows], fontsize=7)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"time since the SM's first record ({unit}, {log.clock})")
    zoom = f" — first {per_row} spans per warp of up to {max(_row_counts(found))}" if until is not None else ""
    ax.set_title(f"SM {sm}{zoom}")
    sides = {(s.pipeline, s.side) for s in found}
    handles = [
        _patch(_colour(rank[p], 1), f"{log.names.get(p, f'pipeline {p}')} {label}", hatch)
        for p in pipelines
        for side, label, hatch in (("producer", "producer", "//"), ("consumer", "consumer / turn", None))
        if (p, side) in sides
    ]
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper right", ncols=2)


def _row_counts(found: list[Span]) -> list[int]:
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for s in found:
        counts[(s.block, s.warp)] += 1
    return list(counts.values()) or [0]


def _patch(colour, label: str, hatch: str | None):  # noqa: ANN001, ANN202
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, edgecolor="black", hatch=hatch, label=label)


def draw_timeline(
    log: TraceLog,
    path: str | Path,
    *,
    sms: Iterable[int] | None = None,
    max_sms: int = 4,
    max_rows: int = 48,
    spans_per_row: int = 40,
) -> Path:
    """Draw one panel per SM (the first ``max_sms`` that recorded, or ``sms``) into one PNG.

    A panel whose warps hold more than ``spans_per_row`` spans shows only the time of the first
    ``spans_per_row`` (a long run is unreadable at full width; the title says so).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = list(sms) if sms is not None else log.sms[:max_sms]
    if not chosen:
        raise ValueError(
            "the trace holds no records (was the tracer passed to the pipelines and the buffer copied back?)"
        )
    heights = [
        0.6 + 0.28 * min(max_rows, len({(b, w) for b, w in log.for_sm(s)[["block", "warp"]].tolist()})) for s in chosen
    ]
    fig, axes = plt.subplots(len(chosen), 1, figsize=(14, sum(heights) + 1.2 * len(chosen)), squeeze=False)
    for ax, sm in zip(axes[:, 0], chosen, strict=True):
        _draw_sm(ax, log, sm, max_rows, spans_per_row)
    if log.dropped:
        fig.suptitle(f"{sum(log.dropped.values())} records dropped (raise TraceLayout.capacity)", color="red")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_timelines(
    log: TraceLog, directory: str | Path, *, max_sms: int | None = None, max_rows: int = 48, spans_per_row: int = 40
) -> list[Path]:
    """One PNG per SM, ``directory/timeline_sm<N>.png``; returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chosen = log.sms if max_sms is None else log.sms[:max_sms]
    return [
        draw_timeline(log, directory / f"timeline_sm{sm}.png", sms=[sm], max_rows=max_rows, spans_per_row=spans_per_row)
        for sm in chosen
    ]
