"""Lets pytest import `tilelang` from a source checkout: when the package is not installed,
the checkout's python/ directory is used and TILELANG_DEV_BUILD_DIR defaults to the most
recently built extension under build/."""

import glob
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _newest_build_dir(root=ROOT):
    found = glob.glob(os.path.join(root, "build", "**", "_C.*.so"), recursive=True)
    # Not the build of the checkout's copy that test_cpp_package.py makes (and renames
    # away while it runs).
    copy = os.path.join(root, "build", "cpp-package-test") + os.sep
    found = [f for f in found if not f.startswith(copy)]
    if not found:
        return None
    return os.path.dirname(max(found, key=os.path.getmtime))


if importlib.util.find_spec("tilelang") is None:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    if "TILELANG_DEV_BUILD_DIR" not in os.environ:
        build_dir = _newest_build_dir()
        if build_dir:
            os.environ["TILELANG_DEV_BUILD_DIR"] = build_dir


def pytest_configure(config):
    from test_kinds import NAMES

    for name in NAMES:
        config.addinivalue_line("markers", f"{name}: see tests/python/test_kinds.py")


def pytest_collection_modifyitems(config, items):
    """Marks every test with its file's kinds (tests/python/test_kinds.py)."""
    import pytest
    from test_kinds import KINDS

    for item in items:
        stem = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        for kind in KINDS.get(stem, "").split():
            item.add_marker(getattr(pytest.mark, kind))


@pytest.fixture
def fresh_compiles():
    """Compiles while the test runs lower the kernel (whose log a test may read): no kernel
    comes from the cache."""
    import tilelang

    was = tilelang.env.is_cache_enabled()
    tilelang.disable_cache()
    yield
    if was:
        tilelang.enable_cache()
