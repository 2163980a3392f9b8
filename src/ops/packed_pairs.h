// The packed-pair device functions of device/cuda/packed.cuh (tl::add2 ... tl::abs2:
// two float16 / bfloat16 / float32 values per instruction) as the CUDA lowering names
// them: `tl::add2<tl::__half2>(&out[0], &a[0], &b[0])`.
#pragma once

#include <string>

#include "ir/dtype.h"
#include "ir/expr.h"

namespace tl {

// The pair function for a binary op (add2, sub2, mul2, max2, min2), or nullptr.
inline const char* packed_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add2";
    case BinaryOp::Sub:
      return "sub2";
    case BinaryOp::Mul:
      return "mul2";
    case BinaryOp::Max:
      return "max2";
    case BinaryOp::Min:
      return "min2";
    default:
      return nullptr;
  }
}

// The pair type of an element type (CUDA's names): tl::__half2, tl::__nv_bfloat162,
// tl::float2; empty for any other type.
inline std::string packed_pair_type(DataType t) {
  if (t == dtype::Float16) return "tl::__half2";
  if (t == dtype::BFloat16) return "tl::__nv_bfloat162";
  if (t == dtype::Float32) return "tl::float2";
  return "";
}

// `tl::<fn><pair type>`, the extern call's name.
inline std::string packed_pair_call(const std::string& fn, DataType t) {
  return "tl::" + fn + "<" + packed_pair_type(t) + ">";
}

}  // namespace tl
