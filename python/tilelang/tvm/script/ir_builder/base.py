"""`IRBuilderFrame`: TVM's base class of the DSL's `with` scopes. `isinstance(x,
IRBuilderFrame)` is true for tilelang's scope objects (loops, T.Kernel, if / else,
attributes)."""

__all__ = ["IRBuilderFrame"]


class _FrameCheck(type):
    def __instancecheck__(cls, obj):
        from tilelang.language import frames, kernel, loops

        scopes = (loops.Loop, loops.Parallel, loops.grid, frames.If, frames._Branch, frames.attr)
        scopes += (kernel.Kernel,)
        # TileLang's loops of a step other than 1 are not TVM frames
        stepped = (loops.SerialForWithStep, loops.UnrollForWithStep)
        return isinstance(obj, scopes) and not isinstance(obj, stepped)


class IRBuilderFrame(metaclass=_FrameCheck):
    """isinstance check for the DSL's `with` scopes."""
