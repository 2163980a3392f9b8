"""`get_lop3_intrin_group`: decoders of packed 1-, 2- and 4-bit integers into float16,
int8 or int4 registers, for kernels that call them with `T.call_extern`.

The returned source compiles on every target: lop3 / f16x2 PTX on a GPU and portable
C++ with the same bits on the cpu target and the CUDA emulator (see _source.py).

What the decoders compute, by name (`N` is the number of outputs):

- `decode_i{B}{u|s}_to_f16(src, dst, N=8)`: N halves from B-bit fields. Unsigned
  fields give their value; signed 4-bit fields give value - 8, 2-bit value - 2, and a
  1-bit field b gives 2b - 1. The fields are read in the order `interleave_weight(...,
  B, "float16")` leaves them: for 4 bits, output 2i is field i of the 32-bit word and
  output 2i + 1 field 4 + i; for 2 bits, outputs 2i and 2i + 1 are field i of byte 0
  and of byte 1; for 1 bit, bit i and bit 4 + i of the byte.
- `..._scale(src, dst, scale, N=8)`: each value times `scale[0]` (one fused
  multiply-add with +0, rounded to half).
- `..._scale_zeros_original(src, dst, scale, zeros, N=8)`: (value - zeros[0]) * scale;
  `_zeros_rescale`: value * scale - zeros (one fused rounding for 4 and 1 bits; for 2
  bits the product is rounded, then the difference); `_zeros_quantized`: (value -
  zero) * scale with the integer zero taken from the low 16 bits stored at `zeros`.
- `..._offset` (`storage_scope="warp"`, 4-bit float16 only): the first N / 2 outputs
  use scale[0] (and zeros[0]), the rest scale[offset] (zeros[offset]):
  `(src, dst, scale, offset=0, N=8)`, `(src, dst, scale, zeros, offset=0, N=8)`, and
  for quantized zeros packed like the weights
  `(src, dst, scale, qzeros, scale_offset=0, zero_offset=0, group_offset=0, N=8)`,
  whose zero is the 4-bit field `group_offset` of qzeros[0] / qzeros[zero_offset].
- `decode_i{B}{u|s}_to_i8s(src, dst, N=16)`: N int8 values (signed: 4-bit value - 7,
  2-bit value - 2, 1-bit 2b - 1) in the order `interleave_weight(..., B, "int8")`
  leaves them; `decode_i2{u|s}_to_i4s(src, dst, N=16)`: 2-bit fields widened to
  nibbles (bits 0..1 of each), signed the same as unsigned."""

from ._source import guarded
from .mxfp import _dtype_name, _source_format

__all__ = ["get_lop3_intrin_group"]

_ZEROS_MODES = ("original", "rescale", "quantized")
_SCOPES = ("local", "warp")


def _f16_wrappers(bits, signs, suffix, mode, params, args):
    """Upstream's names for one float16 decoder: a template per sign over the engine."""
    out = []
    for sign in signs:
        templ = "class T1, class T2" + "".join(f", class {t}" for t in ("T3", "T4")[: params[1]])
        out.append(
            f"template <{templ}>\n"
            f"TLQ_FN void decode_i{bits}{sign}_to_f16{suffix}(T1* src, T2* dst{params[0]}) {{\n"
            f"  tlq::ints_to_f16<{bits}, {'true' if sign == 's' else 'false'}, tlq::{mode}>"
            f"(src, dst, {args});\n}}"
        )
    return "\n".join(out)


_SCALE = "tlq::splat16(tlq::half_bits(scale[0]))"
_SCALE_AT = "tlq::splat16(tlq::half_bits(scale[{0}]))"
_ZERO = "tlq::splat16(tlq::half_bits(zeros[0]))"
_ZERO_AT = "tlq::splat16(tlq::half_bits(zeros[{0}]))"


