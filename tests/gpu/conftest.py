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


@pytest.fixture(scope="module")
def hopper():
    """For files of sm_90 code (wgmma, TMA): `pytestmark = pytest.mark.usefixtures("hopper")`."""
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU (H100 / H200)")
