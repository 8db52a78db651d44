"""A host-side CuTe DSL function printing ``read_once_policy`` of a run-time reader count (its own file:
the DSL compiles a function from its source)."""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Int32

from pipes.cute import read_once_policy


@cute.jit
def print_policy(readers: Int32) -> None:
    cute.printf("policy {}", read_once_policy(readers))
