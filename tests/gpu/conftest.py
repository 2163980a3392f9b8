"""GPU tests need a CUDA device and torch; elsewhere they are skipped."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        ok = torch.cuda.is_available()
    except ImportError:
        ok = False
    if ok:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and torch")
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if os.path.abspath(str(item.fspath)).startswith(here):
            item.add_marker(skip)
