// T.gemm on sm_90a tensor cores: wgmma.mma_async issued per warpgroup (4
// consecutive warps, warpgroup = warp / 4), B and (gemm_ss) A read by the tensor
// cores straight from shared memory through matrix descriptors, or (gemm_rs) A
// from registers. Every thread of the block calls tl::wgmma_gemm_ss / _rs once per
// K tile, with the same arguments; the call returns with the products in the
// accumulators (it waits for its own wgmma group), or, with Pending = 1 (pipelined
// loops), with its wgmmas still in flight until the next call or tl::wgmma_wait<0>().
//
// Operand types (WgmmaOf below): half_t / bfloat16_t (k16), float read as tf32
// (k8; the tensor cores use the top 19 bits of each value, i.e. truncate to 10
// mantissa bits), float8_e4m3fn_t / float8_e5m2_t in any mix (k32), all into
// float, and half_t also into half_t (wgmma's f16 accumulators, kAccumulates);
// int8_t / uint8_t (both the same, k32) into int32_t. One k-step is 32
// bytes of K for every type. wgmma transposes only 16-bit operands: the others
// must be K-major (A [M][K], B [N][K]), and only 16-bit A comes from registers.
//
// Warpgroups split the M x N tile into WgM x WgN tiles of TM x TN (TM a multiple
// of 64, TN of 16); warpgroup wg owns the tile at (wg / WgN, wg % WgN) and covers
// it with TM / 64 rows of TN / N wgmma.m64nNkK instructions per k-step (N the
// largest power of two up to 256 that divides TN). The accumulator is the
// thread's array of (TM / 64) * (TN / 8) * 4 floats (int32_t for 8-bit integers,
// half_t for f16 accumulators, whose f16x2 registers hold elements e = 0, 1 and
// 2, 3 in pairs; docs/design/cuda_layouts.md, "wgmma"):
//   acc[(mi * (TN / 8) + nt) * 4 + e] = C[wgm * TM + 64 mi + 16 w + g + 8 (e / 2)]
//                                         [wgn * TN + 8 nt + 2 q + e % 2]
// with w = warp % 4, g = lane / 4, q = lane % 4: the m64nN D fragment, m64 block
// after m64 block. With one m64 block per warpgroup and WgN = 1 it is the sm_80
// accumulator layout of warps (4 WgM, 1).
//
// Shared tiles are stored as the descriptors describe them (the compiler writes
// them through src/layout/layout.cpp's wgmma_swizzle): rows of S = 128 bytes (64
// or 32 when 128 does not divide the row) swizzled as the descriptor's S-byte
// mode, the 16-byte chunk index XOR (row % 8) >> log2(128 / S); a tile with rows longer
// than S is a sequence of column blocks S bytes wide, each Rows x S bytes. Every
// block starts on a multiple of 8 * S bytes of the shared window, where the
// hardware's swizzle pattern starts. K-major operands (A [M][K], B [N][K]) step
// K by moving the descriptor's start address 32 bytes inside a row; MN-major
// operands (A [K][M], B [K][N], 16-bit types only) by whole groups of 8 rows.
//
// tl::wgmma_gemm_sp_ss is the same for a 2:4 sparse A (wgmma.mma_async.sp, f16 /
// bf16 into float): its kept values are read as the dense gemm reads A, with the
// metadata of tl::gemm_sp_ss (gemm_sp_sm80.cuh) in one register per thread;
// tl::wgmma_gemm_sp_rs takes the kept values from registers as gemm_rs takes A.
//
// Under TL_EMULATE the instructions are replaced by their twins in
// device/emu/wgmma_emu.h, which decode the same descriptors.
#pragma once

#include "gemm_sm80.cuh"
#include "gemm_sp_sm80.cuh"

namespace tl {
// The wgmma operand types (PTX .atype / .btype), shared with the emulator's twin.
enum class WgmmaType { F16, Bf16, Tf32, E4m3, E5m2, S8, U8 };
}  // namespace tl

#ifdef TL_EMULATE
#include "../emu/wgmma_emu.h"
#define TL_SM90_UNROLL
#else
#define TL_SM90_UNROLL _Pragma("unroll")
#endif

// The instructions are sm_90a only: name the arch when they are compiled for another.
#if defined(__CUDA_ARCH__) && !defined(TL_EMULATE) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TL_WGMMA_UNAVAILABLE 1
#endif

// Inline-asm operand lists for wgmma (R accumulator registers: "%0" .. "%R-1", then
// the inputs), one set per R: N / 2 for 32-bit accumulators, N / 4 for f16x2 ones,
// N any multiple of 16 up to 256. After the R accumulators: gemm_ss's a-desc, b-desc,
// scale-d, then trans-a, trans-b (SS: 16-bit types), nothing more (SF: tf32 and fp8,
// which take no transpose) or without the imm-scale-a/b operands too (SI: integers);
// gemm_rs's a0..a3, b-desc, scale-d, trans-b (RS); wgmma.sp's a-desc, b-desc,
// metadata, sparsity selector, scale-d, trans-a, trans-b (SP); and below, wgmma.sp
// with A from registers (SPR). OUT: the outputs, C
// "+f" (float) or "+r" (int32, f16x2). Generated: one line per R.
#define TL_WG_D4 "{%0, %1, %2, %3}"
#define TL_WG_D8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define TL_WG_D12 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}"
#define TL_WG_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define TL_WG_D20 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19}"
#define TL_WG_D24 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}"
#define TL_WG_D28                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27}"
#define TL_WG_D32                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define TL_WG_D36                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35}"
#define TL_WG_D40                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define TL_WG_D44                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43}"
#define TL_WG_D48                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47}"
#define TL_WG_D52                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51}"
#define TL_WG_D56                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55}"
#define TL_WG_D60                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59}"
#define TL_WG_D64                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TL_WG_D72                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71}"
#define TL_WG_D80                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}"
#define TL_WG_D88                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"
#define TL_WG_D96                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "  \
  "%90, %91, %92, %93, %94, %95}"
#define TL_WG_D104                                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "  \
  "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103}"
#define TL_WG_D112                                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "  \
  "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "  \
  "%110, %111}"
#define TL_WG_D120                                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "  \
  "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "  \
  "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119}"
#define TL_WG_D128                                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "  \
  "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "  \
  "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define TL_WG_SS4 "%4, %5, p, 1, 1, %7, %8", "%6"
