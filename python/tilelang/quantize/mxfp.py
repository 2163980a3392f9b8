"""`get_mxfp_intrin_group`: decoders of packed FP4 (E2M1) values into bfloat16 registers
for kernels that call them with `T.call_extern` (the MXFP4 GEMMs apply the shared
exponent scale themselves, after the call).

- `decode_fp4_to_bf16_twiddling(src, dst, N=8)` (use_twiddling=True): N words of the
  "twiddled" layout, 8 outputs each. Of word i (the T1 elements at src + 4 i, read as 4
  bytes b0..b3), outputs 8i + j (j < 4) come from the 16 bits b0 b1 (b0 high) and
  outputs 8i + 4 + j from b2 b3. In those 16 bits, the nibble (sign, two exponent
  bits, mantissa bit) of position 0 is bits 15, 8, 7, 6; position 1 bits 12, 5, 4, 3;
  position 2 bits 9, 2, 1, 0; position 3 bits 14, 11, 10, 13.
- `decode_fp4_to_bf16(src, dst, N=8)` (use_twiddling=False): N groups of 4 bytes
  (from byte 4 i of src); output 8i + b is the low nibble of byte b, 8i + 4 + b its
  high nibble.

Each nibble decodes to its exact FP4 value (0, 0.5, 1, 1.5, 2, 3, 4, 6 with the sign,
-0 included) in bfloat16."""

from tilelang import language as T

from ._source import guarded

__all__ = ["get_mxfp_intrin_group"]


def _dtype_name(what, arg, value, allowed):
    """`value` (a string or a T.dtype) as a dtype name among `allowed`, else a ValueError."""
    try:
        name = str(T.dtype(value)) if value is not None else None
    except Exception:  # noqa: BLE001 - any unparsable value is reported below
        name = None
    if name not in allowed:
        raise ValueError(
            f"{what}: {arg} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}"
        )
    return name


def _source_format(what, value):
    """'int' or 'uint' from a string or T.int / T.uint (TileLang spells them as dtypes)."""
    if isinstance(value, str) and value in ("int", "uint"):
        return value
    try:
        name = str(T.dtype(value))
    except Exception:  # noqa: BLE001
        name = None
    if name in ("int32", "uint32"):
        return name[:-2]
    raise ValueError(f"{what}: source_format must be 'int' or 'uint', got {value!r}")


_TWIDDLING = r"""
// positions 0..3 of the 16 bits b0 b1 (and, in the low lane, b2 b3): each moves its
// nibble's sign to bit 15, exponent to bits 8..7 and mantissa to bit 6, in both lanes
TLQ_FN uint32_t fp4_twiddled_place(uint32_t t, int pos) {
  const uint32_t keep = 0x81c081c0u;
  if (pos == 0) return t & keep;
  if (pos == 1) return (t << 3) & keep;
  if (pos == 2) return (t << 6) & keep;
  return ((t << 1) & 0x80008000u) | ((t >> 3) & 0x01800180u) | ((t >> 7) & 0x00400040u);
}
template <class T1, class T2>
TLQ_FN void decode_fp4_to_bf16_twiddling(T1* src, T2* dst, const int N = 8) {
  for (int i = 0; i < N; ++i) {
    // b0 b1 into the high lane, b2 b3 into the low one
    const uint32_t t = tlq::swap_bytes(tlq::load_u32(src + (i << 2)));
    for (int pos = 0; pos < 4; ++pos) {
      const uint32_t v = tlq::fp4_pair_to_bf16(fp4_twiddled_place(t, pos));
      tlq::store_u16(dst, 8 * i + pos, v >> 16);
      tlq::store_u16(dst, 8 * i + 4 + pos, v & 0xffffu);
    }
  }
}
"""

_SIMPLE = r"""
template <class T1, class T2>
TLQ_FN void decode_fp4_to_bf16(T1* src, T2* dst, const int N = 8) {
  const char* bytes = (const char*)(const void*)src;
  for (int i = 0; i < N; ++i) {
    for (int b = 0; b < 4; b += 2) {  // two bytes per call: one bf16 pair per nibble half
      const uint32_t two = tlq::load_u8(bytes + 4 * i + b) | (tlq::load_u8(bytes + 4 * i + b + 1) << 8);
      const uint32_t lows = tlq::fp4_place(two & 15u) | (tlq::fp4_place((two >> 8) & 15u) << 16);
      const uint32_t highs = tlq::fp4_place((two >> 4) & 15u) | (tlq::fp4_place(two >> 12) << 16);
      const uint32_t lo = tlq::fp4_pair_to_bf16(lows), hi = tlq::fp4_pair_to_bf16(highs);
      tlq::store_u16(dst, 8 * i + b, lo & 0xffffu);
      tlq::store_u16(dst, 8 * i + b + 1, lo >> 16);
      tlq::store_u16(dst, 8 * i + 4 + b, hi & 0xffffu);
      tlq::store_u16(dst, 8 * i + 4 + b + 1, hi >> 16);
    }
  }
}
"""


def get_mxfp_intrin_group(
    out_dtype="bfloat16",
    source_format="uint",
    source_bit=4,
    storage_dtype="uint8",
    use_twiddling=False,
    target=None,
):
    """The FP4-to-bfloat16 decoder: `{"func_name": name, "c_source": code}` for
    `T.import_source(code)` and `T.call_extern(name, src_ptr, dst_ptr, n_words)`.

    out_dtype: "bfloat16" (TileLang's signature also names "float16", for which no
    decoder exists); source_format: "uint" or "int" (FP4 carries its own sign, so both
    give the same decoder); source_bit: 4; storage_dtype: "uint8", "int8" or "int32"
    (the type of the kernel's packed buffer); use_twiddling: the twiddled layout's
    decoder, else the plain one (nibbles in byte order); target: accepted for
    TileLang's signature, the source is the same on every target. The module
    docstring gives the layouts."""
    what = "get_mxfp_intrin_group"
    out = _dtype_name(what, "out_dtype", out_dtype, ("float16", "bfloat16"))
    if out != "bfloat16":
        raise ValueError(
            f"{what}: out_dtype must be 'bfloat16' (the only FP4 decoder there is), got {out_dtype!r}"
        )
    _source_format(what, source_format)
    if source_bit != 4 or isinstance(source_bit, bool):
        raise ValueError(f"{what}: source_bit must be 4 (FP4), got {source_bit!r}")
    _dtype_name(what, "storage_dtype", storage_dtype, ("int32", "int8", "uint8"))
    if not isinstance(use_twiddling, bool):
        raise ValueError(  # noqa: TRY004 - bad arguments are ValueErrors here
            f"{what}: use_twiddling must be True or False, got {use_twiddling!r}"
        )
    if use_twiddling:
        name, key, body = "decode_fp4_to_bf16_twiddling", "fp4_to_bf16_twiddling", _TWIDDLING
    else:
        name, key, body = "decode_fp4_to_bf16", "fp4_to_bf16", _SIMPLE
    return {"func_name": name, "c_source": guarded(key, body)}
