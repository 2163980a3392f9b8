"""Inline PTX (`asm volatile("lop3.b32 ...")`) in hand-written device code
(T.import_source) runs in the CUDA emulator: each statement is translated into C++ that
computes the instruction's bits (src/driver/cuda/inline_ptx.cpp, device/emu/ptx_emu.h).
TileLang's dequantize examples decode int4 / fp4 weights this way. Every case is checked
bit for bit against numpy, and the same source is assembled by NVRTC and ptxas."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

N = 128

# Each function maps three 32-bit words to one, through inline PTX.
DEVICE_CODE = r"""
#define TLX_FN inline __device__ unsigned
TLX_FN tlx_and_or(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm volatile("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
TLX_FN tlx_xor3(unsigned a, unsigned b, unsigned c) {
  static constexpr unsigned kLut = (0xf0 ^ 0xcc) ^ 0xaa;
  unsigned d;
  asm volatile("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}
TLX_FN tlx_prmt(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c & 0xffffu));
  return d;
}
TLX_FN tlx_add_h2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("add.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_sub_h2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_mul_h2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_fma_h2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
TLX_FN tlx_mul_bf2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_shift_xor(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("{\n"
      "  .reg .b32 t;\n"
      "  shl.b32 t, %1, 3;\n"
      "  shr.u32 %0, %2, 5;\n"
      "  xor.b32 %0, %0, t;\n"
      "}\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_guarded(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("{ .reg .pred p; setp.lt.u32 p, %1, %2; mov.b32 %0, %2; @p mov.b32 %0, %1; @!p add.u32 %0, %0, 1; }"
      : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_selp_signed(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("{ .reg .pred p; setp.gt.s32 p, %1, %2; selp.b32 %0, %1, %2, p; }" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_swap_halves(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; mov.b32 %0, {hi, lo}; }" : "=r"(d) : "r"(a));
  return d;
}
TLX_FN tlx_cvt_pair(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  float x = (float)(int)(a % 2001u) / 7.0f - 140.0f, y = (float)(int)(b % 2001u) / 3.0f - 300.0f;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(x), "f"(y));
  return d;
}
TLX_FN tlx_lane(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(d));
  return d;
}
TLX_FN tlx_bfe(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("bfe.u32 %0, %1, %2, 8;" : "=r"(d) : "r"(a), "r"(b % 24u));
  return d;
}
TLX_FN tlx_mul_hi(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
TLX_FN tlx_scratch_input(unsigned a, unsigned b, unsigned c) {
  // an input operand written as scratch, as TileLang's fp4 decoder does
  unsigned d, tmp = 0;
  asm volatile("shl.b32 %1, %2, 1;" "and.b32 %0, %1, 0b11111111;" : "=r"(d) : "r"(tmp), "r"(a));
  return d + tmp;
}
TLX_FN tlx_read_write(unsigned a, unsigned b, unsigned c) {
  unsigned d = a;
  asm("add.u32 %0, %0, %1;" : "+r"(d) : "r"(b));
  return d;
}
TLX_FN tlx_fmax(unsigned a, unsigned b, unsigned c) {
  float d, x = (float)(int)(a % 1000u) - 499.5f, y = (float)(int)(b % 1000u) - 499.5f;
  asm("max.ftz.f32 %0, %1, %2;" : "=f"(d) : "f"(x), "f"(y));
  return __float_as_uint(d);
}
TLX_FN tlx_fsetp(unsigned a, unsigned b, unsigned c) {
  // ltu: less, or unordered (a NaN operand); every seventh operand is NaN
  float x = a % 7u ? (float)(int)(a % 64u) : __uint_as_float(0x7fc00000u);
  float y = b % 7u ? (float)(int)(b % 64u) : __uint_as_float(0x7fc00000u);
  unsigned d;
  asm("{ .reg .pred p; setp.ltu.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(d) : "f"(x), "f"(y));
  return d;
}
TLX_FN tlx_half_to_int(unsigned a, unsigned b, unsigned c) {
  int d;
  unsigned short h = (unsigned short)(a & 0xffffu);
  asm("{ .reg .f32 f; cvt.f32.f16 f, %1; cvt.rzi.s32.f32 %0, f; }" : "=r"(d) : "h"(h));
  return (unsigned)d;
}
"""

CASES = [
    "and_or", "xor3", "prmt", "add_h2", "sub_h2", "mul_h2", "fma_h2", "mul_bf2", "shift_xor",
    "guarded", "selp_signed", "swap_halves", "cvt_pair", "lane", "bfe", "mul_hi", "scratch_input",
    "read_write", "fmax", "fsetp", "half_to_int",
]  # fmt: skip


def ptx_kernel():
    @T.prim_func
    def ptx_cases(
        A: T.Tensor((N,), "uint32"),
        B: T.Tensor((N,), "uint32"),
        C: T.Tensor((N,), "uint32"),
        Out: T.Tensor((len(CASES), N), "uint32"),
    ):
        with T.Kernel(1, threads=N) as _:
            T.import_source(DEVICE_CODE)
            tx = T.get_thread_binding()
            for k, name in enumerate(CASES):
                Out[k, tx] = T.call_extern("uint32", f"tlx_{name}", A[tx], B[tx], C[tx])

    return ptx_cases


def half_pairs(rng):
    """uint32 words of two float16 lanes in [-8, 8] (every sum, product and fma exact in
    float64, so numpy's float64 rounded once is the reference)."""
    h = (rng.integers(-256, 257, 2 * N) / 32.0).astype(np.float16)
    return h.view(np.uint32)


def bf16_pairs(rng):
    f = (rng.integers(-1024, 1025, 2 * N) / 64.0).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16).view(np.uint32)


def lanes_f16(w):
    return w.view(np.float16).astype(np.float64)


def pack_f16(x):
    return x.astype(np.float16).view(np.uint32)


def bf16_round(f32):
    u = f32.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def expected(name, a, b, c, ha, hb, hc, ba, bb):
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    if name == "and_or":
        return (a & b) | c
    if name == "xor3":
        return a ^ b ^ c
    if name == "prmt":
        src = a64 | (b64 << np.uint64(32))
        sel = c & 0xFFFF
        out = np.zeros(N, np.uint64)
        for i in range(4):
            s = ((sel >> (4 * i)) & 0xF).astype(np.uint64)
            byte = (src >> ((s & 7) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where(s & 8, np.where(byte & 0x80, np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * i)
        return out.astype(np.uint32)
    if name == "add_h2":
        return pack_f16(lanes_f16(ha) + lanes_f16(hb))
    if name == "sub_h2":
        return pack_f16(lanes_f16(ha) - lanes_f16(hb))
    if name == "mul_h2":
        return pack_f16(lanes_f16(ha) * lanes_f16(hb))
    if name == "fma_h2":
        return pack_f16(lanes_f16(ha) * lanes_f16(hb) + lanes_f16(hc))
    if name == "mul_bf2":
        x = (ba.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        y = (bb.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        return bf16_round(x * y).view(np.uint32)  # the float32 product is exact
    if name == "shift_xor":
        return (a << np.uint32(3)) ^ (b >> np.uint32(5))
    if name == "guarded":
        return np.where(a < b, a, b + np.uint32(1))
    if name == "selp_signed":
        return np.where(a.view(np.int32) > b.view(np.int32), a, b)
    if name == "swap_halves":
        return (a >> np.uint32(16)) | (a << np.uint32(16))
    if name == "cvt_pair":
        x = (a % 2001).astype(np.int32).astype(np.float32) / np.float32(7) - np.float32(140)
        y = (b % 2001).astype(np.int32).astype(np.float32) / np.float32(3) - np.float32(300)
        hi = x.astype(np.float16).view(np.uint16).astype(np.uint32)
        lo = y.astype(np.float16).view(np.uint16).astype(np.uint32)
        return (hi << np.uint32(16)) | lo
    if name == "lane":
        return np.arange(N, dtype=np.uint32) % 32
    if name == "bfe":
        return (a >> (b % 24)) & np.uint32(0xFF)
    if name == "mul_hi":
        return ((a64 * b64) >> np.uint64(32)).astype(np.uint32)
    if name == "scratch_input":
        return (a << np.uint32(1)) & np.uint32(0xFF)
    if name == "read_write":
        return a + b
    if name == "fmax":
        x = (a % 1000).astype(np.float32) - np.float32(499.5)
        y = (b % 1000).astype(np.float32) - np.float32(499.5)
        return np.maximum(x, y).view(np.uint32)
    if name == "fsetp":
        nan = (a % 7 == 0) | (b % 7 == 0)
        return np.where(nan | ((a % 64) < (b % 64)), 1, 0).astype(np.uint32)
    if name == "half_to_int":
        h = (a & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
        return np.trunc(h).astype(np.int64).astype(np.uint32)
    raise AssertionError(name)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"])
def test_inline_ptx_runs_bit_exact_in_the_emulator(target):
    rng = np.random.default_rng(7)
    ha, hb, hc = half_pairs(rng), half_pairs(rng), half_pairs(rng)
    ba, bb = bf16_pairs(rng), bf16_pairs(rng)
    a = rng.integers(0, 2**32, N, dtype=np.uint32)
    b = rng.integers(0, 2**32, N, dtype=np.uint32)
    c = rng.integers(0, 2**32, N, dtype=np.uint32)
    # The float16 cases read their lanes from (ha, hb, hc), bfloat16's from (ba, bb).
    inputs = {"int": (a, b, c), "f16": (ha, hb, hc), "bf16": (ba, bb, c)}
    kernel = tilelang.compile(ptx_kernel(), target=target)
    outs = {}
    for label, args in inputs.items():
        outs[label] = np.zeros((len(CASES), N), np.uint32)
        kernel(*args, outs[label])
    for k, name in enumerate(CASES):
        label = "f16" if name.endswith("_h2") else "bf16" if name == "mul_bf2" else "int"
        got = outs[label][k]
        want = expected(name, a, b, c, ha, hb, hc, ba, bb).astype(np.uint32)
        assert np.array_equal(got, want), f"{name}: {got[:4]} != {want[:4]}"


@needs_nvrtc
def test_inline_ptx_cases_assemble_with_ptxas():
    # mul.bf16x2 is an sm_90 instruction (the emulator does not check an instruction's arch).
    kernel = tilelang.compile(ptx_kernel(), target="cuda -arch=sm_90a")
    ok, log = nvrtc_compile("sm_90a", kernel.get_kernel_source())
    assert ok, log


UNSUPPORTED = r"""
inline __device__ unsigned tlx_load(const unsigned* p) {
  unsigned d;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(d) : "l"(p));
  return d;
}
"""


def load_kernel(source):
    @T.prim_func
    def load(A: T.Tensor((N,), "uint32"), B: T.Tensor((N,), "uint32")):
        with T.Kernel(1, threads=N) as _:
            T.import_source(source)
            tx = T.get_thread_binding()
            B[tx] = T.call_extern("uint32", "tlx_load", T.address_of(A[tx]))

    return load


def test_inline_ptx_outside_the_emulated_set_is_named():
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(load_kernel(UNSUPPORTED), target="cuda -arch=sm_80 -emulate")
    message = str(err.value)
    assert re.match(
        r"the kernel's inline PTX does not run in the CUDA emulator:\ninline PTX at line \d+ of",
        message,
    )
    assert "the instruction `ld.global.nc.u32`" in message
    assert "_Pragma" not in message


def test_inline_ptx_in_a_gpu_only_branch_is_not_compiled():
    # The statement the emulator cannot run stands in a branch the emulation skips.
    source = r"""
inline __device__ unsigned tlx_load(const unsigned* p) {
#if defined(__CUDA_ARCH__)
  unsigned d;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(d) : "l"(p));
  return d;
#else
  return *p + 1u;
#endif
}
"""
    kernel = tilelang.compile(load_kernel(source), target="cuda -arch=sm_80 -emulate")
    a = np.arange(N, dtype=np.uint32)
    b = np.zeros(N, np.uint32)
    kernel(a, b)
    np.testing.assert_array_equal(b, a + 1)
    # get_kernel_source() is the CUDA source, the asm statement as written.
    assert 'asm volatile("ld.global.nc.u32 %0, [%1];"' in kernel.get_kernel_source()
