// Small helpers the reduce, scan and atomic ops share for checking operand extents
// and naming them in error messages.
#pragma once

#include <sstream>

#include "arith/simplify.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"

namespace tl {

// "[4, 8]" for error messages.
inline std::string extents_str(const std::vector<Expr>& ext) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ext.size(); ++i) os << (i ? ", " : "") << to_string(ext[i]);
  os << "]";
  return os.str();
}

inline std::vector<Expr> non_unit_extents(const std::vector<Expr>& ext) {
  std::vector<Expr> out;
  for (const Expr& e : ext)
    if (!is_const_one(e)) out.push_back(e);
  return out;
}

inline bool same_extent(const Expr& a, const Expr& b) {
  auto x = as_const_int(a), y = as_const_int(b);
  if (x && y) return *x == *y;
  return to_string(a) == to_string(b);
}

inline bool same_extents(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_extent(a[i], b[i])) return false;
  return true;
}

// Slices arrive as stop - start; fold them so that equal extents compare equal.
inline void simplify_extents(std::vector<BufferRegion>& regions) {
  for (BufferRegion& r : regions)
    for (Range& rg : r.ranges) rg.extent = simplify(rg.extent);
}

// A string attribute, or `fallback` when absent.
inline std::string attr_string(const Attrs& attrs, const std::string& key, const std::string& fallback = "") {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  return fallback;
}

// The region spans all of dimension `d` of its buffer (constant bounds, from 0).
inline bool covers_dim(const BufferRegion& r, size_t d) {
  auto mn = as_const_int(r.ranges[d].min), ex = as_const_int(r.ranges[d].extent), sh = as_const_int(r.buffer->shape[d]);
  return mn && *mn == 0 && ex && sh && *ex == *sh;
}

// The region is the whole buffer.
inline bool covers_whole(const BufferRegion& r) {
  for (size_t d = 0; d < r.ranges.size(); ++d)
    if (!covers_dim(r, d)) return false;
  return true;
}

// A thread's own registers (T.alloc_local, T.alloc_var): every thread has its copy.
inline bool thread_private(const Buffer& b) {
  return b->scope == Scope::Local || b->scope == Scope::LocalVar;
}

// Whether `e` reads memory whose values differ between threads: a thread's registers
// or a fragment's (each thread holds its own part).
inline bool reads_registers(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    auto* l = x.as<BufferLoadNode>();
    found = found || (l && (thread_private(l->buffer) || l->buffer->scope == Scope::Fragment));
  });
  return found;
}

// A buffer in shared memory proper (block-wide fragments excluded).
inline bool is_shared(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn;
}

// Whether a float dtype can hold ±inf (the fp8 "fn" kinds cannot).
inline bool has_infinity(DataType t) {
  return t.is_float() && (t.bits() >= 16 || t.scalar_type() == ScalarType::Float8E5M2);
}

}  // namespace tl
