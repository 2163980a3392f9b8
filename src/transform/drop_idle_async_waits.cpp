// drop_idle_async_waits.h.
#include "transform/drop_idle_async_waits.h"

#include "ir/device_calls.h"
#include "ir/visitor.h"

namespace tl {
namespace {

// Whether `body` issues a cp.async of its own (T.ptx_cp_async).
bool issues_cp_async(const Stmt& body) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const CallNode* op) override {
      if (const std::string* name = extern_name(op))
        found = found || is_device_call(*name, kCpAsyncCall) || is_device_call(*name, kCpAsyncConditionalCall);
      IRVisitor::visit(op);
    }
  } find;
  find.visit(body);
  return find.found;
}

class DropGroupCalls : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    if (const std::string* name = extern_name(op->value))
      if (is_device_call(*name, kCpAsyncCommitCall) || is_device_call(*name, kCpAsyncWaitCall)) return seq({});
    return self;
  }
};

class PerKernel : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    if (issues_cp_async(op->body)) return self;
    Stmt body = DropGroupCalls().mutate(op->body);
    return body.same_as(op->body) ? self : with_body(op, body);
  }
};

// T.tma_store_arrive / T.tma_store_wait where TMA does not exist: no store is a bulk
// group, so there is nothing to close or wait for.
class DropTmaStoreGroupCalls : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    if (const std::string* name = extern_name(op->value))
      if (is_device_call(*name, kTmaStoreArriveCall) || is_device_call(*name, kTmaStoreWaitCall)) return seq({});
    return self;
  }
};

}  // namespace

PrimFunc drop_idle_async_waits(const PrimFunc& f, const Target& t) {
  Stmt body = PerKernel().mutate(f->body);
  if (!t.has_tma()) body = DropTmaStoreGroupCalls().mutate(body);
  return f.with_body(body);
}

}  // namespace tl
