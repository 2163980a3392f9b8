"""Dequantization helpers TileLang's examples import from `tilelang.quantize`: factories of
element converters for values packed several to a storage word.

`_tir_packed_to_unsigned_convert(storage_type, storage_nbit)(nbit, val, pos, dtype)` is
the unsigned `nbit`-bit field number `pos` of the word `val` (field 0 in the low bits),
as `dtype`; `_tir_packed_int_to_int_convert(...)` the same field read as a signed
(two's complement) integer. Both build expressions for kernels (`B[i] = conv(4,
Q[i // 2], i % 2, "int8")`).

`get_lop3_intrin_group(...)` (lop3.py) and `get_mxfp_intrin_group(...)` (mxfp.py) return
`{"func_name": ..., "c_source": ...}`: a decoder of packed integers or FP4 values for
`T.import_source` / `T.call_extern`, inline PTX on a GPU and portable C++ with the same
bits on the cpu target and the CUDA emulator. `interleave_weight` (utils.py) reorders
packed weights on the host into the order the lop3 decoders read."""

from tilelang import language as T

from .lop3 import get_lop3_intrin_group
from .mxfp import get_mxfp_intrin_group
from .utils import interleave_weight

__all__ = [
    "_tir_packed_int_to_int_convert",
    "_tir_packed_to_unsigned_convert",
    "_tir_u8_to_f4_to_bf16",
    "get_lop3_intrin_group",
    "get_mxfp_intrin_group",
    "interleave_weight",
]


def _check(what, storage_type, storage_nbit, nbit):
    if storage_type not in ("uint", "int"):
        raise ValueError(f"{what}: storage_type must be 'uint' or 'int', got {storage_type!r}")
    if storage_nbit not in (8, 16, 32):
        raise ValueError(f"{what}: storage_nbit must be 8, 16 or 32, got {storage_nbit!r}")
    if not (isinstance(nbit, int) and 0 < nbit <= storage_nbit and storage_nbit % nbit == 0):
        raise ValueError(
            f"{what}: nbit must divide the storage word of {storage_nbit} bits, got {nbit!r}"
        )


def _field(nbit, val, pos):
    """The unsigned field `pos` of `val`, in int32 (wide enough for every storage word
    here but uint32's top field, which is masked after the logical shift below)."""
    word = T.cast(val, "uint32")
    return T.cast(
        (word >> (T.cast(pos, "uint32") * T.uint32(nbit))) & T.uint32((1 << nbit) - 1), "int32"
    )


def _tir_packed_to_unsigned_convert(storage_type="uint", storage_nbit=8):
    def convert(nbit, val, pos, dtype):
        _check("_tir_packed_to_unsigned_convert", storage_type, storage_nbit, nbit)
        return T.cast(_field(nbit, val, pos), dtype)

    return convert


def _tir_packed_int_to_int_convert(storage_type="int", storage_nbit=8):
    def convert(nbit, val, pos, dtype):
        _check("_tir_packed_int_to_int_convert", storage_type, storage_nbit, nbit)
        shift = T.int32(32 - nbit)  # sign-extend: the field's top bit to int32's, and back
        return T.cast((_field(nbit, val, pos) << shift) >> shift, dtype)

    return convert


def _tir_u8_to_f4_to_bf16(nbit, val, pos, scale, dtype):
    """The FP4 (E2M1) field `pos` of the uint8 `val` as bfloat16 bits, its exponent raised
    by `scale` (an exponent offset, capped at 255): sign from bit 3, exponent bits 2..1
    plus 126, mantissa bit 0 as the top mantissa bit. As TileLang's, a zero exponent is
    not treated as subnormal (FP4 zero becomes 2^(scale - 1))."""
    if nbit != 4:
        raise ValueError(f"_tir_u8_to_f4_to_bf16: nbit must be 4, got {nbit!r}")
    if str(T.dtype(dtype)) != "bfloat16":
        raise ValueError(f"_tir_u8_to_f4_to_bf16: dtype must be 'bfloat16', got {dtype!r}")
    u16 = "uint16"
    f4 = (T.cast(val, u16) >> (T.cast(pos, u16) * T.uint16(4))) & T.uint16(15)
    sign = f4 >> T.uint16(3)
    ex = ((f4 & T.uint16(6)) >> T.uint16(1)) + T.uint16(126)
    ex = T.min(ex + T.cast(scale, u16), T.uint16(255))
    man = f4 & T.uint16(1)
    return T.reinterpret(
        ((sign << T.uint16(8) | ex) << T.uint16(7)) | (man << T.uint16(6)), "bfloat16"
    )
