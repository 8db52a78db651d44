"""Code emitters: TileLang-Ascend calls on a ``T`` module (real or stand-in) and AscendC source text."""

from .ascendc import AscendCBuilder
from .standin import StandInT
from .tilelang import TileLangBuilder

__all__ = ["AscendCBuilder", "StandInT", "TileLangBuilder"]
