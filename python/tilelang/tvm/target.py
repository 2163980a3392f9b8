"""`tvm.target.Target`: a target as TileLang's tests and kernels build it, from a string
("c", "cuda -arch=sm_90a") or a dict ({"kind": "cuda", "arch": "sm_80"}). Inside
`with Target(...):` it is the default target: a compile with target="auto" (or none)
uses it, as TVM's `Target.current()` makes it for TileLang."""

import threading

from tilelang.utils.target import determine_target

__all__ = ["Target", "TargetKind"]

# TVM's kind names; "c" and "llvm" are the CPU (our cpu target compiles C++ with the
# host compiler), the others compile when this build has the backend.
_KINDS = {"c", "llvm", "cpu", "cuda", "nvptx", "metal", "hip", "rocm", "webgpu", "vulkan"}
_KIND_KEYS = {"cuda": ["cuda", "gpu"], "metal": ["metal", "gpu"], "hip": ["rocm", "gpu"]}

_scope = threading.local()


def _stack():
    if not hasattr(_scope, "targets"):
        _scope.targets = []
    return _scope.targets


class TargetKind:
    """`target.kind`: the kind's name (`target.kind.name == "cuda"`)."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return self.name == getattr(other, "name", other)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return self.name


def _parse(text):
    words = text.split()
    if not words:
        raise ValueError("tvm.target.Target: empty target string; expected e.g. 'c' or 'cuda'")
    attrs = {}
    for word in words[1:]:
        if not word.startswith("-"):
            raise ValueError(
                f"tvm.target.Target: option {word!r} of {text!r} should start with '-' "
                "(e.g. 'cuda -arch=sm_80')"
            )
        key, eq, value = word.lstrip("-").partition("=")
        attrs[key] = value if eq else True
    return words[0], attrs


class Target:
    """A compile target with TVM's interface: kind, arch, attrs, keys, host, and the
    `with` scope that makes it the default."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            kind, attrs, host = target.kind.name, dict(target.attrs), host or target.host
        elif isinstance(target, dict):
            spec = dict(target)
            kind = spec.pop("kind", None)
            if not isinstance(kind, str):
                raise TypeError(
                    f"tvm.target.Target: a dict target needs a 'kind' string, got {target!r}"
                )
            host = host or spec.pop("host", None)
            attrs = spec
        elif isinstance(target, str):
            kind, attrs = _parse(target)
        else:
            raise TypeError(
                f"tvm.target.Target: expected a str, dict or Target, got {type(target).__name__}"
            )
        if kind not in _KINDS:
            raise ValueError(
                f"tvm.target.Target: unknown target kind {kind!r}; expected one of "
                f"{', '.join(sorted(_KINDS))}"
            )
        keys = attrs.pop("keys", None)
        self.kind = TargetKind(kind)
        self.attrs = attrs
        if isinstance(keys, str):
            keys = keys.split(",")
        self.keys = list(keys) if keys else list(_KIND_KEYS.get(kind, ["cpu"]))
        self.host = Target(host) if host is not None and not isinstance(host, Target) else host

    @property
    def arch(self):
        return self.attrs.get("arch", "")

    @property
    def mcpu(self):
        return self.attrs.get("mcpu", "")

    @property
    def max_num_threads(self):
        cpu = self.kind.name in ("c", "llvm", "cpu")
        return self.attrs.get("max_num_threads", 1 if cpu else 1024)

    def __str__(self):
        parts = [self.kind.name]
        for key, value in self.attrs.items():
            if value is True:
                parts.append(f"-{key}")
            elif value not in (False, None):
                parts.append(f"-{key}={value}")
        return " ".join(parts)

    def __repr__(self):
        return f"Target({str(self)!r})"

    def __eq__(self, other):
        if isinstance(other, (str, dict)):
            try:
                other = Target(other)
            except (TypeError, ValueError):  # "auto" and other non-targets are unequal
                return False
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def export(self):
        """The target as a dict (TVM's Target.export)."""
        return {"kind": self.kind.name, "keys": list(self.keys), **self.attrs}

    def canonical(self):
        """The target string tilelang.compile uses for it ("c" and "llvm" are "cpu")."""
        return determine_target(str(self))

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()

    @staticmethod
    def current(allow_none=True):
        """The innermost target of the `with` scopes of this thread, else None (or a
        ValueError when allow_none is False)."""
        stack = _stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise ValueError(
                "tvm.target.Target.current(): no target is set (use `with Target(...)`)"
            )
        return None


def current_target():
    """The `with Target(...)` target of this thread, or None (read by determine_target)."""
    stack = _stack()
    return stack[-1] if stack else None
