"""`tvm.script.ir_builder`: the frame classes the DSL's scopes are instances of."""

from . import base

__all__ = ["base"]
