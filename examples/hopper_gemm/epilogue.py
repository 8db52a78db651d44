"""The fused epilogue: elementwise terms applied to the fp32 accumulators before they are stored.

A tuple of terms applies in order to every accumulator value ``x`` at output ``(row, col)``, in registers:
:class:`Scale` (``x * alpha``), :class:`ColumnBias` (``x + bias[col]``) and :class:`GeluTanh` ship, enough for
``nn.Linear`` and an MLP's first projection.
Another term (a ReLU, a row scale) is one small class with an ``apply`` and, if it needs an operand, a
field of :class:`EpilogueArgs`. A term that reads memory is a :class:`LoadingTerm`, whose loads the
kernel issues while the tile's last k-tile of wgmmas still runs (:func:`load_operands`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import cutlass
import cutlass.cute as cute

from .config import Problem


@dataclass
class EpilogueArgs:
    """Run-time operands of the epilogue terms (kernel arguments)."""

    alpha: Any  # Float32
    bias: Any  # cute.Tensor of shape (N,) or None
    n: Any  # Int32: columns of the output (bias reads are clamped below it)


class EpilogueTerm(Protocol):
    def apply(self, x: Any, row: Any, col: Any, args: EpilogueArgs) -> Any:
        """The new value of accumulator ``x`` at output ``(row, col)`` (fp32)."""


class LoadingTerm(Protocol):
    """A term with a memory operand: read for the whole fragment first, applied per value after."""

    def load_fragment(self, acc: cute.Tensor, coords: Any, args: EpilogueArgs) -> cute.Tensor:
        """The operand of every value of ``acc`` (``coords``: each value's (row, col) in C), in registers."""

    def apply_loaded(self, x: Any, loaded: Any) -> Any:
        """The new value of accumulator ``x`` given its operand ``loaded``."""


@dataclass(frozen=True)
class Scale:
    def apply(self, x: Any, row: Any, col: Any, args: EpilogueArgs) -> Any:
        return x * args.alpha


@dataclass(frozen=True)
class ColumnBias:
    """``x + bias[col]``. In a wgmma accumulator fragment values ``4g … 4g+3`` are columns (c, c+1, c, c+1)
    of rows (r, r, r+8, r+8), c even: each group of four reads the one 32-bit word ``bias[c : c+2]`` (half
    the load instructions and registers of 2-byte loads)."""

    def load_fragment(self, acc: cute.Tensor, coords: Any, args: EpilogueArgs) -> cute.Tensor:
        # acc's first mode is the wgmma atom's ((2, 2, N/8), …): (column +1, row +8, column +8).
        if cute.size(acc) % 4 or cute.size(acc.shape[0][0]) != 2 or cute.size(acc.shape[0][1]) != 2:
            raise ValueError(f"ColumnBias: accumulator fragment {acc.shape} is not a wgmma C fragment")
        dtype = args.bias.element_type
        last_word = (args.n - 1) // 2
        # The bias is 16-byte aligned (launch.py's assumed alignment, api.py's check), so a word never
        # straddles a granule: with an odd N the last word's upper half is the element past the end, in
        # the same 16 bytes as the last one (no fault), and its column is past N, which TMA clips.
        word_ptr = cute.recast_ptr(args.bias.iterator, dtype=cutlass.Uint32)
        words = cute.make_tensor(word_ptr, cute.make_layout(last_word + 1))
        values = cute.make_rmem_tensor(acc.shape, dtype)
        pair = cute.make_rmem_tensor((2,), dtype)
        # (Not the other way round: a (1,) register tensor has stride 0, and its recast is one element.)
        word = cute.recast_tensor(pair, cutlass.Uint32)
        for g in range(0, cute.size(acc), 4):
            # Columns past N belong to a tile hanging over the edge; clamping keeps the read in bounds.
            word[0] = words[cutlass.min(coords[g][1] // 2, last_word)]
            for v in range(4):
                values[g + v] = pair[v % 2]
        return values

    def apply_loaded(self, x: Any, loaded: Any) -> Any:
        return x + loaded.to(cutlass.Float32)


#: √(2/π) and the cubic's coefficient of GELU's tanh form.
_GELU_SCALE = 0.7978845608028654
_GELU_CUBIC = 0.044715


@dataclass(frozen=True)
class GeluTanh:
    """``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))``, torch's ``gelu(approximate="tanh")``, on the fp32
    accumulator: one ``tanh.approx.f32`` (relative error ~2⁻¹¹, below bf16's and fp16's rounding) and five
    FMAs per value, where torch's separate pass reads and writes the whole output once more."""

    def apply(self, x: Any, row: Any, col: Any, args: EpilogueArgs) -> Any:
        inner = x * (_GELU_SCALE + (_GELU_SCALE * _GELU_CUBIC) * x * x)
        half = x * 0.5
        return half + half * cute.math.tanh(inner, approx=True)


def terms_for(problem: Problem) -> tuple[EpilogueTerm | LoadingTerm, ...]:
    terms: list[EpilogueTerm | LoadingTerm] = []
    if problem.scaled:
        terms.append(Scale())
    if problem.bias:
        terms.append(ColumnBias())
    if problem.activation == "gelu_tanh":
        terms.append(GeluTanh())
    return tuple(terms)


def load_operands(
    terms: tuple[EpilogueTerm | LoadingTerm, ...], acc: cute.Tensor, coords: Any, args: EpilogueArgs
) -> tuple:
    """Per term with a ``load_fragment``: its operand of every accumulator value, read now into registers
    (a fragment shaped like ``acc``); None for the others. Issue before the tile's last wgmma wait."""
    return tuple(term.load_fragment(acc, coords, args) if hasattr(term, "load_fragment") else None for term in terms)


def apply_terms(
    terms: tuple[EpilogueTerm | LoadingTerm, ...],
    acc: cute.Tensor,
    coords: Any,
    args: EpilogueArgs,
    loaded: tuple | None = None,
) -> None:
    """Apply ``terms`` in place to every value of the accumulator fragment ``acc`` (``coords``: each value's
    (row, col) in C). ``loaded``: :func:`load_operands`'s result; a loading term without one reads here."""
    if not terms:
        return
    operands = [None if loaded is None else loaded[t] for t in range(len(terms))]
    for t, term in enumerate(terms):
        if operands[t] is None and hasattr(term, "load_fragment"):
            operands[t] = term.load_fragment(acc, coords, args)
    for i in range(cute.size(acc)):
        row, col = coords[i]
        value = acc[i]
        for t, term in enumerate(terms):
            if operands[t] is not None:
                value = term.apply_loaded(value, operands[t][i])
            else:
                value = term.apply(value, row, col, args)
        acc[i] = value
