"""Makes `import tvm` (and `from tvm import DataType`, `tvm.tir` ...) work before
`import tilelang` when no real TVM is installed: TileLang's examples often import tvm
first. tilelang-tvm.pth, installed next to this module, calls install() at interpreter
start; that only appends a finder to sys.meta_path, which imports nothing until a
`tvm` import reaches it (this module imports nothing either, so the interpreter start
costs well under a millisecond). It never shadows a real TVM: it sits last, and it
steps aside when a finder after it (one appended later, such as an editable install's)
provides `tvm`. When nothing else does, it imports tilelang, which registers its TVM
facade (tilelang.tvm) as `tvm` and its modules as `tvm.tirx`, `tvm.target`, ..., and
hands that module over."""

import sys


class _Alias:
    """A loader that hands over a module already imported."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class TileLangTvmFinder:
    """The last finder on sys.meta_path: `tvm` and its facade's submodules."""

    _busy = False  # tilelang's own lookup of a real tvm while it imports

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if (name != "tvm" and not name.startswith("tvm.")) or cls._busy:
            return None
        cls._busy = True
        try:
            if name == "tvm" and _found_after_us(name, path, target):
                return None  # a real TVM from a later finder: the import system takes it
            import importlib

            importlib.import_module("tilelang")
        finally:
            cls._busy = False
        module = sys.modules.get(name)
        if module is None:  # not a module of the facade (or a real tvm took the name)
            return None
        import importlib.util

        return importlib.util.spec_from_loader(name, _Alias(module))


def _found_after_us(name, path, target):
    finders = sys.meta_path
    after = finders[finders.index(TileLangTvmFinder) + 1 :] if TileLangTvmFinder in finders else []
    for finder in after:
        find = getattr(finder, "find_spec", None)
        if find is not None and find(name, path, target) is not None:
            return True
    return False


def install():
    if TileLangTvmFinder not in sys.meta_path:
        sys.meta_path.append(TileLangTvmFinder)
