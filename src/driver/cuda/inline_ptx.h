// Inline PTX for the CUDA emulator (docs/guide/targets.md, "CUDA emulator"):
// the host compiler that builds an emulated kernel cannot assemble the PTX of a GCC
// extended-asm statement, so each one is translated into C++ over
// device/emu/ptx_emu.h before the build.
#pragma once

#include <string>

namespace tl {

// Rewrites every extended-asm statement of the CUDA source `cuda` (`asm`, `asm
// volatile`, `__asm__ __volatile__`, ...: a template of string literals, then
// outputs, inputs and clobbers) into a C++ block whose operands are 64-bit registers
// holding their expressions' bits (constraints h, r, l, f, d, n, i; `=`, `+`, `&`
// and matching-digit inputs) and whose instructions are calls of
// device/emu/ptx_emu.h. The replacement takes the statement's lines, so the host
// compiler's messages keep pointing at the source's own lines. Returns `cuda`
// unchanged when it holds no such statement.
//
// The instructions translated: mov (vectors {a, b} packed or unpacked, %tid / %ntid /
// %ctaid / %laneid / %warpid), and, or, xor, not, cnot, shl, shr, lop3, prmt (default
// mode), bfe, bfi, popc, clz, brev, add, sub, mul (.lo / .hi / .wide), mad, fma, min,
// max (.NaN), neg, abs of the integer and float types (f16, f16x2, bf16, bf16x2, f32,
// f64; .rn, .ftz, .sat), setp, selp, cvt (integers, floats, .rni / .rzi / .rmi / .rpi,
// f16x2 / bf16x2 from two f32), bar.sync / barrier.sync of the whole block, membar and
// fence; `.reg` declarations, `{ }` scopes and `@p` / `@!p` guards. Anything else (a
// memory operand, a label, a directed float rounding, another instruction) is a
// UserError naming the instruction and its line in the source: the same source still
// compiles for a GPU, where ptxas assembles it.
std::string emulate_inline_ptx(const std::string& cuda);

}  // namespace tl
