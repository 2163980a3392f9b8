// The XOR swizzle of shared-memory tiles that tensor-core operands are read from
// with ldmatrix (docs/design/cuda_layouts.md). The compiler writes such tiles
// through the same formula (src/layout/layout.cpp), so any change here must be made
// there too. A tile is Rows x Cols elements of ElemBytes bytes, row-major, cut into
// 16-byte chunks; a chunk keeps its row and moves within it, so the eight rows that
// one ldmatrix phase reads land in eight different bank groups.
#pragma once

namespace tl {

// The value a row XORs into the chunk index. It depends on row % 8 only, which the
// gemm relies on: any tile that starts at a multiple of 8 rows sees the same pattern.
template <int Cols, int ElemBytes>
TL_DEVICE constexpr int swizzle_xor(int row) {
  constexpr int kRowBytes = Cols * ElemBytes;
  if constexpr (kRowBytes % 128 == 0) return row & 7;
  if constexpr (kRowBytes == 64) return (row >> 1) & 3;
  if constexpr (kRowBytes == 32) return (row >> 2) & 1;
  return 0;
}

// Physical element offset of logical (row, col), both non-negative.
template <int Cols, int ElemBytes>
TL_DEVICE int swizzle_offset(int row, int col) {
  static_assert(ElemBytes == 1 || ElemBytes == 2 || ElemBytes == 4 || ElemBytes == 8,
                "swizzle_offset: ElemBytes must be 1, 2, 4 or 8");
  constexpr int kVec = 16 / ElemBytes;  // elements per 16-byte chunk
  const unsigned c = unsigned(col);     // unsigned: / and % by a power of two are shifts and masks
  const int chunk = int(c / kVec) ^ swizzle_xor<Cols, ElemBytes>(row);
  return row * Cols + chunk * kVec + int(c % kVec);
}

}  // namespace tl
