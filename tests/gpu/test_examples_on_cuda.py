"""Every Python example of the language issue, run on the GPU: the examples build
numpy inputs and check against numpy, so a shim around JITKernel.__call__ moves the
numpy arguments to CUDA tensors, runs the cuda kernel, and copies results (and
arguments the kernel wrote) back. The kernels themselves are compiled for cuda."""

import importlib.util
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))


def _is_ml_dtype(name):
    """bfloat16 and the float8 types: numpy holds them through ml_dtypes, torch natively."""
    return name == "bfloat16" or name.startswith("float8")


def to_cuda(a):
    name = str(a.dtype)
    if _is_ml_dtype(name):
        bits = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
        return torch.from_numpy(bits.copy()).view(getattr(torch, name)).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def to_numpy(t):
    t = t.cpu()
    name = str(t.dtype).removeprefix("torch.")
    if _is_ml_dtype(name):
        import ml_dtypes

        bits = t.view(torch.uint16 if t.element_size() == 2 else torch.uint8)
        return bits.numpy().view(getattr(ml_dtypes, name))
    return t.numpy()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_on_cuda(path, monkeypatch, capsys):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda")
    from tilelang.jit.kernel import JITKernel

    original = JITKernel.run
    targets = []

    # JITKernel.run serves both frontend styles: it takes every argument (None for
    # outputs) and returns them all with the outputs filled in.
    def run_on_cuda(self, args, stream=None):
        targets.append(self.target)
        moved = [to_cuda(a) if isinstance(a, np.ndarray) else a for a in args]
        full = original(self, moved, stream)
        for a, m in zip(args, moved):
            if isinstance(a, np.ndarray):
                np.copyto(a, to_numpy(m))
        return [to_numpy(x) if isinstance(x, torch.Tensor) else x for x in full]

    monkeypatch.setattr(JITKernel, "run", run_on_cuda)
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    assert targets and all(t.startswith("cuda") for t in targets), targets
    assert "match" in capsys.readouterr().out
