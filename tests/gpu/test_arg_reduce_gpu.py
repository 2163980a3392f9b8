"""T.reduce_argmax / T.reduce_argmin on the GPU against torch (tests/python/test_arg_reduce.py
runs the same kernels on cpu and the emulators)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_arg_reduce import CASES, arg_kernel

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c[:2]) for c in CASES])
def test_arg_reductions_match_torch(kind, case):
    shape, dim, src_scope, dst_scope, keepdim = CASES[case]
    func, _ = arg_kernel(shape, dim, kind, src_scope, dst_scope, keepdim)
    kernel = tilelang.compile(func, out_idx=[1], target="cuda")
    a = torch.randint(-3, 4, shape, device="cuda").float()  # many ties: the first index wins
    ref = (torch.argmax if kind == "max" else torch.argmin)(a.cpu(), dim=dim, keepdim=keepdim)
    got = kernel(a).cpu().reshape(ref.shape).long()
    assert torch.equal(got, ref)