def _f16_source(bits, scaling, zeros, mode, offset):
    """The body of one float16 group (both signs where upstream has both)."""
    signs = ("u",) if zeros else ("u", "s")
    if not scaling:
        return _f16_wrappers(
            bits, signs, "", "kNoScale", (", const int N = 8", 0), "N, 0u, 0u, 0u, 0u"
        )
    if not zeros:
        if offset:
            sig = (", T3* scale = nullptr, const int offset = 0, const int N = 8", 1)
            args = f"N, {_SCALE}, {_SCALE_AT.format('offset')}, 0u, 0u"
            return _f16_wrappers(bits, signs, "_scale_offset", "kScale", sig, args)
        sig = (", T3* scale = nullptr, const int N = 8", 1)
        return _f16_wrappers(bits, signs, "_scale", "kScale", sig, f"N, {_SCALE}, {_SCALE}, 0u, 0u")
    name = f"_scale_zeros_{mode}" + ("_offset" if offset else "")
    if mode == "quantized" and offset:
        sig = (
            (
                ", T3* scale = nullptr, T1* qzeros = nullptr, const int scale_offset = 0,"
                " const int zero_offset = 0, const int group_offset = 0, const int N = 8"
            ),
            1,
        )
        body = (
            "template <class T1, class T2, class T3>\n"
            f"TLQ_FN void decode_i{bits}u_to_f16{name}(T1* src, T2* dst{sig[0]}) {{\n"
            "  const int z_lo = (int)((long long)qzeros[0] >> (group_offset * 4)) & 0xf;\n"
            "  const int z_hi = (int)((long long)qzeros[zero_offset] >> (group_offset * 4)) & 0xf;\n"
            f"  tlq::ints_to_f16<{bits}, false, tlq::kZerosQuantized>(src, dst, N, {_SCALE}, "
            f"{_SCALE_AT.format('scale_offset')}, tlq::quantized_zero(z_lo), "
            "tlq::quantized_zero(z_hi));\n}"
        )
        return body
    sig = (
        ", T3* scale = nullptr, T4* zeros = nullptr"
        + (", const int offset = 0" if offset else "")
        + ", const int N = 8",
        2,
    )
    at = "offset" if offset else "0"
    if mode == "quantized":
        zl = zh = "tlq::quantized_zero(tlq::raw_i16(zeros))"
        engine = "kZerosQuantized"
    elif mode == "rescale":
        zl = f"({_ZERO} | 0x80008000u)"
        zh = f"({_ZERO_AT.format(at)} | 0x80008000u)"
        engine = "kZerosRescaleAfter" if bits == 2 else "kZerosRescale"
    else:
        zl, zh = _ZERO, _ZERO_AT.format(at)
        engine = "kZerosOriginal"
    if engine == "kZerosRescaleAfter":  # subtracts zeros after scaling: the half itself
        zl, zh = _ZERO, _ZERO_AT.format(at)
    args = f"N, {_SCALE}, {_SCALE_AT.format(at)}, {zl}, {zh}"
    return _f16_wrappers(bits, signs, name, engine, sig, args)


def _int_source(bits, out):
    """The body of an int8 or int4 group (both signs)."""
    out_sym = "i8s" if out == "int8" else "i4s"
    lines = []
    for sign in ("u", "s"):
        call = (
            f"tlq::i{bits}_to_i8<{'true' if sign == 's' else 'false'}>(src, dst, N)"
            if out == "int8"
            else "tlq::i2_to_i4(src, dst, N)"
        )
        lines.append(
            "template <class T1, class T2>\n"
            f"TLQ_FN void decode_i{bits}{sign}_to_{out_sym}(T1* src, T2* dst, const int N = 16) "
            f"{{ {call}; }}"
        )
    return "\n".join(lines)


def _as_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(  # noqa: TRY004 - bad arguments are ValueErrors here
            f"get_lop3_intrin_group: {name} must be True or False, got {value!r}"
        )
    return value


