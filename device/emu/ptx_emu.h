// Inline PTX in the CUDA emulator. Kernel source may carry GCC extended-asm
// statements of PTX (T.import_source text, T.call_extern helpers, a
// T.CUDASourceCodeKernel): the host compiler cannot assemble them, so the driver
// translates each statement into C++ (src/driver/cuda/inline_ptx.h) whose operands
// are 64-bit registers holding the operands' bits, and whose instructions call the
// functions below with the instruction's type as template argument:
//
//   asm volatile("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(h[i]) : "r"(x), "n"(M), ...);
//   ->  { ... tl_ptx_0 = ptx::lop3<ptx::Ty::b32>(tl_ptx_1, tl_ptx_2, ...); ptx::store(h[i], tl_ptx_0); }
//
// Every function returns the GPU's bits: the 16-bit float forms (f16, f16x2, bf16,
// bf16x2) round each lane once (add / sub / mul through float32, exact for their
// operands; fma by tl::fma16), NaN results are the canonical NaN, integer forms wrap
// at their width. Included at the end of tl_cuda.cuh in the emulation only.
#pragma once

#include <cstring>
#include <initializer_list>
#include <string>

namespace tl::emu::ptx {

using u64 = unsigned long long;

// The PTX types an instruction names (.b32, .f16x2 ...).
enum class Ty { b8, b16, b32, b64, u8, u16, u32, u64, s8, s16, s32, s64, f16, f16x2, bf16, bf16x2, f32, f64, pred };

// ---- operands: an expression's bits in, a register's bits out (little-endian: the
// low bytes, as a 32-bit register holds a uint or a float).
template <class T>
inline u64 bits(const T& v) {
  static_assert(sizeof(T) <= 8, "an inline PTX operand of more than 8 bytes");
  u64 r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}
template <class T>
inline void store(T& out, u64 v) {
  static_assert(sizeof(T) <= 8, "an inline PTX operand of more than 8 bytes");
  std::memcpy(&out, &v, sizeof(T));
}

template <Ty t>
constexpr int width() {
  if constexpr (t == Ty::b8 || t == Ty::u8 || t == Ty::s8) return 8;
  if constexpr (t == Ty::b16 || t == Ty::u16 || t == Ty::s16 || t == Ty::f16 || t == Ty::bf16) return 16;
  if constexpr (t == Ty::b64 || t == Ty::u64 || t == Ty::s64 || t == Ty::f64) return 64;
  if constexpr (t == Ty::pred) return 1;
  return 32;
}
template <Ty t>
constexpr bool is_signed() {
  return t == Ty::s8 || t == Ty::s16 || t == Ty::s32 || t == Ty::s64;
}
template <Ty t>
constexpr bool is_float() {
  return t == Ty::f16 || t == Ty::f16x2 || t == Ty::bf16 || t == Ty::bf16x2 || t == Ty::f32 || t == Ty::f64;
}
template <Ty t>
constexpr u64 mask() {
  return width<t>() == 64 ? ~0ull : (1ull << width<t>()) - 1;
}
// An integer operand: its low width<t>() bits, sign-extended for the .s types.
template <Ty t>
inline long long sval(u64 v) {
  constexpr int w = width<t>();
  if constexpr (w == 64) return (long long)v;
  const u64 m = v & mask<t>();
  return (m >> (w - 1)) & 1 ? (long long)(m | ~mask<t>()) : (long long)m;
}
template <Ty t>
inline u64 uval(u64 v) {
  return v & mask<t>();
}

// ---- float lanes: .f16x2 / .bf16x2 are two lanes of .f16 / .bf16, the low half first.
template <Ty t>
constexpr Ty lane_type() {
  if constexpr (t == Ty::f16x2) return Ty::f16;
  if constexpr (t == Ty::bf16x2) return Ty::bf16;
  return t;
}
template <Ty t>
constexpr int lanes() {
  return t == Ty::f16x2 || t == Ty::bf16x2 ? 2 : 1;
}
// One lane's bits <-> float64 (exact for every type here).
template <Ty l>
inline double to_double(u64 b) {
  if constexpr (l == Ty::f16) return double(float(tl::bit_cast<tl::half_t>(uint16_t(b))));
  if constexpr (l == Ty::bf16) return double(float(tl::bit_cast<tl::bfloat16_t>(uint16_t(b))));
  if constexpr (l == Ty::f32) return double(tl::bit_cast<float>(uint32_t(b)));
  if constexpr (l == Ty::f64) return tl::bit_cast<double>(b);
  return 0;
}
// A float32 result (exactly the operation's value, or rounded once to float32) to
// the lane type, rounded to nearest even; NaN is the canonical NaN.
template <Ty l>
inline u64 from_float(float f) {
  if (f != f) {
    if constexpr (l == Ty::f32) return 0x7fffffffull;
    return l == Ty::f16 || l == Ty::bf16 ? 0x7fffull : 0x7fffffffffffffffull;
  }
  if constexpr (l == Ty::f16) return tl::half_t(f).bits;
  if constexpr (l == Ty::bf16) return tl::bfloat16_t(f).bits;
  if constexpr (l == Ty::f32) return tl::bit_cast<uint32_t>(f);
  return tl::bit_cast<u64>(double(f));
}
template <Ty l>
inline u64 from_double(double d) {
  if (d != d) return l == Ty::f64 ? 0x7fffffffffffffffull : from_float<l>(d);
  if constexpr (l == Ty::f16) return tl::half_t(d).bits;
  if constexpr (l == Ty::bf16) return tl::bfloat16_t(d).bits;
  if constexpr (l == Ty::f32) return tl::bit_cast<uint32_t>(float(d));
  return tl::bit_cast<u64>(d);
}
template <Ty t, class F>
inline u64 per_lane(F f) {
  constexpr Ty l = lane_type<t>();
  constexpr int w = width<l>();
  u64 r = 0;
  for (int i = 0; i < lanes<t>(); ++i) r |= (f(i * w) & mask<l>()) << (i * w);
  return r;
}
template <Ty t>
inline u64 lane(u64 v, int shift) {
  return (v >> shift) & mask<lane_type<t>()>();
}
// .ftz: a subnormal float32 operand or result is a zero of its sign.
inline u64 flush32(u64 b) {
  return (b & 0x7f800000ull) == 0 ? b & 0x80000000ull : b & 0xffffffffull;
}
// .sat: clamped to [0, 1], NaN to 0.
template <Ty l>
inline u64 saturate(u64 b) {
  const double d = to_double<l>(b);
  if (!(d > 0)) return 0;
  return d >= 1 ? from_double<l>(1.0) : b;
}

// Float arithmetic, lane by lane. Binary ops of the 16-bit types go through float32
// (exact), float32 ones are float32's, float64 ones float64's.
enum class Op { add, sub, mul, min, max, min_nan, max_nan };
template <Ty l>
inline u64 float_binary(Op op, u64 a, u64 b) {
  const double x = to_double<l>(a), y = to_double<l>(b);
  if (op == Op::add || op == Op::sub || op == Op::mul) {
    if constexpr (l == Ty::f64) return from_double<l>(op == Op::add ? x + y : op == Op::sub ? x - y : x * y);
    const float fx = float(x), fy = float(y);
    return from_float<l>(op == Op::add ? fx + fy : op == Op::sub ? fx - fy : fx * fy);
  }
  // min / max: a NaN operand gives the other (.NaN: the canonical NaN); -0 is below +0.
  const bool either = x != x || y != y;
  if (either && (op == Op::min_nan || op == Op::max_nan || (x != x && y != y))) return from_double<l>(x + y);
  if (x != x) return b;
  if (y != y) return a;
  const int s = width<l>() - 1;
  const bool lt = x < y || (x == y && ((a >> s) & 1) > ((b >> s) & 1));
  return (op == Op::min || op == Op::min_nan) == lt ? a : b;
}

// ---- the instructions: name<type>(operands...), operands and result as bits.
template <Ty t>
inline u64 mov(u64 a) {
  return a & mask<t>();
}

#define TL_PTX_BITWISE(name, expr) \
  template <Ty t>                  \
  inline u64 name(u64 a, u64 b) {  \
    return (expr)&mask<t>();       \
  }
TL_PTX_BITWISE(and_, a& b)
TL_PTX_BITWISE(or_, a | b)
TL_PTX_BITWISE(xor_, a ^ b)
#undef TL_PTX_BITWISE
template <Ty t>
inline u64 not_(u64 a) {
  return ~a & mask<t>();
}
template <Ty t>
inline u64 cnot(u64 a) {
  return (a & mask<t>()) == 0 ? 1 : 0;
}

// shl / shr: a shift by the width or more gives 0, or (shr.s) the sign everywhere.
template <Ty t>
inline u64 shl(u64 a, u64 n) {
  const u64 k = n & 0xffffffffull;
  return k >= u64(width<t>()) ? 0 : (a << k) & mask<t>();
}
template <Ty t>
inline u64 shr(u64 a, u64 n) {
  const u64 k = n & 0xffffffffull;
  constexpr int w = width<t>();
  if constexpr (is_signed<t>()) {
    const long long v = sval<t>(a);
    return u64(k >= u64(w) ? (v < 0 ? -1 : 0) : v >> k) & mask<t>();
  } else {
    return k >= u64(w) ? 0 : uval<t>(a) >> k;
  }
}

// lop3.b32 d, a, b, c, lut: each bit of d is bit (a << 2 | b << 1 | c) of lut.
template <Ty t>
inline u64 lop3(u64 a, u64 b, u64 c, u64 lut) {
  u64 r = 0;
  for (int i = 0; i < 8; ++i) {
    if (!((lut >> i) & 1)) continue;
    r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  }
  return r & mask<t>();
}

// prmt.b32 d, a, b, c (the default mode): byte i of d is byte (c >> 4i) & 7 of
// {b, a} (a the low four), or that byte's sign replicated when (c >> 4i) & 8.
template <Ty t>
inline u64 prmt(u64 a, u64 b, u64 c) {
  const u64 bytes = (a & 0xffffffffull) | ((b & 0xffffffffull) << 32);
  u64 r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned sel = unsigned(c >> (4 * i)) & 0xf;
    u64 byte = (bytes >> (8 * (sel & 7))) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    r |= byte << (8 * i);
  }
  return r;
}

