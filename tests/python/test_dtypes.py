"""T.<dtype> objects: names, aliases, lanes, conversions to and from numpy/torch, constants."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.language import dtypes

ALL_NAMES = [
    "bool",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "tfloat32",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_name_is_a_string_equal_to_itself(name):
    dt = getattr(T, name)
    assert isinstance(dt, str) and isinstance(dt, T.dtype)
    assert dt == name and str(dt) == name and f"{dt}" == name
    assert T.dtype(name) == dt
    assert {dt: 1}[name] == 1


def test_aliases():
    assert T.half is T.float16 and T.float == "float32" and T.double == "float64"
    assert T.int == "int32" and T.uint == "uint32" and T.long == "int64" and T.short == "int16"
    assert T.dtype("half") == "float16"
    assert T.float16 == "half"


def test_bits_bytes_lanes():
    assert (T.float16.bits, T.float16.bytes, T.float16.lanes) == (16, 2, 1)
    assert (T.int4.bits, T.float8_e4m3fn.bytes) == (4, 1)
    assert (T.float16x8.bits, T.float16x8.bytes, T.float16x8.lanes) == (16, 16, 8)
    assert T.float32x4 == "float32x4" and T.int8x64.lanes == 64


def test_from_numpy_ml_dtypes_and_python_types():
    assert T.dtype(np.float16) == "float16"
    assert T.dtype(np.dtype("int8")) == "int8"
    assert T.dtype(ml_dtypes.bfloat16) == "bfloat16"
    assert T.dtype(np.dtype(ml_dtypes.float8_e4m3fn)) == "float8_e4m3fn"
    assert (T.dtype(bool), T.dtype(int), T.dtype(float)) == ("bool", "int32", "float32")


def test_as_numpy():
    assert T.float32.as_numpy() == np.float32
    assert T.bfloat16.as_numpy() == np.dtype(ml_dtypes.bfloat16)
    assert T.float8_e5m2.as_numpy() == np.dtype(ml_dtypes.float8_e5m2)
    assert T.int4.as_numpy() == np.dtype(ml_dtypes.int4)


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    assert T.dtype(torch.float16) == "float16" and T.dtype(torch.bfloat16) == "bfloat16"
    assert T.float16.as_torch() is torch.float16
    assert T.int4.as_torch() is torch.int8 and T.tfloat32.as_torch() is torch.float32


def test_calling_a_dtype_makes_a_constant():
    c = T.float32(1.5)
    assert str(c.dtype) == "float32" and c.const_value() == 1.5
    assert T.int32(5).const_value() == 5 and str(T.int64(5).dtype) == "int64"
    assert str(T.float16(2).dtype) == "float16"


def test_unknown_name_is_quoted():
    with pytest.raises(tilelang.TileLangError, match="unknown dtype 'floaty'"):
        T.dtype("floaty")
    with pytest.raises(AttributeError, match="floaty"):
        T.floaty  # noqa: B018


def test_names_come_from_the_core_list():
    # float4_e2m1_unpacked goes by TileLang's printed name (T.float4_e2m1_unpacked).
    assert set(dtypes.SCALAR_NAMES) == set(ALL_NAMES) | {"custom[float4_e2m1_unpacked]8"}
