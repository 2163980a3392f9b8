"""Makes `import tvm` (and `from tvm import DataType`, `tvm.tir` ...) work before
`import tilelang` when no real TVM is installed: TileLang's examples often import tvm
first. tilelang-tvm.pth, installed next to this module, calls install() at interpreter
start; that only appends a finder to sys.meta_path, which imports nothing until a
`tvm` import reaches it. It sits last, so a real TVM on the path is always found first;
when none is, it imports tilelang, which registers its TVM facade (tilelang.tvm) as
`tvm` and its modules as `tvm.tirx`, `tvm.target`, ..., and hands that module over."""

import importlib
import importlib.abc
import importlib.util
import sys


class _Alias(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class TileLangTvmFinder(importlib.abc.MetaPathFinder):
    """The last finder on sys.meta_path: `tvm` and its facade's submodules."""

    _busy = False  # tilelang's own lookup of a real tvm while it imports

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if (name != "tvm" and not name.startswith("tvm.")) or cls._busy:
            return None
        cls._busy = True
        try:
            importlib.import_module("tilelang")
        finally:
            cls._busy = False
        module = sys.modules.get(name)
        if module is None:  # not a module of the facade (or a real tvm took the name)
            return None
        return importlib.util.spec_from_loader(name, _Alias(module))


def install():
    if not any(f is TileLangTvmFinder for f in sys.meta_path):
        sys.meta_path.append(TileLangTvmFinder)
