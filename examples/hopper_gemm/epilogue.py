"""The fused epilogue: elementwise terms applied to the fp32 accumulators before they are stored.

An epilogue is a tuple of :class:`EpilogueTerm` objects applied in order to every accumulator value
``x`` at output coordinates ``(row, col)``; each term reads its run-time operands from
:class:`EpilogueArgs`. Two ship with the example, enough for ``nn.Linear``:

* :class:`Scale` — ``x * alpha`` (``alpha`` a run-time Float32: changing it does not recompile);
* :class:`ColumnBias` — ``x + bias[col]`` (``bias`` a length-N vector in the output dtype).

Adding a term (a ReLU, a row scale, a residual read) is one small class with an ``apply`` and, if
it needs an operand, a field of :class:`EpilogueArgs`; :func:`terms_for` turns a
:class:`~hopper_gemm.config.Problem` into the tuple the kernel traces. Terms run in the math
warpgroups, on registers, once per accumulator value, before the values are converted and staged.

A term that reads memory may also split its ``apply`` into ``load(row, col, args)`` and
``apply_loaded(x, loaded)``: the kernel then issues the loads (:func:`load_operands`) while the tile's
last k-tile of wgmmas still runs, so their latency hides under it instead of holding the tensor cores
idle between tiles.
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
        ...


@dataclass(frozen=True)
class Scale:
    def apply(self, x: Any, row: Any, col: Any, args: EpilogueArgs) -> Any:
        return x * args.alpha


@dataclass(frozen=True)
class ColumnBias:
    def load(self, row: Any, col: Any, args: EpilogueArgs) -> Any:
        # Columns past N belong to a tile hanging over the edge; TMA clips their store, so any
        # in-bounds value will do, and clamping keeps the load in bounds without a branch.
        return args.bias[cutlass.min(col, args.n - 1)]

    def apply_loaded(self, x: Any, loaded: Any) -> Any:
        return x + loaded.to(cutlass.Float32)

    def apply(self, x: Any, row: Any, col: Any, args: EpilogueArgs) -> Any:
        return self.apply_loaded(x, self.load(row, col, args))


def terms_for(problem: Problem) -> tuple[EpilogueTerm, ...]:
    terms: list[EpilogueTerm] = []
    if problem.scaled:
        terms.append(Scale())
    if problem.bias:
        terms.append(ColumnBias())
    return tuple(terms)


def load_operands(terms: tuple[EpilogueTerm, ...], acc: cute.Tensor, coords: Any, args: EpilogueArgs) -> tuple:
    """Per term with a ``load``: its operand of every accumulator value, read now into registers (a
    fragment shaped like ``acc``); None for the others. Issue before the tile's last wgmma wait."""
    loaded = []
    for term in terms:
        if not hasattr(term, "load"):
            loaded.append(None)
            continue
        first = term.load(*coords[0], args)  # its type sizes the fragment
        values = cute.make_rmem_tensor(acc.shape, type(first))
        values[0] = first
        for i in range(1, cute.size(acc)):
            values[i] = term.load(*coords[i], args)
        loaded.append(values)
    return tuple(loaded)


def apply_terms(
    terms: tuple[EpilogueTerm, ...], acc: cute.Tensor, coords: Any, args: EpilogueArgs, loaded: tuple | None = None
) -> None:
    """Apply ``terms`` in place to every value of the accumulator fragment ``acc``.

    ``coords`` is the identity tensor partitioned like ``acc`` (each value's (row, col) in C);
    ``loaded``: :func:`load_operands`'s result (None: terms load their operands here).
    Traced as straight-line code: the fragment's size is static.
    """
    if not terms:
        return
    for i in range(cute.size(acc)):
        row, col = coords[i]
        value = acc[i]
        for t, term in enumerate(terms):
            if loaded is not None and loaded[t] is not None:
                value = term.apply_loaded(value, loaded[t][i])
            else:
                value = term.apply(value, row, col, args)
        acc[i] = value
