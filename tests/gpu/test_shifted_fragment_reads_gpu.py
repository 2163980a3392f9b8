"""tests/python/test_shifted_fragment_reads.py's split store on a real GPU: a register
accumulator read at a shifted row in a T.Parallel loop (each iteration on the thread
holding the element), for sm_80 code and, on an sm_90 GPU, sm_90a code; exact against
torch on small integers."""

import pathlib
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from test_shifted_fragment_reads import operands, split_store


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_split_store_of_a_register_accumulator(arch):
    if arch == "sm_90a" and torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("sm_90a code needs an sm_90 GPU")
    kernel = tilelang.compile(split_store(), target=f"cuda -arch={arch}")
    assert "_held" in kernel.get_kernel_source()
    a, b, ref = operands()
    out = torch.zeros(ref.shape, dtype=torch.float32, device="cuda")
    kernel(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), out)
    assert torch.equal(out.cpu(), torch.from_numpy(ref))
