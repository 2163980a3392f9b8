"""T.cast's rounding options (TileLang's `round=`, `sat=`, `rbits=`): the arguments are
validated as TileLang does; a mode naming the rounding every target's conversion does
(to nearest even into floats, toward zero into integers) compiles to the plain
conversion; any mode for a constant the result holds exactly is that constant; other
modes, stochastic rounding and sat=False into float8 (whose overflow follows the
target's rule) are refused at the user's line."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.language.tir.ir import _VALID_CAST_ROUNDING_MODES
from tilelang.language.tir.ir import cast as tir_cast

rng = np.random.default_rng(20261205)
N = 64


def test_arguments_are_validated():
    assert {"", "rn", "rz", "rp", "rm", "rs"} == _VALID_CAST_ROUNDING_MODES
    assert tir_cast is T.cast
    with pytest.raises(ValueError, match=r"Invalid round 'up'. Must be one of: \['', 'rm', 'rn'"):
        T.cast(1.0, "float8_e4m3fn", round="up")
    with pytest.raises(ValueError, match=r"Invalid sat 'no'. Must be a bool"):
        T.cast(1.0, "float8_e4m3fn", sat="no")
    with pytest.raises(ValueError, match=r"rbits is required when round='rs'"):
        T.cast(1.0, "float8_e4m3fn", round="rs")
    with pytest.raises(ValueError, match=r"rbits is only valid with round='rs'"):
        T.cast(1.0, "float8_e4m3fn", round="rn", rbits=T.uint32(42))


def test_exact_constants_take_every_mode():
    for mode in ("rn", "rz", "rp", "rm"):
        assert T.cast(T.float32(1.5), "float8_e4m3fn", round=mode).const_value() == 1.5
    assert T.cast(T.float32(-3.0), "float8_e5m2", sat=False).const_value() == -3.0
    assert T.cast(T.float32(7.0), "int8", round="rp").const_value() == 7
    # 1.1 is not a float8_e4m3fn value: the modes would disagree.
    with pytest.raises(
        tilelang.TileLangError, match=r"with round='rz' \(rounding toward zero\) is not supported"
    ):
        T.cast(T.float32(1.1), "float8_e4m3fn", round="rz")


def _kernel(dst, **options):
    @T.prim_func
    def convert(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), dst)):
        with T.Kernel(1, threads=N) as _:
            for i in T.Parallel(N):
                B[i] = T.cast(A[i], dst, **options)

    return convert


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_the_conversions_own_rounding_is_accepted(target):
    a = (rng.standard_normal(N) * 8).astype(np.float32)
    k = tilelang.compile(_kernel("float8_e4m3fn", round="rn"), target=target)
    b = np.empty(N, ml_dtypes.float8_e4m3fn)
    k(a, b)
    np.testing.assert_array_equal(b, a.astype(ml_dtypes.float8_e4m3fn))
    k = tilelang.compile(_kernel("int32", round="rz"), target=target)
    c = np.empty(N, np.int32)
    k(a, c)
    np.testing.assert_array_equal(c, np.trunc(a).astype(np.int32))


def test_other_modes_are_refused_at_the_users_line():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"test_cast_options.py:\d+: T.cast of float32 to float8_e4m3fn with round='rz' "
        r"\(rounding toward zero\) is not supported: every target rounds this conversion to "
        r"nearest even \(round='rn'\)",
    ):
        _kernel("float8_e4m3fn", round="rz")
    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.cast of float32 to int32 with round='rn' \(rounding to nearest even\) is not "
        r"supported: every target rounds this conversion toward zero \(round='rz'\)",
    ):
        _kernel("int32", round="rn")
    with pytest.raises(
        tilelang.TileLangError,
        match=r"with round='rs' \(rounding stochastically\) is not supported: stochastic rounding "
        r"\(round='rs'\) is sm_100a's cvt.rs, and no target of tilelang has it",
    ):
        _kernel("float8_e4m3fn", round="rs", rbits=T.uint32(0x12345678))
    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.cast of float32 to float8_e5m2 with sat=False is not supported: a conversion into "
        r"float8_e5m2 follows its target's one rule \(the cuda target saturates to the largest finite "
        r"value, the cpu target follows ml_dtypes\), which a cast cannot choose",
    ):
        _kernel("float8_e5m2", sat=False)
    # sat concerns float8 / float4 results only: a float16 result takes either.
    _kernel("float16", sat=False)
