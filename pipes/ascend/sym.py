"""Symbolic integers for tracing a kernel once into source text (TileLang stand-in, AscendC).

A :class:`Sym` carries its Python spelling and its C spelling; ``+ - * // %`` and comparisons build new
ones with the parentheses precedence needs, so the ring arithmetic of :mod:`pipes.state` runs on them
unchanged and ``stage_index(i, 2)`` prints as ``i % 2``. A Sym has no truth value: branching on one is
a tracing mistake (use the builder's ``when``).
"""

from __future__ import annotations

from typing import Any

_ATOM = 100
_PREC = {"*": 12, "//": 12, "%": 12, "+": 11, "-": 11, "<": 6, "<=": 6, ">": 6, ">=": 6, "==": 6, "!=": 6}
# Bitwise operators bind differently relative to comparisons in C and Python: always parenthesize around them.
_BITWISE = {"&": 5, "^": 5}
_C_OP = {"//": "/"}


class Sym:
    """An integer expression known only by name while tracing (a loop variable, a named constant)."""

    __slots__ = ("py", "c", "prec", "value")

    def __init__(self, py: str, c: str | None = None, prec: int = _ATOM, value: int | None = None) -> None:
        self.py = py
        self.c = c if c is not None else py
        self.prec = prec
        self.value = value
        """The number behind a named constant (None for a true unknown such as a loop variable)."""

    def text(self, dialect: str = "py") -> str:
        return self.c if dialect == "c" else self.py

    def __repr__(self) -> str:
        return self.py

    __str__ = __repr__

    def __bool__(self) -> bool:
        raise TypeError(f"cannot branch on the traced value {self.py!r} in Python: use the builder's when(cond, body)")

    def __index__(self) -> int:
        raise TypeError(f"{self.py!r} is a traced value, not a Python int")


def _wrap(value: Any, prec: int, right: bool = False) -> tuple[str, str]:
    if isinstance(value, Sym):
        needs = value.prec < prec or (right and value.prec == prec and prec < _ATOM)
        return (f"({value.py})", f"({value.c})") if needs else (value.py, value.c)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"cannot combine a traced value with {value!r}: only ints and Syms")
    return (f"({value})", f"({value})") if value < 0 else (str(value), str(value))


def _binary(op: str, left: Any, right: Any) -> Any:
    if op == "+" and isinstance(right, int) and right == 0:
        return left
    if op == "+" and isinstance(left, int) and left == 0:
        return right
    if op in ("*", "//") and isinstance(right, int) and right == 1:
        return left
    if op == "%" and isinstance(right, int) and right == 1:
        return 0
    prec = _PREC.get(op) or _BITWISE[op]
    operand_prec = _ATOM if op in _BITWISE else prec
    lpy, lc = _wrap(left, operand_prec)
    rpy, rc = _wrap(right, operand_prec, right=True)
    return Sym(f"{lpy} {op} {rpy}", f"{lc} {_C_OP.get(op, op)} {rc}", prec)


def _install() -> None:
    for op, name in [
        ("+", "add"),
        ("-", "sub"),
        ("*", "mul"),
        ("//", "floordiv"),
        ("%", "mod"),
        ("&", "and"),
        ("^", "xor"),
    ]:
        setattr(Sym, f"__{name}__", lambda self, other, op=op: _binary(op, self, other))
        setattr(Sym, f"__r{name}__", lambda self, other, op=op: _binary(op, other, self))
    for op, name in [("<", "lt"), ("<=", "le"), (">", "gt"), (">=", "ge"), ("==", "eq"), ("!=", "ne")]:
        setattr(Sym, f"__{name}__", lambda self, other, op=op: _binary(op, self, other))
    Sym.__hash__ = lambda self: hash(self.py)  # type: ignore[assignment]


_install()


def render(value: Any, dialect: str = "py") -> str:
    """Source text of an int, a Sym, a string literal, a slice or a tuple of those."""
    if isinstance(value, Sym):
        return value.text(dialect)
    if isinstance(value, bool):
        return ("True" if value else "False") if dialect == "py" else ("true" if value else "false")
    if isinstance(value, (int, float)):
        return repr(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice):
        start = "" if value.start is None else render(value.start, dialect)
        stop = "" if value.stop is None else render(value.stop, dialect)
        return f"{start}:{stop}"
    if isinstance(value, tuple):
        return ", ".join(render(v, dialect) for v in value)
    if isinstance(value, str):
        return value
    if hasattr(value, "render"):
        return value.render(dialect)
    return str(value)


class SymBuffer:
    """A named buffer of known rank in a memory space, for tracing; indexing gives a :class:`SymRegion`."""

    __slots__ = ("name", "space", "ndim")

    def __init__(self, name: str, space: Any, ndim: int) -> None:
        self.name = name
        self.space = space
        self.ndim = ndim

    def __getitem__(self, key: Any) -> SymRegion:
        key = key if isinstance(key, tuple) else (key,)
        if not any(k is Ellipsis for k in key) and len(key) < self.ndim:
            key = key + (slice(None),) * (self.ndim - len(key))
        return SymRegion(self, key)

    def render(self, dialect: str = "py") -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


class SymRegion:
    """``buffer[key]`` while tracing: renders as ``l0a[i % 2, :, :]``."""

    __slots__ = ("buffer", "key")

    def __init__(self, buffer: SymBuffer, key: tuple) -> None:
        self.buffer = buffer
        self.key = key

    @property
    def space(self) -> Any:
        return self.buffer.space

    def render(self, dialect: str = "py") -> str:
        return f"{self.buffer.name}[{render(self.key, dialect)}]"

    def __repr__(self) -> str:
        return self.render()
