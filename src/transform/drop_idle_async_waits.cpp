// See drop_idle_async_waits.h.
#include "transform/drop_idle_async_waits.h"

#include <vector>

#include "ir/attrs.h"
#include "ir/device_calls.h"
#include "ir/op.h"
#include "ir/visitor.h"

namespace tl {
namespace {

// Removes the statements that call one of `calls_` (with or without template arguments).
class DropCalls : public IRMutator {
 public:
  explicit DropCalls(std::vector<const char*> calls) : calls_(std::move(calls)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    if (const std::string* name = extern_name(op->value))
      for (const char* fn : calls_)
        if (is_device_call(*name, fn)) return seq({});
    return self;
  }

 private:
  std::vector<const char*> calls_;
};

// T.async_copy's copies (kAsyncIssueAttr) where the target has no cp.async: plain copies.
class DropAsyncIssue : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (!op->attrs.count(kAsyncIssueAttr)) return self;
    Attrs attrs = op->attrs;
    attrs.erase(kAsyncIssueAttr);
    return tile_op(op->op, op->regions, op->args, attrs, op->span);
  }
};

bool issues_async_copy(const Stmt& s) {
  return any_stmt(s, [](const Stmt& st) {
    auto* op = st.as<TileOpNode>();
    return op && op->attrs.count(kAsyncIssueAttr);
  });
}

// In each kernel that issues no cp.async of its own (T.ptx_cp_async, T.async_copy), the
// group calls.
class PerKernel : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    if (calls_device(op->body, kCpAsyncCall) || calls_device(op->body, kCpAsyncConditionalCall) ||
        issues_async_copy(op->body))
      return self;
    Stmt body = DropCalls({kCpAsyncCommitCall, kCpAsyncWaitCall}).mutate(op->body);
    return body.same_as(op->body) ? self : with_body(op, body);
  }
};

}  // namespace

PrimFunc drop_idle_async_waits(const PrimFunc& f, const Target& t) {
  Stmt body = f->body;
  if (t.sm_version() < 80) body = DropAsyncIssue().mutate(body);
  body = PerKernel().mutate(body);
  // T.tma_store_arrive / T.tma_store_wait where TMA does not exist: no store is a bulk
  // group, so there is nothing to close or wait for.
  if (!t.has_tma()) body = DropCalls({kTmaStoreArriveCall, kTmaStoreWaitCall}).mutate(body);
  return f.with_body(body);
}

}  // namespace tl