// bfe: len bits of a from pos, zero- or sign-extended; bfi: b with len bits from pos
// replaced by a's low bits.
template <Ty t>
inline u64 bfe(u64 a, u64 b, u64 c) {
  constexpr unsigned msb = unsigned(width<t>()) - 1;
  const unsigned pos = unsigned(b & 0xff), len = unsigned(c & 0xff);
  const u64 sbit = is_signed<t>() && len != 0 ? (a >> (pos + len - 1 < msb ? pos + len - 1 : msb)) & 1 : 0;
  u64 r = 0;
  for (unsigned i = 0; i <= msb; ++i) r |= (i < len && pos + i <= msb ? (a >> (pos + i)) & 1 : sbit) << i;
  return r;
}
template <Ty t>
inline u64 bfi(u64 a, u64 b, u64 c, u64 d) {
  constexpr int w = width<t>();
  const unsigned pos = unsigned(c & 0xff), len = unsigned(d & 0xff);
  u64 r = b & mask<t>();
  for (unsigned i = 0; i < len && pos + i < unsigned(w); ++i)
    r = (r & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return r;
}

template <Ty t>
inline u64 popc(u64 a) {
  return u64(__builtin_popcountll(uval<t>(a)));
}
template <Ty t>
inline u64 clz(u64 a) {
  const u64 v = uval<t>(a);
  return v == 0 ? u64(width<t>()) : u64(__builtin_clzll(v) - (64 - width<t>()));
}
template <Ty t>
inline u64 brev(u64 a) {
  u64 r = 0;
  for (int i = 0; i < width<t>(); ++i) r |= ((a >> i) & 1) << (width<t>() - 1 - i);
  return r;
}

// add / sub / mul / min / max / neg / abs of an integer or float type.
template <Ty t>
inline u64 add(u64 a, u64 b) {
  if constexpr (is_float<t>()) {
    return per_lane<t>([&](int s) { return float_binary<lane_type<t>()>(Op::add, lane<t>(a, s), lane<t>(b, s)); });
  } else {
    return (a + b) & mask<t>();
  }
}
template <Ty t>
inline u64 sub(u64 a, u64 b) {
  if constexpr (is_float<t>()) {
    return per_lane<t>([&](int s) { return float_binary<lane_type<t>()>(Op::sub, lane<t>(a, s), lane<t>(b, s)); });
  } else {
    return (a - b) & mask<t>();
  }
}
// mul of floats, or mul.lo of integers.
template <Ty t>
inline u64 mul(u64 a, u64 b) {
  if constexpr (is_float<t>()) {
    return per_lane<t>([&](int s) { return float_binary<lane_type<t>()>(Op::mul, lane<t>(a, s), lane<t>(b, s)); });
  } else {
    return (a * b) & mask<t>();
  }
}
// The upper half of the double-width product (mul.hi), or the whole of it (mul.wide).
template <Ty t>
inline u64 mul_hi(u64 a, u64 b) {
  constexpr int w = width<t>();
  if constexpr (is_signed<t>()) {
    const __int128 p = (__int128)sval<t>(a) * (__int128)sval<t>(b);
    return u64(p >> w) & mask<t>();
  } else {
    const unsigned __int128 p = (unsigned __int128)uval<t>(a) * (unsigned __int128)uval<t>(b);
    return u64(p >> w) & mask<t>();
  }
}
template <Ty t>
inline u64 mul_wide(u64 a, u64 b) {
  static_assert(width<t>() <= 32, "mul.wide of 16- or 32-bit operands");
  if constexpr (is_signed<t>()) {
    return u64(sval<t>(a) * sval<t>(b)) & (width<t>() == 32 ? ~0ull : 0xffffffffull);
  } else {
    return (uval<t>(a) * uval<t>(b)) & (width<t>() == 32 ? ~0ull : 0xffffffffull);
  }
}
template <Ty t>
inline u64 mad(u64 a, u64 b, u64 c) {
  return (a * b + c) & mask<t>();
}
template <Ty t>
inline u64 mad_hi(u64 a, u64 b, u64 c) {
  return (mul_hi<t>(a, b) + c) & mask<t>();
}
template <Ty t>
inline u64 mad_wide(u64 a, u64 b, u64 c) {
  return mul_wide<t>(a, b) + c;
}

template <Ty t>
inline u64 min_max(u64 a, u64 b, bool is_max, bool nan) {
  if constexpr (is_float<t>()) {
    const Op op = is_max ? (nan ? Op::max_nan : Op::max) : (nan ? Op::min_nan : Op::min);
    return per_lane<t>([&](int s) { return float_binary<lane_type<t>()>(op, lane<t>(a, s), lane<t>(b, s)); });
  } else if constexpr (is_signed<t>()) {
    return u64((sval<t>(a) < sval<t>(b)) == is_max ? b : a) & mask<t>();
  } else {
    return ((uval<t>(a) < uval<t>(b)) == is_max ? b : a) & mask<t>();
  }
}
template <Ty t>
inline u64 min(u64 a, u64 b) {
  return min_max<t>(a, b, false, false);
}
template <Ty t>
inline u64 max(u64 a, u64 b) {
  return min_max<t>(a, b, true, false);
}
template <Ty t>
inline u64 min_nan(u64 a, u64 b) {
  return min_max<t>(a, b, false, true);
}
template <Ty t>
inline u64 max_nan(u64 a, u64 b) {
  return min_max<t>(a, b, true, true);
}

template <Ty t>
inline u64 neg(u64 a) {
  if constexpr (is_float<t>()) {
    constexpr Ty l = lane_type<t>();
    return per_lane<t>([&](int s) { return lane<t>(a, s) ^ (1ull << (width<l>() - 1)); });
  } else {
    return (0 - a) & mask<t>();
  }
}
template <Ty t>
inline u64 abs(u64 a) {
  if constexpr (is_float<t>()) {
    constexpr Ty l = lane_type<t>();
    return per_lane<t>([&](int s) { return lane<t>(a, s) & ~(1ull << (width<l>() - 1)); });
  } else {
    const long long v = sval<t>(a);
    return u64(v < 0 ? -v : v) & mask<t>();
  }
}

// fma.rn: a * b + c rounded once (float32 by the host's fma, float64 by its fma, the
// 16-bit types by tl::fma16); mad of floats is fma.
template <Ty t>
inline u64 fma(u64 a, u64 b, u64 c) {
  constexpr Ty l = lane_type<t>();
  return per_lane<t>([&](int s) -> u64 {
    const u64 x = lane<t>(a, s), y = lane<t>(b, s), z = lane<t>(c, s);
    if constexpr (l == Ty::f16) {
      return tl::fma16(tl::bit_cast<tl::half_t>(uint16_t(x)), tl::bit_cast<tl::half_t>(uint16_t(y)),
                       tl::bit_cast<tl::half_t>(uint16_t(z)))
          .bits;
    } else if constexpr (l == Ty::bf16) {
      return tl::fma16(tl::bit_cast<tl::bfloat16_t>(uint16_t(x)), tl::bit_cast<tl::bfloat16_t>(uint16_t(y)),
                       tl::bit_cast<tl::bfloat16_t>(uint16_t(z)))
          .bits;
    } else if constexpr (l == Ty::f32) {
      return from_float<l>(__builtin_fmaf(tl::bit_cast<float>(uint32_t(x)), tl::bit_cast<float>(uint32_t(y)),
                                          tl::bit_cast<float>(uint32_t(z))));
    } else {
      return from_double<l>(__builtin_fma(tl::bit_cast<double>(x), tl::bit_cast<double>(y), tl::bit_cast<double>(z)));
    }
  });
}

// setp.cmp.t p, a, b; selp.t d, a, b, p.
enum class Cmp { eq, ne, lt, le, gt, ge, equ, neu, ltu, leu, gtu, geu, num, nan };
// eq ... ge of two values of one type; the unordered forms (equ ... geu) compare alike.
template <class X>
inline bool compare(Cmp c, X x, X y) {
  switch (c) {
    case Cmp::eq:
    case Cmp::equ:
      return x == y;
    case Cmp::ne:
    case Cmp::neu:
      return x != y;
    case Cmp::lt:
    case Cmp::ltu:
      return x < y;
    case Cmp::le:
    case Cmp::leu:
      return x <= y;
    case Cmp::gt:
    case Cmp::gtu:
      return x > y;
    case Cmp::ge:
    case Cmp::geu:
      return x >= y;
    default:
      return false;
  }
}
// A NaN operand makes the ordered forms false and the unordered ones (equ ... geu) true.
template <Ty t>
inline u64 setp(Cmp c, u64 a, u64 b) {
  if constexpr (is_float<t>()) {
    static_assert(lanes<t>() == 1, "setp of one float lane");
    const double x = to_double<t>(a), y = to_double<t>(b);
    const bool un = x != x || y != y;
    if (c == Cmp::num || c == Cmp::nan) return un == (c == Cmp::nan);
    return un ? (c >= Cmp::equ && c <= Cmp::geu) : compare(c, x, y);
  } else if constexpr (is_signed<t>()) {
    return compare(c, sval<t>(a), sval<t>(b));
  } else {
    return compare(c, uval<t>(a), uval<t>(b));
  }
}
template <Ty t>
inline u64 selp(u64 a, u64 b, u64 p) {
  return ((p & 1) ? a : b) & mask<t>();
}

// cvt.{rnd}.dst.src: integer <-> integer (truncate or extend by the source's sign),
// float -> float (round to nearest even; .rni / .rzi / .rmi / .rpi to an integral
// value), integer <-> float (to an integer: the rounding named, saturated at the
// type's range, NaN 0).
enum class Rnd { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };
inline double round_int(double d, Rnd r) {
  switch (r) {
    case Rnd::rni:
      return __builtin_nearbyint(d);
    case Rnd::rmi:
      return __builtin_floor(d);
    case Rnd::rpi:
      return __builtin_ceil(d);
    default:
      return __builtin_trunc(d);
  }
}
template <Ty d, Ty s>
inline u64 cvt(u64 a, Rnd r) {
  if constexpr (!is_float<s>() && !is_float<d>()) {
    const u64 v = is_signed<s>() ? u64(sval<s>(a)) : uval<s>(a);
    return v & mask<d>();
  } else if constexpr (is_float<s>() && is_float<d>()) {
    double v = to_double<s>(a);
    if (r == Rnd::rni || r == Rnd::rzi || r == Rnd::rmi || r == Rnd::rpi) v = round_int(v, r);
    return from_double<d>(v);
  } else if constexpr (is_float<s>()) {
    double v = to_double<s>(a);
    if (v != v) return 0;
    v = round_int(v, r == Rnd::none ? Rnd::rzi : r);
    if constexpr (is_signed<d>()) {
      const double lo = -__builtin_ldexp(1.0, width<d>() - 1), hi = __builtin_ldexp(1.0, width<d>() - 1);
      const long long x = v <= lo ? (long long)(lo) : v >= hi ? (long long)(~0ull >> (65 - width<d>())) : (long long)v;
      return u64(x) & mask<d>();
    } else {
      const double hi = __builtin_ldexp(1.0, width<d>());
      return v <= 0 ? 0 : v >= hi ? mask<d>() : u64(v);
    }
  } else {
    if constexpr (d == Ty::f64) {
      return is_signed<s>() ? tl::bit_cast<u64>(double(sval<s>(a))) : tl::bit_cast<u64>(double(uval<s>(a)));
    } else {
      // float32 from a 64-bit integer rounds once directly; the 16-bit types from the
      // float32 of an integer of at most 32 bits... rounded through float64, exact there.
      const double v = is_signed<s>() ? double(sval<s>(a)) : double(uval<s>(a));
      if constexpr (d == Ty::f32 && width<s>() == 64) {
        return tl::bit_cast<uint32_t>(is_signed<s>() ? float(sval<s>(a)) : float(uval<s>(a)));
      }
      return from_double<d>(v);
    }
  }
}
// cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 d, a, b: a to the upper half, b to the lower.
template <Ty d>
inline u64 cvt_pair(u64 a, u64 b) {
  constexpr Ty l = lane_type<d>();
  return (from_float<l>(tl::bit_cast<float>(uint32_t(a))) << 16) | from_float<l>(tl::bit_cast<float>(uint32_t(b)));
}

// Vector operands of mov: {lo, hi} packed into one register, or split out of one.
template <Ty t>
inline u64 pack(std::initializer_list<u64> parts) {
  const int w = width<t>() / int(parts.size());
  u64 r = 0;
  int i = 0;
  for (u64 p : parts) r |= (p & (w == 64 ? ~0ull : (1ull << w) - 1)) << (w * i++);
  return r;
}
template <Ty t>
inline u64 unpack(u64 v, int i, int n) {
  const int w = width<t>() / n;
  return (v >> (w * i)) & (w == 64 ? ~0ull : (1ull << w) - 1);
}

// Special registers of mov (%tid.x, %ntid.x and %ctaid.x read threadIdx, blockDim
// and blockIdx directly): %laneid and %warpid of the thread's linear index.
inline u64 linear_tid() {
  return u64(threadIdx.x) + u64(blockDim.x) * (u64(threadIdx.y) + u64(blockDim.y) * u64(threadIdx.z));
}
inline u64 lane_id() {
  return linear_tid() % 32;
}
inline u64 warp_id() {
  return linear_tid() / 32;
}

}  // namespace tl::emu::ptx
