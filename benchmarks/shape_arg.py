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