def get_lop3_intrin_group(
    out_dtype,
    source_format="uint",
    source_bit=4,
    storage_dtype="int8",
    with_scaling=False,
    with_zeros=False,
    zeros_mode="original",
    storage_scope="local",
):
    """The decoder of `source_bit`-bit `source_format` integers into `out_dtype`
    registers: `{"func_name": name, "c_source": code}` for
    `T.import_source(code)` and `T.call_extern(name, src_ptr, dst_ptr, ...)`.

    out_dtype: "float16" (1, 2 or 4 bits), "int8" (1, 2 or 4 bits) or "int4" (2 bits);
    source_format: "uint" or "int"; storage_dtype: the integer type the packed words
    are kept in (8, 16 or 32 bits; it does not change the decoder); with_scaling,
    with_zeros and zeros_mode ("original", "rescale", "quantized"): float16 only,
    zeros need scaling and unsigned fields; storage_scope "warp" with scaling picks
    the 4-bit `_offset` decoders, whose two halves use two scales. The module
    docstring says what each decoder computes."""
    what = "get_lop3_intrin_group"
    out = _dtype_name(what, "out_dtype", out_dtype, ("float16", "int8", "int4"))
    fmt = _source_format(what, source_format)
    _dtype_name(
        what,
        "storage_dtype",
        storage_dtype,
        ("int8", "uint8", "int16", "uint16", "int32", "uint32"),
    )
    scaling = _as_bool("with_scaling", with_scaling)
    zeros = _as_bool("with_zeros", with_zeros)
    bits_ok = {"float16": (1, 2, 4), "int8": (1, 2, 4), "int4": (2,)}[out]
    if (
        not (isinstance(source_bit, int) and not isinstance(source_bit, bool))
        or source_bit not in bits_ok
    ):
        raise ValueError(
            f"{what}: source_bit must be one of {', '.join(map(str, bits_ok))} for "
            f"out_dtype {out!r}, got {source_bit!r}"
        )
    if zeros_mode not in _ZEROS_MODES:
        raise ValueError(
            f"{what}: zeros_mode must be 'original', 'rescale' or 'quantized', got {zeros_mode!r}"
        )
    if storage_scope not in _SCOPES:
        raise ValueError(f"{what}: storage_scope must be 'local' or 'warp', got {storage_scope!r}")
    if out != "float16" and (scaling or zeros):
        raise ValueError(
            f"{what}: with_scaling and with_zeros need out_dtype 'float16', got out_dtype {out!r}"
        )
    if zeros and not scaling:
        raise ValueError(f"{what}: with_zeros=True needs with_scaling=True, got with_scaling=False")
    if zeros and fmt == "int":
        raise ValueError(
            f"{what}: with_zeros=True needs source_format 'uint' (zeros of signed fields are "
            "not supported), got 'int'"
        )
    if zeros and zeros_mode == "quantized" and source_bit == 1:
        raise ValueError(
            f"{what}: zeros_mode 'quantized' needs source_bit 4 or 2, got source_bit 1"
        )
    offset = storage_scope == "warp" and scaling
    if offset and source_bit != 4:
        raise ValueError(
            f"{what}: storage_scope 'warp' with scaling (the _offset decoders) needs "
            f"source_bit 4, got source_bit {source_bit}"
        )

    sign = "u" if fmt == "uint" else "s"
    if out == "float16":
        name = f"decode_i{source_bit}{sign}_to_f16"
        key = f"i{source_bit}_to_f16"
        if scaling:
            name += "_scale"
            key += "_scale"
        if zeros:
            name += f"_zeros_{zeros_mode}"
            key += f"_zeros_{zeros_mode}"
        if offset:
            name += "_offset"
            key += "_offset"
        body = _f16_source(source_bit, scaling, zeros, zeros_mode, offset)
    else:
        sym = "i8s" if out == "int8" else "i4s"
        name = f"decode_i{source_bit}{sign}_to_{sym}"
        key = f"i{source_bit}_to_{sym}"
        body = _int_source(source_bit, out)
    return {"func_name": name, "c_source": guarded(key, body)}
