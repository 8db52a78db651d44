"""Errors raised by pipes: what went wrong, named in the user's terms."""

from __future__ import annotations


class PipesError(Exception):
    """Base class of every error pipes raises on purpose."""


class SpecError(PipesError, ValueError):
    """A pipeline specification is malformed: a field is out of range or contradicts another."""


class ProtocolError(PipesError, RuntimeError):
    """A pipeline was used against its protocol (found while tracing or checking, not at run time)."""


class PipesPerformanceWarning(UserWarning):
    """A valid declaration that is much slower than an equivalent one (the message names the better form)."""


def invalid(owner: str, field: str, value: object, allowed: str) -> SpecError:
    """The one wording of a bad field: ``Owner.field = value is invalid: allowed <range or rule>``."""
    return SpecError(f"{owner}.{field} = {value!r} is invalid: allowed {allowed}")