#define TL_WG_SF4 "%4, %5, p, 1, 1", "%6"
#define TL_WG_SI4 "%4, %5, p", "%6"
#define TL_WG_RS4 "{%4, %5, %6, %7}, %8, p, 1, 1, %10", "%9"
#define TL_WG_SP4 "%4, %5, %6, %7, p, 1, 1, %9, %10", "%8"
#define TL_WG_SS8 "%8, %9, p, 1, 1, %11, %12", "%10"
#define TL_WG_SF8 "%8, %9, p, 1, 1", "%10"
#define TL_WG_SI8 "%8, %9, p", "%10"
#define TL_WG_RS8 "{%8, %9, %10, %11}, %12, p, 1, 1, %14", "%13"
#define TL_WG_SP8 "%8, %9, %10, %11, p, 1, 1, %13, %14", "%12"
#define TL_WG_SS12 "%12, %13, p, 1, 1, %15, %16", "%14"
#define TL_WG_SF12 "%12, %13, p, 1, 1", "%14"
#define TL_WG_SI12 "%12, %13, p", "%14"
#define TL_WG_RS12 "{%12, %13, %14, %15}, %16, p, 1, 1, %18", "%17"
#define TL_WG_SP12 "%12, %13, %14, %15, p, 1, 1, %17, %18", "%16"
#define TL_WG_SS16 "%16, %17, p, 1, 1, %19, %20", "%18"
#define TL_WG_SF16 "%16, %17, p, 1, 1", "%18"
#define TL_WG_SI16 "%16, %17, p", "%18"
#define TL_WG_RS16 "{%16, %17, %18, %19}, %20, p, 1, 1, %22", "%21"
#define TL_WG_SP16 "%16, %17, %18, %19, p, 1, 1, %21, %22", "%20"
#define TL_WG_SS20 "%20, %21, p, 1, 1, %23, %24", "%22"
#define TL_WG_SF20 "%20, %21, p, 1, 1", "%22"
#define TL_WG_SI20 "%20, %21, p", "%22"
#define TL_WG_RS20 "{%20, %21, %22, %23}, %24, p, 1, 1, %26", "%25"
#define TL_WG_SP20 "%20, %21, %22, %23, p, 1, 1, %25, %26", "%24"
#define TL_WG_SS24 "%24, %25, p, 1, 1, %27, %28", "%26"
#define TL_WG_SF24 "%24, %25, p, 1, 1", "%26"
#define TL_WG_SI24 "%24, %25, p", "%26"
#define TL_WG_RS24 "{%24, %25, %26, %27}, %28, p, 1, 1, %30", "%29"
#define TL_WG_SP24 "%24, %25, %26, %27, p, 1, 1, %29, %30", "%28"
#define TL_WG_SS28 "%28, %29, p, 1, 1, %31, %32", "%30"
#define TL_WG_SF28 "%28, %29, p, 1, 1", "%30"
#define TL_WG_SI28 "%28, %29, p", "%30"
#define TL_WG_RS28 "{%28, %29, %30, %31}, %32, p, 1, 1, %34", "%33"
#define TL_WG_SP28 "%28, %29, %30, %31, p, 1, 1, %33, %34", "%32"
#define TL_WG_SS32 "%32, %33, p, 1, 1, %35, %36", "%34"
#define TL_WG_SF32 "%32, %33, p, 1, 1", "%34"
#define TL_WG_SI32 "%32, %33, p", "%34"
#define TL_WG_RS32 "{%32, %33, %34, %35}, %36, p, 1, 1, %38", "%37"
#define TL_WG_SP32 "%32, %33, %34, %35, p, 1, 1, %37, %38", "%36"
#define TL_WG_SS36 "%36, %37, p, 1, 1, %39, %40", "%38"
#define TL_WG_SF36 "%36, %37, p, 1, 1", "%38"
#define TL_WG_SI36 "%36, %37, p", "%38"
#define TL_WG_RS36 "{%36, %37, %38, %39}, %40, p, 1, 1, %42", "%41"
#define TL_WG_SP36 "%36, %37, %38, %39, p, 1, 1, %41, %42", "%40"
#define TL_WG_SS40 "%40, %41, p, 1, 1, %43, %44", "%42"
#define TL_WG_SF40 "%40, %41, p, 1, 1", "%42"
#define TL_WG_SI40 "%40, %41, p", "%42"
#define TL_WG_RS40 "{%40, %41, %42, %43}, %44, p, 1, 1, %46", "%45"
#define TL_WG_SP40 "%40, %41, %42, %43, p, 1, 1, %45, %46", "%44"
#define TL_WG_SS44 "%44, %45, p, 1, 1, %47, %48", "%46"
#define TL_WG_SF44 "%44, %45, p, 1, 1", "%46"
#define TL_WG_SI44 "%44, %45, p", "%46"
#define TL_WG_RS44 "{%44, %45, %46, %47}, %48, p, 1, 1, %50", "%49"
#define TL_WG_SP44 "%44, %45, %46, %47, p, 1, 1, %49, %50", "%48"
#define TL_WG_SS48 "%48, %49, p, 1, 1, %51, %52", "%50"
#define TL_WG_SF48 "%48, %49, p, 1, 1", "%50"
#define TL_WG_SI48 "%48, %49, p", "%50"
#define TL_WG_RS48 "{%48, %49, %50, %51}, %52, p, 1, 1, %54", "%53"
#define TL_WG_SP48 "%48, %49, %50, %51, p, 1, 1, %53, %54", "%52"
#define TL_WG_SS52 "%52, %53, p, 1, 1, %55, %56", "%54"
#define TL_WG_SF52 "%52, %53, p, 1, 1", "%54"
#define TL_WG_SI52 "%52, %53, p", "%54"
#define TL_WG_RS52 "{%52, %53, %54, %55}, %56, p, 1, 1, %58", "%57"
#define TL_WG_SP52 "%52, %53, %54, %55, p, 1, 1, %57, %58", "%56"
#define TL_WG_SS56 "%56, %57, p, 1, 1, %59, %60", "%58"
#define TL_WG_SF56 "%56, %57, p, 1, 1", "%58"
#define TL_WG_SI56 "%56, %57, p", "%58"
#define TL_WG_RS56 "{%56, %57, %58, %59}, %60, p, 1, 1, %62", "%61"
#define TL_WG_SP56 "%56, %57, %58, %59, p, 1, 1, %61, %62", "%60"
#define TL_WG_SS60 "%60, %61, p, 1, 1, %63, %64", "%62"
#define TL_WG_SF60 "%60, %61, p, 1, 1", "%62"
#define TL_WG_SI60 "%60, %61, p", "%62"
#define TL_WG_RS60 "{%60, %61, %62, %63}, %64, p, 1, 1, %66", "%65"
#define TL_WG_SP60 "%60, %61, %62, %63, p, 1, 1, %65, %66", "%64"
#define TL_WG_SS64 "%64, %65, p, 1, 1, %67, %68", "%66"
#define TL_WG_SF64 "%64, %65, p, 1, 1", "%66"
#define TL_WG_SI64 "%64, %65, p", "%66"
#define TL_WG_RS64 "{%64, %65, %66, %67}, %68, p, 1, 1, %70", "%69"
#define TL_WG_SP64 "%64, %65, %66, %67, p, 1, 1, %69, %70", "%68"
#define TL_WG_SS72 "%72, %73, p, 1, 1, %75, %76", "%74"
#define TL_WG_SF72 "%72, %73, p, 1, 1", "%74"
#define TL_WG_SI72 "%72, %73, p", "%74"
#define TL_WG_RS72 "{%72, %73, %74, %75}, %76, p, 1, 1, %78", "%77"
#define TL_WG_SP72 "%72, %73, %74, %75, p, 1, 1, %77, %78", "%76"
#define TL_WG_SS80 "%80, %81, p, 1, 1, %83, %84", "%82"
#define TL_WG_SF80 "%80, %81, p, 1, 1", "%82"
#define TL_WG_SI80 "%80, %81, p", "%82"
#define TL_WG_RS80 "{%80, %81, %82, %83}, %84, p, 1, 1, %86", "%85"
#define TL_WG_SP80 "%80, %81, %82, %83, p, 1, 1, %85, %86", "%84"
#define TL_WG_SS88 "%88, %89, p, 1, 1, %91, %92", "%90"
#define TL_WG_SF88 "%88, %89, p, 1, 1", "%90"
#define TL_WG_SI88 "%88, %89, p", "%90"
#define TL_WG_RS88 "{%88, %89, %90, %91}, %92, p, 1, 1, %94", "%93"
#define TL_WG_SP88 "%88, %89, %90, %91, p, 1, 1, %93, %94", "%92"
#define TL_WG_SS96 "%96, %97, p, 1, 1, %99, %100", "%98"
#define TL_WG_SF96 "%96, %97, p, 1, 1", "%98"
#define TL_WG_SI96 "%96, %97, p", "%98"
#define TL_WG_RS96 "{%96, %97, %98, %99}, %100, p, 1, 1, %102", "%101"
#define TL_WG_SP96 "%96, %97, %98, %99, p, 1, 1, %101, %102", "%100"
#define TL_WG_SS104 "%104, %105, p, 1, 1, %107, %108", "%106"
#define TL_WG_SF104 "%104, %105, p, 1, 1", "%106"
#define TL_WG_SI104 "%104, %105, p", "%106"
#define TL_WG_RS104 "{%104, %105, %106, %107}, %108, p, 1, 1, %110", "%109"
#define TL_WG_SP104 "%104, %105, %106, %107, p, 1, 1, %109, %110", "%108"
#define TL_WG_SS112 "%112, %113, p, 1, 1, %115, %116", "%114"
#define TL_WG_SF112 "%112, %113, p, 1, 1", "%114"
#define TL_WG_SI112 "%112, %113, p", "%114"
#define TL_WG_RS112 "{%112, %113, %114, %115}, %116, p, 1, 1, %118", "%117"
#define TL_WG_SP112 "%112, %113, %114, %115, p, 1, 1, %117, %118", "%116"
#define TL_WG_SS120 "%120, %121, p, 1, 1, %123, %124", "%122"
#define TL_WG_SF120 "%120, %121, p, 1, 1", "%122"
#define TL_WG_SI120 "%120, %121, p", "%122"
#define TL_WG_RS120 "{%120, %121, %122, %123}, %124, p, 1, 1, %126", "%125"
#define TL_WG_SP120 "%120, %121, %122, %123, p, 1, 1, %125, %126", "%124"
#define TL_WG_SS128 "%128, %129, p, 1, 1, %131, %132", "%130"
#define TL_WG_SF128 "%128, %129, p, 1, 1", "%130"
#define TL_WG_SI128 "%128, %129, p", "%130"
#define TL_WG_RS128 "{%128, %129, %130, %131}, %132, p, 1, 1, %134", "%133"
#define TL_WG_SP128 "%128, %129, %130, %131, p, 1, 1, %133, %134", "%132"
// wgmma.sp with A from registers (SPR): a0..a3, b-desc, metadata, sparsity selector,
// scale-d, trans-b; one line per R (N / 2 float accumulators).
#define TL_WG_SPR8 "{%8, %9, %10, %11}, %12, %13, %14, p, 1, 1, %16", "%15"
#define TL_WG_SPR16 "{%16, %17, %18, %19}, %20, %21, %22, p, 1, 1, %24", "%23"
#define TL_WG_SPR24 "{%24, %25, %26, %27}, %28, %29, %30, p, 1, 1, %32", "%31"
#define TL_WG_SPR32 "{%32, %33, %34, %35}, %36, %37, %38, p, 1, 1, %40", "%39"
#define TL_WG_SPR40 "{%40, %41, %42, %43}, %44, %45, %46, p, 1, 1, %48", "%47"
#define TL_WG_SPR48 "{%48, %49, %50, %51}, %52, %53, %54, p, 1, 1, %56", "%55"
#define TL_WG_SPR56 "{%56, %57, %58, %59}, %60, %61, %62, p, 1, 1, %64", "%63"
#define TL_WG_SPR64 "{%64, %65, %66, %67}, %68, %69, %70, p, 1, 1, %72", "%71"
#define TL_WG_SPR72 "{%72, %73, %74, %75}, %76, %77, %78, p, 1, 1, %80", "%79"
#define TL_WG_SPR80 "{%80, %81, %82, %83}, %84, %85, %86, p, 1, 1, %88", "%87"
#define TL_WG_SPR88 "{%88, %89, %90, %91}, %92, %93, %94, p, 1, 1, %96", "%95"
#define TL_WG_SPR96 "{%96, %97, %98, %99}, %100, %101, %102, p, 1, 1, %104", "%103"
#define TL_WG_SPR104 "{%104, %105, %106, %107}, %108, %109, %110, p, 1, 1, %112", "%111"
#define TL_WG_SPR112 "{%112, %113, %114, %115}, %116, %117, %118, p, 1, 1, %120", "%119"
#define TL_WG_SPR120 "{%120, %121, %122, %123}, %124, %125, %126, p, 1, 1, %128", "%127"
#define TL_WG_SPR128 "{%128, %129, %130, %131}, %132, %133, %134, p, 1, 1, %136", "%135"
#define TL_WG_OUT4(C, d, o) C(d[o]), C(d[o + 1]), C(d[o + 2]), C(d[o + 3])
#define TL_WG_OUT8(C, d, o) TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4)
#define TL_WG_OUT12(C, d, o) TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8)
#define TL_WG_OUT16(C, d, o) \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12)
#define TL_WG_OUT20(C, d, o)                                                                       \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12), \
      TL_WG_OUT4(C, d, o + 16)
