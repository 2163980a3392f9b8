"""Tensor helpers of TileLang's Python API: `map_torch_type` (a dtype name to torch's
dtype), `torch_assert_close` (closeness with a share of elements allowed to differ),
`TensorSupplyType` and `get_tensor_supply` (inputs for a kernel's parameters)."""

import numpy as np

from tilelang.profiler import TensorSupplyType, _compare, _to_float64, _to_torch, make_tensor

__all__ = ["TensorSupplyType", "get_tensor_supply", "map_torch_type", "torch_assert_close"]


def get_tensor_supply(supply_type=TensorSupplyType.Auto, device=None, seed=0):
    """A function that makes one input for a KernelParam (`kernel.params[i]`, or a
    supply_program's argument): values per `supply_type`, as the profiler makes them.
    `device` "cuda" gives torch tensors on the current GPU, "cpu" numpy arrays (what the
    cpu target takes); None picks "cuda" when torch sees a GPU."""
    if not isinstance(supply_type, TensorSupplyType):
        raise TypeError(
            f"get_tensor_supply: supply_type must be a TensorSupplyType, got {supply_type!r}"
        )
    if device is None:
        try:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    if device not in ("cuda", "cpu"):
        raise ValueError(f"get_tensor_supply: device must be 'cuda', 'cpu' or None, got {device!r}")
    rng = np.random.default_rng(seed)

    def supply(param):
        if not getattr(param, "is_tensor", False):
            raise ValueError(f"get_tensor_supply: {param!r} is not a tensor parameter")
        shape = tuple(param.shape)
        if not all(isinstance(d, int) for d in shape):
            raise ValueError(
                f"get_tensor_supply: {param!r} has a symbolic dimension; make that input yourself"
            )
        array = make_tensor(shape, param.dtype, supply_type, rng)
        return _to_torch(array, param.dtype, "cuda") if device == "cuda" else array

    return supply


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
