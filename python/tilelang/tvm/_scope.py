"""The error the TVM facade raises for a TVM name it does not provide, the stand-in
object such a name imports as, and the module `__getattr__` that tells such a name from
one TVM does not have either."""

from typing import NoReturn

from tilelang import _C


class OutOfScopeError(_C.TileLangError, NotImplementedError, ImportError):  # type: ignore[name-defined,misc]
    """A TVM API that works on TVM's own IR or runtime, which tilelang does not have.
    It is an ImportError too, so `try: from X import name / except ImportError:` (how
    code probes for an optional backend) takes its fallback."""


def out_of_scope(what: str, instead: str, kind: str = "TVM-internal") -> NoReturn:
    raise OutOfScopeError(
        f"{what} is {kind} and out of scope for tilelang (a TVM-free TileLang: its IR, "
        f"passes and runtime are its own); {instead}. See docs/design/tilelang_compat.md, "
        "'Out of scope'"
    )


class OutOfScopeName:
    """What a module gives for a name it knows but does not provide (a TVM or TileLang
    internal): `from X import name` works, so a file that imports it loads and its other
    code runs, and any use of it (a call, an index, iteration, truth, comparison,
    arithmetic, str, isinstance, subclassing, `with`) raises OutOfScopeError naming it.
    An attribute is the OutOfScopeName of `name.attr` (an enum member such as
    `Mode.INTERLEAVED` in a test's parameter list still imports, and pickle's search of
    every loaded module for a dotted name passes over it); dunder probes (`__wrapped__`,
    `__test__`, pickle's and inspect's) are AttributeErrors, as for an object without
    them."""

    def __new__(cls, *args, **kwargs):
        # `Name.__new__(Name)` (making an instance without __init__) is a use of Name.
        if isinstance(cls, OutOfScopeName):
            cls._refuse()
        return object.__new__(cls)

    def __init__(self, what, instead, kind):
        module, _, name = what.rpartition(".")
        for attr, value in (("__name__", name), ("__qualname__", name), ("__module__", module),
                            ("_what", what), ("_instead", instead), ("_kind", kind)):  # fmt: skip
            object.__setattr__(self, attr, value)

    def _refuse(self, *args, **kwargs):
        out_of_scope(self._what, self._instead, self._kind)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return refused_name(f"{self._what}.{name}", self._instead, self._kind)

    def __setattr__(self, name, value):
        out_of_scope(f"{self._what}.{name}", self._instead, self._kind)

    def __delattr__(self, name):
        out_of_scope(f"{self._what}.{name}", self._instead, self._kind)

    __hash__ = object.__hash__

    def __mro_entries__(self, bases):
        return (_subclassable(self),)

    def __reduce__(self):
        return refused_name, (self._what, self._instead, self._kind)

    def __repr__(self):
        return f"<{self._what}: {self._kind}, out of scope for tilelang>"


for _method in (
    "__call__", "__getitem__", "__setitem__", "__delitem__", "__iter__", "__len__",
    "__contains__", "__enter__", "__exit__", "__instancecheck__", "__subclasscheck__",
    "__bool__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__str__", "__format__", "__bytes__", "__fspath__", "__int__", "__float__", "__index__",
    "__neg__", "__pos__", "__abs__", "__invert__",
    *(f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod",
                                  "pow", "and", "or", "xor", "lshift", "rshift")
      for p in ("", "r")),
):  # fmt: skip
    setattr(OutOfScopeName, _method, OutOfScopeName._refuse)
del _method


class _OutOfScopeClassMeta(type):
    """The metaclass of a class derived from an OutOfScopeName: an attribute the class
    body did not define is the base's, so it raises naming it."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        base = cls._out_of_scope_base
        out_of_scope(f"{base._what}.{name}", base._instead, base._kind)


_SUBCLASSABLE = {}


def _subclassable(name):
    """The base class a `class X(<OutOfScopeName>):` statement derives from: the class
    statement runs (a test file that subclasses an internal still imports), and creating
    an instance raises naming the internal."""
    if name._what not in _SUBCLASSABLE:

        def __new__(cls, *args, **kwargs):
            name._refuse()

        _SUBCLASSABLE[name._what] = _OutOfScopeClassMeta(
            name.__name__, (), {"_out_of_scope_base": name, "__new__": __new__,
                                "__module__": name.__module__},
        )  # fmt: skip
    return _SUBCLASSABLE[name._what]


_REFUSED = {}


def refused_name(what, instead, kind="TVM-internal"):
    """The OutOfScopeName of `what` (one object per name, so `X.name is X.name`)."""
    key = (what, instead, kind)
    if key not in _REFUSED:
        _REFUSED[key] = OutOfScopeName(what, instead, kind)
    return _REFUSED[key]


def facade_getattr(module_name, offers, tvm_names, instead, hint=""):
    """A facade module's `__getattr__`: a name of `tvm_names` (that TVM module's own API,
    which tilelang does not provide) is its OutOfScopeName, whose use raises
    OutOfScopeError with `instead`; any other name is an AttributeError, as from a module
    without it: pickle.whichmodule and hasattr probe every loaded module for arbitrary
    names (torch.compile's cache keys are pickled so), and only known names may be
    found."""
    tvm_names = frozenset(tvm_names)

    def __getattr__(name):
        if name in tvm_names:
            return refused_name(f"{module_name}.{name}", instead)
        raise AttributeError(
            f"{module_name}.{name} is not part of tilelang's TVM facade ({module_name} "
            f"offers {offers}){hint}"
        )

    return __getattr__
