"""Simulated buffers: numpy-backed tensors in a memory space, and rectangular views into them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SpecError
from ..pairs import Space

Region = tuple[tuple[int, int], ...]


class Tensor:
    """A named buffer in one memory space. GM tensors are shared by all cores; the rest belong to one core.

    Index it like a numpy array (ints, unit-step slices, ``...``) to get a :class:`View`.
    """

    __slots__ = ("name", "space", "shape", "dtype", "core", "init", "tid")

    def __init__(
        self, name: str, space: Space, shape: tuple[int, ...], dtype: Any, core: int | None, init: np.ndarray | None
    ) -> None:
        self.name = name
        self.space = space
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.core = core
        self.init = init
        self.tid = -1

    def __getitem__(self, key: Any) -> View:
        return View(self, key)

    def view(self) -> View:
        return View(self, ())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def fresh(self) -> np.ndarray:
        """The contents at kernel start: GM inputs as given, on-chip memory poisoned (NaN) so stale reads show."""
        if self.init is not None:
            return self.init.copy()
        if self.dtype.kind == "f":
            return np.full(self.shape, np.nan, dtype=self.dtype)
        return np.full(self.shape, -7777, dtype=self.dtype)

    def __repr__(self) -> str:
        return f"{self.name}<{self.space.name}{list(self.shape)} {self.dtype}>"


class View:
    """A rectangular part of a tensor: its numpy index, the region it covers, and a printable label."""

    __slots__ = ("tensor", "key", "region", "shape", "label")

    def __init__(self, tensor: Tensor, key: Any) -> None:
        self.tensor = tensor
        self.key, self.region, self.shape, self.label = _normalize(tensor, key)

    @property
    def space(self) -> Space:
        return self.tensor.space

    def __repr__(self) -> str:
        return self.label


def as_view(operand: Any) -> View:
    if isinstance(operand, View):
        return operand
    if isinstance(operand, Tensor):
        return operand.view()
    raise SpecError(f"operand {operand!r} is invalid: allowed a simulator Tensor or a view of one")


def _bound(value: Any, default: int, size: int, what: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SpecError(f"{what} = {value!r} is invalid: allowed an int (the simulator runs on Python ints)")
    value = int(value)
    return max(0, min(size, value + size if value < 0 else value))


def _normalize(tensor: Tensor, key: Any) -> tuple[tuple, Region, tuple[int, ...], str]:
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise SpecError(f"{tensor.name}[...]: at most one Ellipsis")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        fill = tensor.ndim - (len(key) - 1)
        key = key[:at] + (slice(None),) * fill + key[at + 1 :]
    if len(key) > tensor.ndim:
        raise SpecError(f"{tensor.name}: {len(key)} indices for a {tensor.ndim}-d tensor of shape {tensor.shape}")
    key = key + (slice(None),) * (tensor.ndim - len(key))
    np_key, region, shape, parts = [], [], [], []
    for axis, (k, size) in enumerate(zip(key, tensor.shape, strict=True)):
        what = f"{tensor.name} index on axis {axis}"
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise SpecError(f"{what}: step {k.step!r} is invalid: allowed 1")
            lo, hi = _bound(k.start, 0, size, what), _bound(k.stop, size, size, what)
            hi = max(lo, hi)
            np_key.append(slice(lo, hi))
            region.append((lo, hi))
            shape.append(hi - lo)
            parts.append(":" if (lo, hi) == (0, size) else f"{lo}:{hi}")
        else:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise SpecError(f"{what} = {k!r} is invalid: allowed an int or a slice")
            i = int(k) + size if int(k) < 0 else int(k)
            if not 0 <= i < size:
                raise SpecError(f"{what} = {k} is out of range: allowed [0, {size - 1}]")
            np_key.append(i)
            region.append((i, i + 1))
            parts.append(str(i))
    label = tensor.name if all(p == ":" for p in parts) else f"{tensor.name}[{', '.join(parts)}]"
    return tuple(np_key), tuple(region), tuple(shape), label


def overlaps(a: Region, b: Region) -> bool:
    # A plain loop: this runs for every recorded access, and all() over a generator is slower.
    for (alo, ahi), (blo, bhi) in zip(a, b, strict=True):  # noqa: SIM110
        if alo >= bhi or blo >= ahi:
            return False
    return True


def contains(outer: Region, inner: Region) -> bool:
    for (olo, ohi), (ilo, ihi) in zip(outer, inner, strict=True):  # noqa: SIM110
        if ilo < olo or ihi > ohi:
            return False
    return True
