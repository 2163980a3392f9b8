"""Finds and loads the compiled core `tilelang._C`.

An installed package carries `_C` next to this file; a development checkout points
TILELANG_DEV_BUILD_DIR at a CMake build directory that holds the extension instead.
"""

import glob
import importlib
import importlib.util
import os
import sys

_NAME = "tilelang._C"


def _load_from_dir(build_dir):
    candidates = sorted(glob.glob(os.path.join(build_dir, "_C.*")))
    candidates = [c for c in candidates if c.endswith((".so", ".pyd", ".dylib"))]
    if not candidates:
        raise ImportError(
            f"TILELANG_DEV_BUILD_DIR={build_dir!r} holds no _C extension; "
            "build it with `cmake --build` first"
        )
    spec = importlib.util.spec_from_file_location(_NAME, candidates[0])
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    spec.loader.exec_module(module)
    return module


def _register_device_headers(module):
    """An installed package ships the device headers next to `_C`; tell the core."""
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "device")
    if os.path.isdir(shipped) and hasattr(module, "set_device_include_dir"):
        module.set_device_include_dir(shipped)


def load():
    """Returns the `_C` module, loading it once."""
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    build_dir = os.environ.get("TILELANG_DEV_BUILD_DIR")
    module = _load_from_dir(build_dir) if build_dir else importlib.import_module(_NAME)
    _register_device_headers(module)
    return module
