"""T.tma_copy of rows longer than a TMA box as one bulk copy (tl::bulk_load), per warp
with leader_scope_threads and per block, and T.copy_cluster's synchronous multicast,
on the GPU against torch: the kernels of tests/python/test_tma_copy_rows.py and
test_copy_cluster.py. Needs an sm_90 GPU."""

import pathlib
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from test_tma_copy_rows import block_rows, per_warp_rows

pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def test_per_warp_rows():
    kernel = tilelang.compile(per_warp_rows(), target="cuda")
    a = torch.randn(32, 1024, device="cuda")
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.testing.assert_close(b, a, rtol=0, atol=0)


@pytest.mark.parametrize("rows,dtype", [(1, torch.float32), (2, torch.float32), (4, torch.float16)])
def test_whole_rows(rows, dtype):
    kernel = tilelang.compile(block_rows(rows=rows, dtype=str(dtype).split(".")[1]), target="cuda")
    a = torch.randn(4, 1024, device="cuda").to(dtype)
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_a_row_of_an_odd_size_takes_the_threads_copy():
    """1001 float32 (4004 bytes, not a multiple of 16): the issuing thread copies the
    bytes itself and completes them on the barrier (mbarrier.complete_tx)."""
    kernel = tilelang.compile(block_rows(K=1001, rows=1), target="cuda")
    a = torch.randn(4, 1001, device="cuda")
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_an_unaligned_tensor_is_refused_before_the_launch():
    kernel = tilelang.compile(block_rows(rows=1), target="cuda")
    a = torch.randn(4 * 1024 + 1, device="cuda")[1:].view(4, 1024)
    with pytest.raises(tilelang.TileLangError, match="not a multiple of 16 bytes"):
        kernel(a, torch.zeros(4, 1024, device="cuda"))
