"""The ``--trace`` picture: per CTA, when it computed, stored, shipped each tile, and when the host consumed it.

From the device timestamps (``%globaltimer``, ns, comparable across SMs) of one launch with
``OPT_STAMPS``: the storing warp's epilogue begin/end per tile, the communication warp's push begin/end,
the CTA's start/end. The MMA mainloop of a tile is the span between the previous tile's epilogue end (or
the CTA's start) and its epilogue begin. Host consumption times (``perf_counter_ns``) are mapped onto
the device clock by the kernel start: the moment the host saw the first CTA's start flag is taken as
that CTA's start stamp (off by the flag's trip over PCIe and the poll interval, about a microsecond).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .args import (
    CTA_STAMPS,
    EPI_BEGIN,
    EPI_END,
    MAX_TRACED_CTAS,
    PUSH_BEGIN,
    PUSH_END,
    TILE_CTA,
    TILE_SM,
    TILE_STAMPS,
)

ROLES = ("MMA mainloop", "epilogue stores", "comm push", "host consumed")
COLORS = {"MMA mainloop": "#4c72b0", "epilogue stores": "#dd8452", "comm push": "#55a868", "host consumed": "#c44e52"}


@dataclass(frozen=True)
class Span:
    cta: int
    role: str
    start_us: float
    end_us: float
    tile: int
    sm: int = -1


def spans(
    stamps: np.ndarray, tiles: int, ctas: int, host_ns: np.ndarray | None = None, host_start_ns: int = -1
) -> list[Span]:
    """Every role's spans, in µs from the first CTA's start. ``host_ns``: per tile, when the host consumed it."""
    cta_t = stamps[: MAX_TRACED_CTAS * CTA_STAMPS].reshape(MAX_TRACED_CTAS, CTA_STAMPS)[:ctas]
    per_tile = stamps[MAX_TRACED_CTAS * CTA_STAMPS :][: tiles * TILE_STAMPS].reshape(tiles, TILE_STAMPS)
    started = cta_t[:, 0][cta_t[:, 0] > 0]
    if started.size == 0:
        raise ValueError("no CTA start stamp: was the launch made with stamps on (OPT_STAMPS)?")
    origin = int(started.min())
    us = lambda ns: (float(ns) - origin) / 1e3  # noqa: E731
    out: list[Span] = []
    shipped = np.flatnonzero(per_tile[:, PUSH_END] > 0)
    for cta in range(ctas):
        mine = shipped[per_tile[shipped, TILE_CTA] == cta]
        mine = mine[np.argsort(per_tile[mine, EPI_BEGIN])]
        previous = int(cta_t[cta, 0])
        for tile in mine:
            row = per_tile[tile]
            sm = int(row[TILE_SM])
            out.append(Span(cta, "MMA mainloop", us(previous), us(row[EPI_BEGIN]), int(tile), sm))
            out.append(Span(cta, "epilogue stores", us(row[EPI_BEGIN]), us(row[EPI_END]), int(tile), sm))
            out.append(Span(cta, "comm push", us(row[PUSH_BEGIN]), us(row[PUSH_END]), int(tile), sm))
            if host_ns is not None and host_start_ns >= 0 and host_ns[tile] >= 0:
                seen = us(origin + (int(host_ns[tile]) - host_start_ns))
                out.append(Span(cta, "host consumed", seen, seen, int(tile), sm))
            previous = int(row[EPI_END])
    return out


def draw(all_spans: list[Span], path: str, ctas: list[int], title: str) -> None:
    """One band per CTA, one lane per role; host consumption as ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 1.2 + 1.1 * len(ctas)))
    lanes = {role: i for i, role in enumerate(ROLES)}
    height = 1.0 / (len(ROLES) + 1)
    labels, ticks = [], []
    for band, cta in enumerate(ctas):
        sm = next((s.sm for s in all_spans if s.cta == cta and s.sm >= 0), None)
        where = f"CTA {cta}" + (f" (SM {sm})" if sm is not None else "")
        for role, lane in lanes.items():
            y = band + lane * height
            ticks.append(y + height / 2)
            labels.append(f"{where}: {role}")
            mine = [s for s in all_spans if s.cta == cta and s.role == role]
            if role == "host consumed":
                ax.vlines([s.start_us for s in mine], y, y + height * 0.9, color=COLORS[role], linewidth=1.5)
            else:
                bars = [(s.start_us, max(s.end_us - s.start_us, 0.2)) for s in mine]
                ax.broken_barh(bars, (y, height * 0.9), facecolors=COLORS[role], edgecolor="white", linewidth=0.3)
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.set_xlabel("µs since the first CTA started (device %globaltimer; host times mapped by the start flag)")
    ax.set_title(title, fontsize=9)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def overlap_summary(all_spans: list[Span]) -> dict[str, float]:
    """How much shipping happened while the GEMM still ran, per the stamps (µs)."""
    pushes = [s for s in all_spans if s.role == "comm push"]
    math_end = max((s.end_us for s in all_spans if s.role == "epilogue stores"), default=0.0)
    before = sum(max(0.0, min(s.end_us, math_end) - s.start_us) for s in pushes)
    total = sum(s.end_us - s.start_us for s in pushes)
    return {"gemm_end_us": math_end, "push_us": total, "push_before_gemm_end_us": before}


def render(
    stamps_tensor: Any, receiver: Any, ctas: int, path: str, title: str, consumption: Any = None, show: int = 4
) -> list[Span]:
    """Read the stamps of one launch (a device int64 tensor) and draw ``show`` CTAs to ``path``."""
    stamps = stamps_tensor.cpu().numpy()
    host_ns = consumption.seen_ns if consumption is not None else None
    host_start = consumption.start_ns if consumption is not None else -1
    found = spans(stamps, receiver.tiles, ctas, host_ns, host_start)
    draw(found, path, list(range(min(show, ctas))), title)
    return found
