"""GPU tests need a CUDA device and torch; elsewhere they are skipped."""

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
    for item in items:
        item.add_marker(skip)
