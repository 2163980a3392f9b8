"""TileLang's `tilelang.language.fp8`: the FP8 dtype names for the target. tilelang's
GPU target is CUDA, whose FP8 types are OCP's float8_e4m3fn and float8_e5m2 (ROCm's
FNUZ variants are for a backend tilelang does not have)."""

__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]

_FORMATS = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def determine_fp8_type(fp8_format="e4m3", device=None):
    """The dtype (T.float8_e4m3fn or T.float8_e5m2) of FP8 format "e4m3" or "e5m2".
    `device` is accepted for TileLang's signature; every CUDA device uses OCP FP8."""
    from . import dtypes

    del device
    if fp8_format not in _FORMATS:
        raise ValueError(
            f"determine_fp8_type: unsupported FP8 format {fp8_format!r}; expected 'e4m3' or 'e5m2'"
        )
    return dtypes.dtype(_FORMATS[fp8_format])


def determine_torch_fp8_type(fp8_format="e4m3", device=None):
    """The torch dtype of determine_fp8_type(fp8_format)."""
    return determine_fp8_type(fp8_format, device).as_torch()
