"""The parts of a world one move may replace, and how the next world shares the rest.

:class:`~pipes.check.move.Move` copies a world's barriers, knowledge and counters into :class:`Assigned`
lists; :func:`interned_parts` turns them back into tuples that share every part the move left alone and
intern the ones it replaced, so equal parts of many worlds are one object (``Machine.key`` compares them by
identity).
"""

from __future__ import annotations

from typing import Any


class Assigned(list):
    """A list that remembers which indices a move assigned: :meth:`~pipes.check.move.Move.freeze` interns only those."""

    __slots__ = ("assigned",)

    def __init__(self, items: tuple) -> None:
        super().__init__(items)
        self.assigned: set[int] = set()

    def __setitem__(self, index: Any, value: Any) -> None:
        list.__setitem__(self, index, value)
        self.assigned.add(index)


def interned_parts(new: Assigned, old: tuple, intern: Any) -> tuple:
    """``new`` as a tuple: the parts the move replaced interned, every other part shared with ``old``."""
    if not new.assigned:
        return old
    parts = list(old)
    for index in new.assigned:
        value = new[index]
        if value is not old[index]:
            parts[index] = intern(value)
    return tuple(parts)
