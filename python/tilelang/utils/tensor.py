"""Tensor helpers of TileLang's Python API: `map_torch_type` (a dtype name to torch's
dtype), `torch_assert_close` (closeness with a share of elements allowed to differ) and
`TensorSupplyType`."""

from tilelang.profiler import TensorSupplyType, _compare, _to_float64

__all__ = ["TensorSupplyType", "map_torch_type", "torch_assert_close"]

# TileLang names torch spells otherwise.
_TORCH_NAMES = {"float8_e4m3": "float8_e4m3fn", "float": "float32", "half": "float16"}


def map_torch_type(name):
    """torch's dtype for a dtype name (`"float16"`, `"float8_e4m3"`, `T.bfloat16` ...)."""
    import torch

    key = _TORCH_NAMES.get(str(name), str(name))
    found = getattr(torch, key, None)
    if isinstance(found, torch.dtype):
        return found
    raise ValueError(f"map_torch_type: torch has no dtype for {name!r}")


def torch_assert_close(
    tensor_a,
    tensor_b,
    rtol=1e-2,
    atol=1e-3,
    max_mismatched_ratio=0.001,
    verbose=False,
    equal_nan=True,
    check_device=True,
    check_dtype=False,
    base_name="LHS",
    ref_name="RHS",
):
    """Raises AssertionError when more than `max_mismatched_ratio` of the elements of
    `tensor_a` differ from `tensor_b` by more than atol + rtol * |tensor_b|. Works on
    torch tensors and numpy arrays alike."""
    if check_dtype and getattr(tensor_a, "dtype", None) != getattr(tensor_b, "dtype", None):
        raise AssertionError(
            f"{base_name} has dtype {tensor_a.dtype}, {ref_name} has dtype {tensor_b.dtype}"
        )
    devices = getattr(tensor_a, "device", None), getattr(tensor_b, "device", None)
    if check_device and None not in devices and devices[0] != devices[1]:
        raise AssertionError(f"{base_name} is on {devices[0]}, {ref_name} on {devices[1]}")
    got, want = _to_float64(tensor_a), _to_float64(tensor_b)
    if not equal_nan:
        import numpy as np

        if np.isnan(got).any() or np.isnan(want).any():
            raise AssertionError(f"NaN in {base_name} or {ref_name} (equal_nan=False)")
    _compare(base_name, got, want, atol, rtol, max_mismatched_ratio)
    if verbose:
        print(f"{base_name} and {ref_name} agree within atol={atol}, rtol={rtol}")
