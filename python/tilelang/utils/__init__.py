"""Small helpers shared by the JIT layer."""

from .target import determine_target

__all__ = ["determine_target"]
