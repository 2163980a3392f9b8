"""The kernels one `@tilelang.jit` function compiled, by their arguments. Bounded like
the core's in-memory cache (TILELANG_MEMORY_CACHE_MAX_KERNELS), least recently used
dropped first: a function called with ever new arguments does not keep every kernel, and
its loaded library, alive. A dropped specialization compiles again at its next use (a
disk-cache hit)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from tilelang import _native


class Specializations:
    def __init__(self) -> None:
        self._items: OrderedDict = OrderedDict()
        self.made = 0  # how many were ever added, for the log's numbering

    def get(self, key: Any) -> Any:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def __setitem__(self, key, value):
        self._items[key] = value
        self._items.move_to_end(key)
        self.made += 1
        limit = _native.load().memory_cache_max_kernels()
        while len(self._items) > limit:
            self._items.popitem(last=False)

    def __len__(self):
        return len(self._items)
