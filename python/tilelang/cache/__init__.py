"""The disk kernel cache from Python: where it is, how big, and its cleanup.

Entries are directories `<cache dir>/kernels/<sha256>/`, published atomically by the
C++ core; a hit refreshes the entry's modification time, so `prune` removes the least
recently used first. Removal renames an entry to a trash name before deleting it, so
processes reading the cache at the same time see a whole entry or a miss."""

from __future__ import annotations

import re
from typing import Any

from tilelang import _native
from tilelang._compat import forwarding_getattr
from tilelang.env import cache_dir, disable_cache, enable_cache, is_cache_enabled

__all__ = [
    "cache_dir",
    "clear_cache",
    "disable_cache",
    "enable_cache",
    "is_cache_enabled",
    "parse_size",
    "prune",
    "stats",
]

_C = _native.load()
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def stats(directory: str | None = None) -> dict[str, Any]:
    """{'dir', 'entries', 'bytes'} of the disk cache."""
    directory = directory or cache_dir()
    entries, size = _C.cache_stats(directory)
    return {"dir": directory, "entries": entries, "bytes": size}


def prune(max_bytes: int | str, directory: str | None = None) -> int:
    """Removes least-recently-used entries until the cache holds at most `max_bytes`
    (an int or a size such as "1G", "500M"); returns how many entries were removed."""
    if isinstance(max_bytes, str):
        max_bytes = parse_size(max_bytes)
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    return _C.cache_prune(directory or cache_dir(), int(max_bytes))


def clear_cache(directory: str | None = None) -> int:
    """Removes every entry of the disk cache; returns how many were removed."""
    return prune(0, directory)


def parse_size(text: str | int) -> int:
    """ "1G" -> 1073741824; accepts B/K/M/G/T with an optional "iB"/"B" suffix."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.IGNORECASE)
    if not m:
        raise ValueError(f"cannot read the size {text!r}; write e.g. 500M or 1G")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# TileLang's per-backend cache objects (`_dispatch_map`, its execution backends' caches)
# belong to its Python cache layer, a TileLang internal: the name imports, and using it
# raises an error saying so (docs/design/tilelang_compat.md, "Out of scope").
__getattr__ = forwarding_getattr(
    __name__, internal=("_dispatch_map",),
    instead="tilelang.cache (cache_dir, stats, prune, clear_cache) manages the kernel cache",
)  # fmt: skip