#define TL_WG_OUT24(C, d, o)                                                                       \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12), \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20)
#define TL_WG_OUT28(C, d, o)                                                                       \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12), \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24)
#define TL_WG_OUT32(C, d, o)                                                                       \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12), \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28)
#define TL_WG_OUT36(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32)
#define TL_WG_OUT40(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36)
#define TL_WG_OUT44(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40)
#define TL_WG_OUT48(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44)
#define TL_WG_OUT52(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48)
#define TL_WG_OUT56(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52)
#define TL_WG_OUT60(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56)
#define TL_WG_OUT64(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60)
#define TL_WG_OUT72(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68)
#define TL_WG_OUT80(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76)
#define TL_WG_OUT88(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76), \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84)
#define TL_WG_OUT96(C, d, o)                                                                                  \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76), \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84), TL_WG_OUT4(C, d, o + 88), TL_WG_OUT4(C, d, o + 92)
#define TL_WG_OUT104(C, d, o)                                                                                 \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76), \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84), TL_WG_OUT4(C, d, o + 88), TL_WG_OUT4(C, d, o + 92), \
      TL_WG_OUT4(C, d, o + 96), TL_WG_OUT4(C, d, o + 100)
#define TL_WG_OUT112(C, d, o)                                                                                 \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),            \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28), \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44), \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60), \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76), \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84), TL_WG_OUT4(C, d, o + 88), TL_WG_OUT4(C, d, o + 92), \
      TL_WG_OUT4(C, d, o + 96), TL_WG_OUT4(C, d, o + 100), TL_WG_OUT4(C, d, o + 104), TL_WG_OUT4(C, d, o + 108)
#define TL_WG_OUT120(C, d, o)                                                                                    \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),               \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28),    \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44),    \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60),    \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76),    \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84), TL_WG_OUT4(C, d, o + 88), TL_WG_OUT4(C, d, o + 92),    \
      TL_WG_OUT4(C, d, o + 96), TL_WG_OUT4(C, d, o + 100), TL_WG_OUT4(C, d, o + 104), TL_WG_OUT4(C, d, o + 108), \
      TL_WG_OUT4(C, d, o + 112), TL_WG_OUT4(C, d, o + 116)
#define TL_WG_OUT128(C, d, o)                                                                                    \
  TL_WG_OUT4(C, d, o), TL_WG_OUT4(C, d, o + 4), TL_WG_OUT4(C, d, o + 8), TL_WG_OUT4(C, d, o + 12),               \
      TL_WG_OUT4(C, d, o + 16), TL_WG_OUT4(C, d, o + 20), TL_WG_OUT4(C, d, o + 24), TL_WG_OUT4(C, d, o + 28),    \
      TL_WG_OUT4(C, d, o + 32), TL_WG_OUT4(C, d, o + 36), TL_WG_OUT4(C, d, o + 40), TL_WG_OUT4(C, d, o + 44),    \
      TL_WG_OUT4(C, d, o + 48), TL_WG_OUT4(C, d, o + 52), TL_WG_OUT4(C, d, o + 56), TL_WG_OUT4(C, d, o + 60),    \
      TL_WG_OUT4(C, d, o + 64), TL_WG_OUT4(C, d, o + 68), TL_WG_OUT4(C, d, o + 72), TL_WG_OUT4(C, d, o + 76),    \
      TL_WG_OUT4(C, d, o + 80), TL_WG_OUT4(C, d, o + 84), TL_WG_OUT4(C, d, o + 88), TL_WG_OUT4(C, d, o + 92),    \
      TL_WG_OUT4(C, d, o + 96), TL_WG_OUT4(C, d, o + 100), TL_WG_OUT4(C, d, o + 104), TL_WG_OUT4(C, d, o + 108), \
      TL_WG_OUT4(C, d, o + 112), TL_WG_OUT4(C, d, o + 116), TL_WG_OUT4(C, d, o + 120), TL_WG_OUT4(C, d, o + 124)
// The instruction string: operands (a pair of strings: the list, then scale-d).
#define TL_WG_ASM2(shape_types, d_list, ops, scale)                                                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\nwgmma.mma_async.sync.aligned." shape_types " " d_list ", " ops \
  ";\n}\n"
#define TL_WG_ASM(shape_types, d_list, ops_scale) TL_WG_ASM2(shape_types, d_list, ops_scale)
#define TL_WG_SP_ASM2(shape_types, d_list, ops, scale)                                                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\nwgmma.mma_async.sp.sync.aligned." shape_types " " d_list ", " ops \
  ";\n}\n"
