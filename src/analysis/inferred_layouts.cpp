// Reads the layouts of lower_fragments back from the function it was given: lower()
// runs with an observer that keeps the function before that pass, and layout
// inference (LayoutFacts) runs again on it.
#include "analysis/inferred_layouts.h"

#include <map>

#include "arith/simplify.h"
#include "ir/visitor.h"
#include "support/error.h"
#include "transform/lower_fragments.h"
#include "transform/pass_config.h"
#include "transform/pipeline.h"

namespace tl {
namespace {

// The Buffer handles of `f`, by node: the queries key buffers by node.
std::map<const BufferNode*, Buffer> buffers_of(const PrimFunc& f) {
  struct Collect : IRVisitor {
    std::map<const BufferNode*, Buffer> found;
    using IRVisitor::visit;
    void visit_buffer(const Buffer& b) override { found.emplace(b.get(), b); }
  } collect;
  collect.visit(f->body);
  return collect.found;
}

int64_t constant(const Expr& e) {
  auto v = as_const_int(simplify(e));
  TL_ICHECK(v.has_value(), "a layout evaluated at constant indices is not a constant");
  return *v;
}

std::vector<int64_t> shape_of(const BufferNode* b) {
  std::vector<int64_t> out;
  for (const Expr& e : b->shape) out.push_back(constant(e));
  return out;
}

int64_t flat_index(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

InferredLayout fragment_table(const BufferNode* b, const FragmentLayout& layout) {
  InferredLayout out{b->name, b->dtype, shape_of(b), true, {}, {}};
  out.holders.resize(element_count(out.shape));
  const DataType i32(ScalarType::Int32);
  for (int64_t t = 0; t < layout.threads(); ++t)
    for (int64_t k = 0; k < layout.local_size(); ++k) {
      Expr tt = make_const(i32, t), kk = make_const(i32, k);
      if (!constant(layout.valid(tt, kk))) continue;
      std::vector<int64_t> index;
      for (const Expr& e : layout.logical(tt, kk)) index.push_back(constant(e));
      out.holders[flat_index(index, out.shape)].emplace_back(t, k);
    }
  return out;
}

InferredLayout shared_table(const Buffer& b, const Layout& layout) {
  InferredLayout out{b->name, b->dtype, shape_of(b.get()), false, {}, {}};
  const DataType i32(ScalarType::Int32);
  int64_t n = element_count(out.shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    std::vector<Expr> index(out.shape.size());
    for (int64_t d = int64_t(out.shape.size()) - 1, rest = flat; d >= 0; --d) {
      index[d] = make_const(i32, rest % out.shape[d]);
      rest /= out.shape[d];
    }
    out.offsets.push_back(constant(layout.offset(b, index)));
  }
  return out;
}

}  // namespace

std::vector<InferredLayout> inferred_layouts(const PrimFunc& f, const Target& target, const Attrs& pass_configs) {
  PassConfig configs = PassConfig::parse(pass_configs);
  PrimFunc last = f, before;
  lower(f, target, configs, [&](const std::string& step, const PrimFunc& after) {
    if (step == "lower_fragments") before = last;
    last = after;
  });
  std::vector<InferredLayout> out;
  if (!before.defined()) return out;
  bool wgmma = configs.wgmma && target.kind == TargetKind::CUDA;
  std::map<const BufferNode*, Buffer> buffers = buffers_of(before);
  LayoutFacts facts(target, wgmma, configs.gemm_sp_wgmma);
  for (const auto& [node, layout] : facts.fragment_layouts(before)) out.push_back(fragment_table(node, *layout));
  for (const auto& [node, tile] : facts.shared_tile_layouts(before))
    if (auto it = buffers.find(node); it != buffers.end() && tile.layout)
      out.push_back(shared_table(it->second, *tile.layout));
  return out;
}

}  // namespace tl
