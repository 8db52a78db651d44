"""``--shapes`` of the GEMM benchmarks: comma-separated M×N×K (``x`` or ``×``), checked with a named error."""

from __future__ import annotations

import argparse


def parse_shapes(parser: argparse.ArgumentParser, text: str, max_m: int | None = None) -> list[tuple[int, int, int]]:
    """The shapes ``text`` names; ``parser.error`` (exit 2, the message on stderr) for a malformed entry,
    an extent below 1, or M above ``max_m``."""
    try:
        shapes = [tuple(int(v) for v in s.replace("×", "x").split("x")) for s in text.split(",")]
    except ValueError:
        parser.error(f"--shapes {text!r}: expected comma-separated MxNxK of integers")
    if any(len(s) != 3 or min(s) < 1 for s in shapes):
        parser.error(f"--shapes {text!r}: each entry needs three extents of at least 1, MxNxK")
    if max_m is not None and any(s[0] > max_m for s in shapes):
        parser.error(f"--shapes {text!r}: M is at most {max_m} here")
    return shapes


def table_rows(parser: argparse.ArgumentParser, text: str, rows: list[tuple]) -> list[tuple]:
    """The rows of a benchmark's table (tuples that start with M, N, K) that ``text`` names, as
    comma-separated ``MxNxK`` (``x`` or ``×``); ``parser.error`` when it names none of them."""
    wanted = {w.strip().replace("×", "x") for w in text.split(",")}
    chosen = [r for r in rows if f"{r[0]}x{r[1]}x{r[2]}" in wanted]
    if not chosen:
        parser.error(f"--shapes {text!r} names no row of the table: {[r[:3] for r in rows]}")
    return chosen