#define TL_WG_SP_ASM(shape_types, d_list, ops_scale) TL_WG_SP_ASM2(shape_types, d_list, ops_scale)
// One wgmma of R accumulators (constraint C) with the operand list OPS##R, and the
// same for each instruction N (N, d in scope): KS the instruction K, TYPES
// "dtype.atype.btype", the rest the input operands.
#define TL_WG_CALL(R, NS, KS, TYPES, C, OPS, ...) \
  asm volatile(TL_WG_ASM("m64n" NS "k" KS "." TYPES, TL_WG_D##R, OPS##R) : TL_WG_OUT##R(C, d, 0) : __VA_ARGS__)
// The same for each instruction N (a multiple of 16 up to 256; N, d in scope).
#define TL_WG_BY_N(KS, TYPES, C, OPS, ...)                  \
  if constexpr (N == 16)                                    \
    TL_WG_CALL(8, "16", KS, TYPES, C, OPS, __VA_ARGS__);    \
  else if constexpr (N == 32)                               \
    TL_WG_CALL(16, "32", KS, TYPES, C, OPS, __VA_ARGS__);   \
  else if constexpr (N == 48)                               \
    TL_WG_CALL(24, "48", KS, TYPES, C, OPS, __VA_ARGS__);   \
  else if constexpr (N == 64)                               \
    TL_WG_CALL(32, "64", KS, TYPES, C, OPS, __VA_ARGS__);   \
  else if constexpr (N == 80)                               \
    TL_WG_CALL(40, "80", KS, TYPES, C, OPS, __VA_ARGS__);   \
  else if constexpr (N == 96)                               \
    TL_WG_CALL(48, "96", KS, TYPES, C, OPS, __VA_ARGS__);   \
  else if constexpr (N == 112)                              \
    TL_WG_CALL(56, "112", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 128)                              \
    TL_WG_CALL(64, "128", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 144)                              \
    TL_WG_CALL(72, "144", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 160)                              \
    TL_WG_CALL(80, "160", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 176)                              \
    TL_WG_CALL(88, "176", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 192)                              \
    TL_WG_CALL(96, "192", KS, TYPES, C, OPS, __VA_ARGS__);  \
  else if constexpr (N == 208)                              \
    TL_WG_CALL(104, "208", KS, TYPES, C, OPS, __VA_ARGS__); \
  else if constexpr (N == 224)                              \
    TL_WG_CALL(112, "224", KS, TYPES, C, OPS, __VA_ARGS__); \
  else if constexpr (N == 240)                              \
    TL_WG_CALL(120, "240", KS, TYPES, C, OPS, __VA_ARGS__); \
  else                                                      \
    TL_WG_CALL(128, "256", KS, TYPES, C, OPS, __VA_ARGS__)
// The same for f16 accumulators: N / 4 registers of f16x2.
#define TL_WG_BY_N_F16ACC(KS, TYPES, OPS, ...)                \
  if constexpr (N == 16)                                      \
    TL_WG_CALL(4, "16", KS, TYPES, "+r", OPS, __VA_ARGS__);   \
  else if constexpr (N == 32)                                 \
    TL_WG_CALL(8, "32", KS, TYPES, "+r", OPS, __VA_ARGS__);   \
  else if constexpr (N == 48)                                 \
    TL_WG_CALL(12, "48", KS, TYPES, "+r", OPS, __VA_ARGS__);  \
  else if constexpr (N == 64)                                 \
    TL_WG_CALL(16, "64", KS, TYPES, "+r", OPS, __VA_ARGS__);  \
  else if constexpr (N == 80)                                 \
    TL_WG_CALL(20, "80", KS, TYPES, "+r", OPS, __VA_ARGS__);  \
  else if constexpr (N == 96)                                 \
    TL_WG_CALL(24, "96", KS, TYPES, "+r", OPS, __VA_ARGS__);  \
  else if constexpr (N == 112)                                \
    TL_WG_CALL(28, "112", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 128)                                \
    TL_WG_CALL(32, "128", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 144)                                \
    TL_WG_CALL(36, "144", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 160)                                \
    TL_WG_CALL(40, "160", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 176)                                \
    TL_WG_CALL(44, "176", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 192)                                \
    TL_WG_CALL(48, "192", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 208)                                \
    TL_WG_CALL(52, "208", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 224)                                \
    TL_WG_CALL(56, "224", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else if constexpr (N == 240)                                \
    TL_WG_CALL(60, "240", KS, TYPES, "+r", OPS, __VA_ARGS__); \
  else                                                        \
    TL_WG_CALL(64, "256", KS, TYPES, "+r", OPS, __VA_ARGS__)

namespace tl {
namespace sm90 {

// wgmma.fence / commit_group / wait_group and the generic -> async proxy fence;
// `fence_operand` keeps the compiler from moving a register access across them.
TL_DEVICE void wgmma_fence() {
#ifndef TL_EMULATE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
TL_DEVICE void wgmma_commit() {
#ifdef TL_EMULATE
  emu::wgmma_commit();
#else
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
TL_DEVICE void wgmma_wait() {
#ifdef TL_EMULATE
  emu::wgmma_wait(N);
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
TL_DEVICE void fence_proxy_async() {
#ifndef TL_EMULATE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
template <int Count>
TL_DEVICE void fence_operands(float* r) {
#ifndef TL_EMULATE
  TL_SM90_UNROLL for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(r[i])::"memory");
#endif
}
template <int Count>
TL_DEVICE void fence_operands(uint32_t* r) {
#ifndef TL_EMULATE
  TL_SM90_UNROLL for (int i = 0; i < Count; ++i) asm volatile("" : "+r"(r[i])::"memory");
#endif
}
template <int Count>
TL_DEVICE void fence_operands(int32_t* r) {
#ifndef TL_EMULATE
  TL_SM90_UNROLL for (int i = 0; i < Count; ++i) asm volatile("" : "+r"(r[i])::"memory");
#endif
}
// Count half_t accumulators (an even number, 4-byte aligned): Count / 2 f16x2 registers.
template <int Count>
TL_DEVICE void fence_operands(half_t* r) {
#ifndef TL_EMULATE
  fence_operands<Count / 2>(reinterpret_cast<uint32_t*>(r));
#endif
}

// The shared-window address of a tile, as descriptors hold it.
TL_DEVICE uint32_t shared_offset(const void* p) {
#ifdef TL_EMULATE
  return emu::wgmma_shared_offset(p);
#else
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#endif
}

// The swizzle width S of a tile row of RowBytes bytes: 128, else 64, else 32.
template <int RowBytes>
struct SwizzleOf {
  static constexpr int kBytes = RowBytes % 128 == 0 ? 128 : RowBytes % 64 == 0 ? 64 : RowBytes % 32 == 0 ? 32 : 0;
  static constexpr uint64_t kMode = kBytes == 128 ? 1 : kBytes == 64 ? 2 : 3;  // descriptor bits 62-63
};

}  // namespace sm90

// The element offset of logical (row, col) in a Rows x Cols tile stored in the
// wgmma layout: column block col / W (W = S / ElemBytes elements), then the row of
// that block swizzled as swizzle.cuh does for S-byte rows. The compiler's
// Layout::wgmma_swizzle computes the same offsets.
template <int Rows, int Cols, int ElemBytes>
TL_DEVICE int wgmma_tile_offset(int row, int col) {
  constexpr int kW = sm90::SwizzleOf<Cols * ElemBytes>::kBytes / ElemBytes;
  static_assert(kW != 0, "wgmma_tile_offset: rows must be a multiple of 32 bytes");
  return col / kW * (Rows * kW) + swizzle_offset<kW, ElemBytes>(row, col % kW);
}

namespace sm90 {

// One operand tile of Rows x Cols elements in the wgmma layout; KMajor when K runs
// along the rows. The descriptor of the tile start is built once; at() moves its
// start address to the block of one instruction (constant offsets once unrolled).
template <int Rows, int Cols, class T, bool KMajor>
struct DescTile {
  static constexpr int kElem = int(sizeof(T)), kSw = SwizzleOf<Cols * kElem>::kBytes, kW = kSw / kElem;
  static constexpr int kBlockBytes = Rows * kSw;  // one column block
  static_assert(kSw != 0, "tl::wgmma_gemm: operand tile rows must be a multiple of 32 bytes");
  static_assert(Rows % 8 == 0, "tl::wgmma_gemm: operand tiles have a multiple of 8 rows");
  uint64_t base;

  TL_DEVICE explicit DescTile(const T* tile) {
    // K-major: LBO unused (1 by convention), SBO = 8 rows. MN-major: LBO = the next
    // column block (S bytes further along MN), SBO = the next 8 rows of K.
    const uint64_t lbo = KMajor ? 16 : kBlockBytes, sbo = 8 * kSw;
    base = uint64_t((shared_offset(tile) & 0x3ffff) >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 |
           SwizzleOf<Cols * kElem>::kMode << 62;
  }

  // The descriptor of the instruction block starting at (mn0, k0).
  TL_DEVICE uint64_t at(int mn0, int k0) const {
    const int off = KMajor ? k0 / kW * kBlockBytes + mn0 * kSw + k0 % kW * kElem
                           : mn0 / kW * kBlockBytes + k0 * kSw + mn0 % kW * kElem;
    return base + uint64_t(off >> 4);
  }
};

// The wgmma operand type of a storage type, its accumulator, and whether wgmma
// can read it M- / N-major (imm-trans: 16-bit types only).
template <class T>
struct WgmmaOf {
  static constexpr bool kSupported = false, kTransposable = false, kFp8 = false;
  using Acc = void;
};
template <WgmmaType Kind, class Acc_>
struct WgmmaInfo {
  static constexpr bool kSupported = true;
  static constexpr WgmmaType kKind = Kind;
  using Acc = Acc_;
  static constexpr bool kTransposable = Kind == WgmmaType::F16 || Kind == WgmmaType::Bf16;
  static constexpr bool kFp8 = Kind == WgmmaType::E4m3 || Kind == WgmmaType::E5m2;
};
template <>
struct WgmmaOf<half_t> : WgmmaInfo<WgmmaType::F16, float> {};  // or half_t: kAccumulates
template <>
struct WgmmaOf<bfloat16_t> : WgmmaInfo<WgmmaType::Bf16, float> {};
template <>
struct WgmmaOf<float> : WgmmaInfo<WgmmaType::Tf32, float> {};
template <>
struct WgmmaOf<float8_e4m3fn_t> : WgmmaInfo<WgmmaType::E4m3, float> {};
template <>
struct WgmmaOf<float8_e5m2_t> : WgmmaInfo<WgmmaType::E5m2, float> {};
template <>
struct WgmmaOf<int8_t> : WgmmaInfo<WgmmaType::S8, int32_t> {};
template <>
struct WgmmaOf<uint8_t> : WgmmaInfo<WgmmaType::U8, int32_t> {};

// Whether Acc accumulates products of TA x TB: WgmmaOf's type, or half_t for half_t
// operands (wgmma's f16 accumulators; bf16 and tf32 accumulate only in f32).
template <class TA, class TB, class Acc>
constexpr bool kAccumulates = tl::is_same<Acc, typename WgmmaOf<TA>::Acc>::value ||
                              (tl::is_same<Acc, half_t>::value && tl::is_same<TA, half_t>::value &&
                               tl::is_same<TB, half_t>::value);

// The K of one wgmma for operands of T: 32 bytes.
template <class T>
constexpr int kInstK = 32 / int(sizeof(T));

// The instruction N for a warpgroup tile TN wide: with a K-major B, the widest
// multiple of 16 up to 256 dividing it (one m64n96k16 for 96 columns, not three n32,
// as TileLang's select_wgmma_inst_n); with an N-major B, the largest power of two up to
// 256 dividing it (whole swizzle blocks, see wgmma_gemm_ss).
template <int TN, bool KMajorB = false>
TL_DEVICE constexpr int inst_n() {
  if (KMajorB)
    for (int n = 256; n >= 16; n -= 16)
      if (TN % n == 0) return n;
  int n = 256;
  while (n > 16 && TN % n != 0) n /= 2;
  return n;
}

#ifndef TL_EMULATE
// wgmma_ss on f16 accumulators (f16 operands): d holds N / 4 registers of f16x2,
// the elements of the f32 form in pairs (element 2i in the low half of d[i]).
template <int N, bool MnMajorA, bool MnMajorB>
TL_DEVICE void wgmma_ss_f16acc(uint32_t* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
  TL_WG_BY_N_F16ACC("16", "f16.f16.f16", TL_WG_SS, "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(int(MnMajorA)),
                    "n"(int(MnMajorB)));
}

// The same with A from registers.
template <int N, bool MnMajorB>
TL_DEVICE void wgmma_rs_f16acc(uint32_t* d, const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  TL_WG_BY_N_F16ACC("16", "f16.f16.f16", TL_WG_RS, "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),
                    "r"(scale_d), "n"(int(MnMajorB)));
}
#endif

// d (+)= A * B for one m64nNkK (scale_d 0: d = A * B); A and B from descriptors,
// each K-major or (MnMajor, the instruction's imm-trans 1, 16-bit types only)
// M- / N-major.
template <int N, class TA, class TB, bool MnMajorA, bool MnMajorB, class Acc>
TL_DEVICE void wgmma_ss(Acc* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "tl::wgmma_ss: N is a multiple of 16 up to 256");
#if defined(TL_EMULATE)
  emu::wgmma_ss(d, N, desc_a, desc_b, scale_d != 0, WgmmaOf<TA>::kKind, WgmmaOf<TB>::kKind, MnMajorA, MnMajorB);
#elif defined(TL_WGMMA_UNAVAILABLE)
  static_assert(N < 0, "tl::wgmma_gemm: wgmma needs sm_90a; compile for arch sm_90a (target \"cuda -arch=sm_90a\")");
#else
  constexpr WgmmaType ka = WgmmaOf<TA>::kKind, kb = WgmmaOf<TB>::kKind;
#define TL_WG_SS_16BIT(T)                                                                                      \
  TL_WG_BY_N("16", "f32." T "." T, "+f", TL_WG_SS, "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(int(MnMajorA)), \
             "n"(int(MnMajorB)))
#define TL_WG_SS_FLOAT(KS, TA_, TB_) \
  TL_WG_BY_N(KS, "f32." TA_ "." TB_, "+f", TL_WG_SF, "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define TL_WG_SS_INT(T) TL_WG_BY_N("32", "s32." T "." T, "+r", TL_WG_SI, "l"(desc_a), "l"(desc_b), "r"(scale_d))
  if constexpr (tl::is_same<Acc, half_t>::value) {
    wgmma_ss_f16acc<N, MnMajorA, MnMajorB>(reinterpret_cast<uint32_t*>(d), desc_a, desc_b, scale_d);
  } else if constexpr (ka == WgmmaType::F16) {
    TL_WG_SS_16BIT("f16");
  } else if constexpr (ka == WgmmaType::Bf16) {
    TL_WG_SS_16BIT("bf16");
  } else if constexpr (ka == WgmmaType::Tf32) {
    TL_WG_SS_FLOAT("8", "tf32", "tf32");
  } else if constexpr (ka == WgmmaType::E4m3 && kb == WgmmaType::E4m3) {
    TL_WG_SS_FLOAT("32", "e4m3", "e4m3");
  } else if constexpr (ka == WgmmaType::E4m3) {
    TL_WG_SS_FLOAT("32", "e4m3", "e5m2");
  } else if constexpr (ka == WgmmaType::E5m2 && kb == WgmmaType::E4m3) {
    TL_WG_SS_FLOAT("32", "e5m2", "e4m3");
  } else if constexpr (ka == WgmmaType::E5m2) {
    TL_WG_SS_FLOAT("32", "e5m2", "e5m2");
  } else if constexpr (ka == WgmmaType::S8) {
    TL_WG_SS_INT("s8");
  } else {
    TL_WG_SS_INT("u8");
  }
#undef TL_WG_SS_INT
#undef TL_WG_SS_FLOAT
#undef TL_WG_SS_16BIT
#endif
}

// The same with 16-bit A from registers: a[4] the m64k16 fragment (reg j: rows
// 16 w + g + 8 (j % 2), k 2q + 8 (j / 2) + {0, 1}, lower k in the low half).
template <int N, bool Bf16, bool MnMajorB, class Acc>
TL_DEVICE void wgmma_rs(Acc* d, const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "tl::wgmma_rs: N is a multiple of 16 up to 256");
#if defined(TL_EMULATE)
  emu::wgmma_rs(d, N, a, desc_b, scale_d != 0, Bf16 ? WgmmaType::Bf16 : WgmmaType::F16, MnMajorB);
#elif defined(TL_WGMMA_UNAVAILABLE)
  static_assert(N < 0, "tl::wgmma_gemm: wgmma needs sm_90a; compile for arch sm_90a (target \"cuda -arch=sm_90a\")");
#else
#define TL_WG_RS_16BIT(T)                                                                                   \
  TL_WG_BY_N("16", "f32." T "." T, "+f", TL_WG_RS, "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), \
             "r"(scale_d), "n"(int(MnMajorB)))
  if constexpr (tl::is_same<Acc, half_t>::value) {
    static_assert(!Bf16, "tl::wgmma_gemm_rs: bfloat16 operands accumulate only in float");
    wgmma_rs_f16acc<N, MnMajorB>(reinterpret_cast<uint32_t*>(d), a, desc_b, scale_d);
  } else if constexpr (Bf16) {
    TL_WG_RS_16BIT("bf16");
  } else {
    TL_WG_RS_16BIT("f16");
  }
#undef TL_WG_RS_16BIT
#endif
}

// One sparse instruction CALL(R, NS, T) for N (a multiple of 16 up to 256; N in scope).
#define TL_WG_SP_BY_N(CALL, T) \
  if constexpr (N == 16)       \
    CALL(8, "16", T);          \
  else if constexpr (N == 32)  \
    CALL(16, "32", T);         \
  else if constexpr (N == 48)  \
    CALL(24, "48", T);         \
  else if constexpr (N == 64)  \
    CALL(32, "64", T);         \
  else if constexpr (N == 80)  \
    CALL(40, "80", T);         \
  else if constexpr (N == 96)  \
    CALL(48, "96", T);         \
  else if constexpr (N == 112) \
    CALL(56, "112", T);        \
  else if constexpr (N == 128) \
    CALL(64, "128", T);        \
  else if constexpr (N == 144) \
    CALL(72, "144", T);        \
  else if constexpr (N == 160) \
    CALL(80, "160", T);        \
  else if constexpr (N == 176) \
    CALL(88, "176", T);        \
  else if constexpr (N == 192) \
    CALL(96, "192", T);        \
  else if constexpr (N == 208) \
    CALL(104, "208", T);       \
  else if constexpr (N == 224) \
    CALL(112, "224", T);       \
  else if constexpr (N == 240) \
    CALL(120, "240", T);       \
  else                         \
    CALL(128, "256", T)

// d += A * B for one m64nNk32 with 2:4 sparse f16 / bf16 A (wgmma.mma_async.sp):
// desc_a the 64 x 16 kept values (the A block of a dense m64nNk16), desc_b the
// 32 K of B, e the metadata register of mma.sp m16n8k32 for the warp's 16 rows
// (gemm_sp_sm80.cuh; sparsity selector 0), accumulators into float.
template <int N, bool Bf16, bool MnMajorA, bool MnMajorB>
TL_DEVICE void wgmma_sp_ss(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t e, int scale_d) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "tl::wgmma_sp_ss: N is a multiple of 16 up to 256");
#if defined(TL_EMULATE)
  emu::wgmma_sp_ss(d, N, desc_a, desc_b, e, 0, scale_d != 0, Bf16 ? WgmmaType::Bf16 : WgmmaType::F16, MnMajorA,
                   MnMajorB);
#elif defined(TL_WGMMA_UNAVAILABLE)
  static_assert(N < 0, "tl::wgmma_gemm_sp: wgmma needs sm_90a; compile for arch sm_90a (target \"cuda -arch=sm_90a\")");
#else
#define TL_WG_SP_CALL(R, NS, T)                                                    \
  asm volatile(TL_WG_SP_ASM("m64n" NS "k32.f32." T "." T, TL_WG_D##R, TL_WG_SP##R) \
               : TL_WG_OUT##R("+f", d, 0)                                          \
               : "l"(desc_a), "l"(desc_b), "r"(e), "n"(0), "r"(scale_d), "n"(int(MnMajorA)), "n"(int(MnMajorB)))
  if constexpr (Bf16) {
    TL_WG_SP_BY_N(TL_WG_SP_CALL, "bf16");
  } else {
    TL_WG_SP_BY_N(TL_WG_SP_CALL, "f16");
  }
#undef TL_WG_SP_CALL
#endif
}

// The same with the 64 x 16 kept values of A from registers: a[4] is the m64k16
// fragment of wgmma_rs (reg j: kept values of row 16 w + g + 8 (j % 2), kept columns
// 2q + 8 (j / 2) + {0, 1}).
template <int N, bool Bf16, bool MnMajorB>
TL_DEVICE void wgmma_sp_rs(float* d, const uint32_t (&a)[4], uint64_t desc_b, uint32_t e, int scale_d) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "tl::wgmma_sp_rs: N is a multiple of 16 up to 256");
#if defined(TL_EMULATE)
  emu::wgmma_sp_rs(d, N, a, desc_b, e, 0, scale_d != 0, Bf16 ? WgmmaType::Bf16 : WgmmaType::F16, MnMajorB);
#elif defined(TL_WGMMA_UNAVAILABLE)
  static_assert(N < 0, "tl::wgmma_gemm_sp: wgmma needs sm_90a; compile for arch sm_90a (target \"cuda -arch=sm_90a\")");
#else
#define TL_WG_SPR_CALL(R, NS, T)                                                                        \
  asm volatile(TL_WG_SP_ASM("m64n" NS "k32.f32." T "." T, TL_WG_D##R, TL_WG_SPR##R)                     \
               : TL_WG_OUT##R("+f", d, 0)                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(e), "n"(0), "r"(scale_d), \
                 "n"(int(MnMajorB)))
  if constexpr (Bf16) {
    TL_WG_SP_BY_N(TL_WG_SPR_CALL, "bf16");
  } else {
    TL_WG_SP_BY_N(TL_WG_SPR_CALL, "f16");
  }
#undef TL_WG_SPR_CALL
#endif
}
#undef TL_WG_SP_BY_N

template <int M, int N, int K, int WgM, int WgN, class TA, class TB, class TC>
TL_DEVICE void check_wgmma_shape() {
  static_assert(WgmmaOf<TA>::kSupported && WgmmaOf<TB>::kSupported,
                "tl::wgmma_gemm: operands must be half_t, bfloat16_t, float (tf32), float8_e4m3fn_t / float8_e5m2_t, "
                "int8_t or uint8_t");
  if constexpr (WgmmaOf<TA>::kSupported && WgmmaOf<TB>::kSupported) {
    static_assert(tl::is_same<TA, TB>::value || (WgmmaOf<TA>::kFp8 && WgmmaOf<TB>::kFp8),
                  "tl::wgmma_gemm: A and B must have the same element type (or both be fp8: e4m3fn / e5m2)");
    static_assert(kAccumulates<TA, TB, TC>,
                  "tl::wgmma_gemm: the accumulator must be float, or half_t for half_t operands (int32_t for int8_t "
                  "/ uint8_t operands); wgmma has no bfloat16 accumulator");
  }
  static_assert(M % (64 * WgM) == 0, "tl::wgmma_gemm: M must be a multiple of 64 * WgM");
  static_assert(N % WgN == 0 && (N / WgN) % 16 == 0, "tl::wgmma_gemm: N / WgN must be a multiple of 16");
  static_assert(K % kInstK<TA> == 0,
                "tl::wgmma_gemm: K must be a multiple of 32 bytes of the element type (16 half_t / bfloat16_t, "
                "8 float, 32 fp8 / int8)");
}

}  // namespace sm90

// acc += op(A) * op(B) for the block's M x N x K tile; A is [M][K] ([K][M] when
// TransA), B is [K][N] ([N][K] when TransB), both in shared memory in the wgmma
// layout above. Called by all WgM * WgN * 128 threads of the block.
// Pending = 1 returns with this call's wgmmas still running (it waits for the
// previous call's instead): the next call, or tl::wgmma_wait<0>(), completes them.
// Until then neither the accumulator nor this call's tiles may be touched; the
// pipeline keeps the tiles' stage one step longer for it.
// Fence = true issues fence.proxy.async before the wgmmas: the tiles were written
// by ordinary stores (st.shared, cp.async) that the caller's barrier ordered before
// this call, and the tensor cores read through the async proxy, which needs this
// fence between the two. Fence = false (the compiler's choice when only TMA writes
// the tiles: async proxy on both sides, made visible by the mbarrier wait) leaves
// it out, a MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S per call in the SASS.
// KTileA / KTileB and ka0 / kb0: an operand that is a K slice of a larger tile
// (T.gemm(A_s[:, k0:k0 + K], ...)): A (B) points at the whole tile, whose extent
// along K is KTileA (KTileB), and the gemm reads its K columns (rows, MN-major)
// from ka0 (kb0) on, a multiple of the instruction's K that may vary at run time;
// the descriptors start inside the tile's swizzle rows, as the hardware allows
// (the swizzle applies to the absolute address).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int Pending = 0, bool Fence = true,
          int KTileA = K, int KTileB = K, class TA, class TB, class TC>
TL_DEVICE void wgmma_gemm_ss(const TA* A, const TB* B, TC* acc, int ka0 = 0, int kb0 = 0) {
  sm90::check_wgmma_shape<M, N, K, WgM, WgN, TA, TB, TC>();
  static_assert(KTileA >= K && KTileB >= K, "tl::wgmma_gemm_ss: an operand tile is narrower than K");
  constexpr int TM = M / WgM, TN = N / WgN, MI = TM / 64, NI = sm90::inst_n<TN, TransB>(), NJ = TN / NI;
  static_assert(sm90::WgmmaOf<TA>::kTransposable || (!TransA && TransB),
                "tl::wgmma_gemm_ss: wgmma reads tf32, fp8 and 8-bit integer operands only K-major: A [M][K] and "
                "B [N][K] (TransA = false, TransB = true)");
  constexpr int KS = sm90::kInstK<TA>;
  using TileA = sm90::DescTile<TransA ? KTileA : M, TransA ? M : KTileA, TA, !TransA>;
  using TileB = sm90::DescTile<TransB ? N : KTileB, TransB ? KTileB : N, TB, TransB>;
  // An N-major B instruction reads whole S-byte column blocks, or stays in one.
  static_assert(TransB || (TN % TileB::kW == 0 || TileB::kW % TN == 0),
                "tl::wgmma_gemm_ss: an N-major B needs N / WgN to be a multiple or a divisor of its swizzle width");
  // (modulo: a T.ws region of WgM * WgN warpgroups starts on a multiple of its size)
  const int wg = sm80::thread_rank() / 128 % (WgM * WgN), m0 = wg / WgN * TM, n0 = wg % WgN * TN;
  const TileA a(A);
  const TileB b(B);
  if constexpr (Fence) sm90::fence_proxy_async();
  sm90::fence_operands<MI * TN / 2>(acc);
  sm90::wgmma_fence();
  TL_SM90_UNROLL for (int s = 0; s < K / KS; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      TL_SM90_UNROLL for (int nj = 0; nj < NJ; ++nj) {
        sm90::wgmma_ss<NI, TA, TB, TransA, !TransB>(acc + (mi * (TN / 8) + nj * (NI / 8)) * 4,
                                                    a.at(m0 + 64 * mi, ka0 + KS * s), b.at(n0 + NI * nj, kb0 + KS * s),
                                                    1);
      }
    }
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<Pending>();
  sm90::fence_operands<MI * TN / 2>(acc);
}

// acc += op(A) * op(B) with 2:4 sparse A on wgmma.mma_async.sp (K the dense
// extent): A_sparse [M][K / 2] ([K / 2][M] when TransA) and B as for wgmma_gemm_ss,
// both in the wgmma layout; E the plain metadata tile of tl::gemm_sp_ss
// (gemm_sp_sm80.cuh: [M][K / per], [K / per][M] when TransE). Each m64nNk32 reads
// the 64 x 16 kept values of its k-step as the dense m64nNk16 reads A, and per warp
// the metadata register of mma.sp m16n8k32 (lane (g, q): rows 16 w + g and + 8, K
// 16 (q % 2) .. + 15 of the step; the ISA's metadata layout for m64nNk32 f16 is
// mma.sp's per warp of the warpgroup). Float accumulators only; Pending and Fence
// as for wgmma_gemm_ss (E is read by the threads, not the tensor cores).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, bool TransE, int Pending = 0,
          bool Fence = true, class TA, class TE, class TB, class TC>
TL_DEVICE void wgmma_gemm_sp_ss(const TA* A, const TE* E, const TB* B, TC* acc) {
  static_assert(tl::is_same<TA, TB>::value && (tl::is_same<TA, half_t>::value || tl::is_same<TA, bfloat16_t>::value),
                "tl::wgmma_gemm_sp_ss: A and B must both be half_t or both bfloat16_t");
  static_assert(tl::is_same<TC, float>::value, "tl::wgmma_gemm_sp_ss: the accumulator must be float");
  static_assert(sizeof(TE) == 1 || sizeof(TE) == 2 || sizeof(TE) == 4,
                "tl::wgmma_gemm_sp_ss: E must be 8, 16 or 32 bit");
  static_assert(M % (64 * WgM) == 0, "tl::wgmma_gemm_sp_ss: M must be a multiple of 64 * WgM");
  static_assert(N % WgN == 0 && (N / WgN) % 16 == 0, "tl::wgmma_gemm_sp_ss: N / WgN must be a multiple of 16");
  static_assert(K % 32 == 0 && K % (8 * int(sizeof(TE))) == 0,
                "tl::wgmma_gemm_sp_ss: K must be a multiple of 32 and of the elements one E element describes");
  constexpr int TM = M / WgM, TN = N / WgN, MI = TM / 64, NI = sm90::inst_n<TN, TransB>(), NJ = TN / NI,
                kSteps = K / 32;
  using TileA = sm90::DescTile<TransA ? K / 2 : M, TransA ? M : K / 2, TA, !TransA>;
  using TileB = sm90::DescTile<TransB ? N : K, TransB ? K : N, TB, TransB>;
  static_assert(TransB || (TN % TileB::kW == 0 || TileB::kW % TN == 0),
                "tl::wgmma_gemm_sp_ss: an N-major B needs N / WgN to be a multiple or a divisor of its swizzle width");
  const int rank = sm80::thread_rank(), wg = rank / 128 % (WgM * WgN), m0 = wg / WgN * TM, n0 = wg % WgN * TN;
  const int w = rank / 32 % 4, g = rank % 32 / 4, half = rank % 2;
  const TileA a(A);
  const TileB b(B);
  // The metadata registers are read before wgmma.fence, which orders them before
  // the wgmmas that read them.
  uint32_t e[kSteps][MI];
  TL_SM90_UNROLL for (int s = 0; s < kSteps; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      const int row = m0 + 64 * mi + 16 * w + g, grp = 8 * s + 4 * half;
      e[s][mi] = mma::sp_fix_zero_codes(sm80::sp_codes16<M, K / 4, TransE>(E, row, grp) |
                                        (sm80::sp_codes16<M, K / 4, TransE>(E, row + 8, grp) << 16));
    }
  }
  if constexpr (Fence) sm90::fence_proxy_async();
  sm90::fence_operands<kSteps * MI>(&e[0][0]);
  sm90::fence_operands<MI * TN / 2>(acc);
  sm90::wgmma_fence();
  TL_SM90_UNROLL for (int s = 0; s < kSteps; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      TL_SM90_UNROLL for (int nj = 0; nj < NJ; ++nj) {
        sm90::wgmma_sp_ss<NI, tl::is_same<TA, bfloat16_t>::value, TransA, !TransB>(
            acc + (mi * (TN / 8) + nj * (NI / 8)) * 4, a.at(m0 + 64 * mi, 16 * s), b.at(n0 + NI * nj, 32 * s), e[s][mi],
            1);
      }
    }
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<Pending>();
  sm90::fence_operands<MI * TN / 2>(acc);
}

// acc += A * op(B) with 2:4 sparse A whose kept values are in registers
// (wgmma.mma_async.sp, A from registers): a_regs is the thread's fragment of the
// M x K / 2 kept values in the layout of wgmma_gemm_rs's A for warpgroups (WgM, 1),
// a_regs[(mi * (K / 16) + kt) * 4 + e]; the kept step s (dense K 32 s .. + 31) is n8
// tiles 2s and 2s + 1 of it. E and B as for wgmma_gemm_sp_ss, Pending and Fence as for
// wgmma_gemm_rs.
template <int M, int N, int K, int WgM, int WgN, bool TransB, bool TransE, int Pending = 0, bool Fence = true, class TA,
          class TE, class TB, class TC>
TL_DEVICE void wgmma_gemm_sp_rs(const TA* a_regs, const TE* E, const TB* B, TC* acc) {
  static_assert(tl::is_same<TA, TB>::value && (tl::is_same<TA, half_t>::value || tl::is_same<TA, bfloat16_t>::value),
                "tl::wgmma_gemm_sp_rs: A and B must both be half_t or both bfloat16_t");
  static_assert(tl::is_same<TC, float>::value, "tl::wgmma_gemm_sp_rs: the accumulator must be float");
  static_assert(sizeof(TE) == 1 || sizeof(TE) == 2 || sizeof(TE) == 4,
                "tl::wgmma_gemm_sp_rs: E must be 8, 16 or 32 bit");
  static_assert(WgN == 1, "tl::wgmma_gemm_sp_rs: A in registers needs WgN == 1 (each warpgroup owns whole rows of A)");
  static_assert(M % (64 * WgM) == 0, "tl::wgmma_gemm_sp_rs: M must be a multiple of 64 * WgM");
  static_assert(N % 16 == 0, "tl::wgmma_gemm_sp_rs: N must be a multiple of 16");
  static_assert(K % 32 == 0 && K % (8 * int(sizeof(TE))) == 0,
                "tl::wgmma_gemm_sp_rs: K must be a multiple of 32 and of the elements one E element describes");
  constexpr int TM = M / WgM, MI = TM / 64, KT = K / 16, NI = sm90::inst_n<N, TransB>(), NJ = N / NI, kSteps = K / 32;
  using TileB = sm90::DescTile<TransB ? N : K, TransB ? K : N, TB, TransB>;
  static_assert(TransB || (N % TileB::kW == 0 || TileB::kW % N == 0),
                "tl::wgmma_gemm_sp_rs: an N-major B needs N to be a multiple or a divisor of its swizzle width");
  const int rank = sm80::thread_rank(), m0 = rank / 128 % WgM * TM;
  const int w = rank / 32 % 4, g = rank % 32 / 4, half = rank % 2;
  const TileB b(B);
  // The A fragments and metadata registers are written before wgmma.fence, which
  // orders them before the wgmmas that read them.
  uint32_t a[kSteps][MI][4];
  uint32_t e[kSteps][MI];
  TL_SM90_UNROLL for (int s = 0; s < kSteps; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      const TA* t0 = a_regs + (mi * KT + 2 * s) * 4;  // n8 tile 2s; tile 2s + 1 follows
      TL_SM90_UNROLL for (int j = 0; j < 4; ++j) a[s][mi][j] = load_pair(t0 + 2 * j);
      const int row = m0 + 64 * mi + 16 * w + g, grp = 8 * s + 4 * half;
      e[s][mi] = mma::sp_fix_zero_codes(sm80::sp_codes16<M, K / 4, TransE>(E, row, grp) |
                                        (sm80::sp_codes16<M, K / 4, TransE>(E, row + 8, grp) << 16));
    }
  }
  if constexpr (Fence) sm90::fence_proxy_async();
  sm90::fence_operands<kSteps * MI * 4>(&a[0][0][0]);
  sm90::fence_operands<kSteps * MI>(&e[0][0]);
  sm90::fence_operands<MI * N / 2>(acc);
  sm90::wgmma_fence();
  TL_SM90_UNROLL for (int s = 0; s < kSteps; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      TL_SM90_UNROLL for (int nj = 0; nj < NJ; ++nj) {
        sm90::wgmma_sp_rs<NI, tl::is_same<TA, bfloat16_t>::value, !TransB>(
            acc + (mi * (N / 8) + nj * (NI / 8)) * 4, a[s][mi], b.at(NI * nj, 32 * s), e[s][mi], 1);
      }
    }
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<Pending>();
  sm90::fence_operands<MI * N / 2>(acc);
}

// Waits until at most N of this warpgroup's wgmma commit groups are in flight.
template <int N>
TL_DEVICE void wgmma_wait() {
  sm90::wgmma_wait<N>();
}

// acc += A * op(B) with A in registers: a_regs is the thread's fragment of the
// M x K matrix A in the accumulator layout above for warpgroups (WgM, 1), i.e.
// a_regs[(mi * (K / 8) + kt) * 4 + e]; the m64k16 fragment of k-step s is n8
// tiles 2s and 2s + 1 (a0 = tile 2s elements 0, 1; a1 = its 2, 3; a2, a3 the same
// of tile 2s + 1), as for the sm_80 gemm_rs. B is in shared memory as for gemm_ss.
// Pending = 1 as for wgmma_gemm_ss (neither the accumulator nor a_regs may be
// touched until a later wait completes the group); Fence as for wgmma_gemm_ss, for
// the B tile (A's registers are ordered by wgmma.fence). KTileB and kb0: B a K slice
// of a larger tile, as for wgmma_gemm_ss.
template <int M, int N, int K, int WgM, int WgN, bool TransB, int Pending = 0, bool Fence = true, int KTileB = K,
          class TA, class TB, class TC>
TL_DEVICE void wgmma_gemm_rs(const TA* a_regs, const TB* B, TC* acc, int kb0 = 0) {
  sm90::check_wgmma_shape<M, N, K, WgM, WgN, TA, TB, TC>();
  static_assert(KTileB >= K, "tl::wgmma_gemm_rs: the B tile is narrower than K");
  static_assert(sm90::WgmmaOf<TA>::kTransposable && tl::is_same<TA, TB>::value,
                "tl::wgmma_gemm_rs: A in registers must be half_t or bfloat16_t (B the same)");
  static_assert(WgN == 1, "tl::wgmma_gemm_rs: A in registers needs WgN == 1 (each warpgroup owns whole rows of A)");
  constexpr int TM = M / WgM, MI = TM / 64, KT = K / 8, NI = sm90::inst_n<N, TransB>(), NJ = N / NI;
  using TileB = sm90::DescTile<TransB ? N : KTileB, TransB ? KTileB : N, TB, TransB>;
  static_assert(TransB || (N % TileB::kW == 0 || TileB::kW % N == 0),
                "tl::wgmma_gemm_rs: an N-major B needs N to be a multiple or a divisor of its swizzle width");
  const TileB b(B);
  // Every A fragment is packed before wgmma.fence: the fence orders register
  // writes before the wgmmas that read them.
  uint32_t a[K / 16][MI][4];
  TL_SM90_UNROLL for (int s = 0; s < K / 16; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      const TA* t0 = a_regs + (mi * KT + 2 * s) * 4;  // n8 tile 2s; tile 2s + 1 follows
      TL_SM90_UNROLL for (int j = 0; j < 4; ++j) a[s][mi][j] = load_pair(t0 + 2 * j);
    }
  }
  if constexpr (Fence) sm90::fence_proxy_async();
  sm90::fence_operands<K / 16 * MI * 4>(&a[0][0][0]);
  sm90::fence_operands<MI * N / 2>(acc);
  sm90::wgmma_fence();
  TL_SM90_UNROLL for (int s = 0; s < K / 16; ++s) {
    TL_SM90_UNROLL for (int mi = 0; mi < MI; ++mi) {
      TL_SM90_UNROLL for (int nj = 0; nj < NJ; ++nj) {
        sm90::wgmma_rs<NI, sm90::WgmmaOf<TA>::kKind == WgmmaType::Bf16, !TransB>(
            acc + (mi * (N / 8) + nj * (NI / 8)) * 4, a[s][mi], b.at(NI * nj, kb0 + 16 * s), 1);
      }
    }
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<Pending>();
  sm90::fence_operands<MI * N / 2>(acc);
}

}  // namespace tl

#undef TL_SM90_UNROLL
