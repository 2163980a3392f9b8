// Pointer parameters (T.ptr / T.handle made a tensor by T.make_tensor): the flag
// survives the signature's text form and tells the function apart from one with a
// plain tensor parameter (printer, structural equality: both key the cache); the
// runtime takes a tensor for one (checked as a tensor) or an integer address.
#include <gtest/gtest.h>

#include "builder/builder.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "runtime/kernel.h"
#include "support/error.h"

namespace tl {
namespace {

class RecordingKernel : public Kernel {
 public:
  using Kernel::Kernel;
  mutable std::vector<KernelArg> slots;

 protected:
  void launch(size_t, const KernelArg* s, size_t n, const std::array<int64_t, 3>&, int, void*) const override {
    slots.assign(s, s + n);
  }
};

// P: a pointer made a float32 tensor of shape (n,), n a scalar parameter; X(4) float32.
PrimFunc function_with_pointer(bool address, bool with_dynamic_dim = false) {
  FunctionBuilder b("f", SourceSpan{intern_file("user.py"), 1});
  Var m = b.dynamic_var("m");
  Var n = b.scalar_param("n", dtype::Int32);
  Buffer p = b.tensor_param("P", {with_dynamic_dim ? Expr(m) : Expr(n)}, dtype::Float32, {}, address);
  Buffer x = b.tensor_param("X", {int_imm(4)}, dtype::Float32);
  b.kernel({int_imm(1)}, {1}, [&](KernelVars) { b.store(p, {int_imm(0)}, buffer_load(x, {int_imm(0)})); });
  return b.finish();
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(PointerParam, KeepsItsFlagInTextAndKeys) {
  PrimFunc f = function_with_pointer(true);
  PrimFunc g = function_with_pointer(false);
  ASSERT_TRUE(f->params[1].address);
  EXPECT_FALSE(structural_equal(f, g));
  std::string text = to_string(f);
  EXPECT_NE(text.find("P: T.ptr"), std::string::npos) << text;
  EXPECT_NE(text.find("P = T.make_tensor(P, (n,), \"float32\")"), std::string::npos) << text;
  KernelSignature sig = KernelSignature::from(f);
  std::string ser = sig.serialize();
  EXPECT_NE(ser.find("address P\n"), std::string::npos) << ser;
  KernelSignature back = KernelSignature::parse(ser);
  EXPECT_TRUE(back.params[1].address);
  EXPECT_FALSE(back.params[2].address);
  std::string misplaced = ser;
  misplaced.replace(misplaced.find("address P"), 9, "address n");
  EXPECT_THROW(KernelSignature::parse(misplaced), UserError);
}

TEST(PointerParam, TakesATensorOrAnAddress) {
  RecordingKernel k(KernelSignature::from(function_with_pointer(true)), Target::parse("cpu"), "", "");
  float p[8] = {}, x[4] = {};
  int64_t pshape[1] = {8}, xshape[1] = {4};
  std::vector<ArgValue> args(3);
  args[0].kind = ArgValue::Kind::Int;
  args[0].i = 8;
  args[2].kind = ArgValue::Kind::Tensor;
  args[2].tensor.data = x;
  args[2].tensor.dtype = dtype::Float32;
  args[2].tensor.ndim = 1;
  args[2].tensor.shape = xshape;
  // A tensor: checked as one (here, its dtype).
  args[1].kind = ArgValue::Kind::Tensor;
  args[1].tensor.data = p;
  args[1].tensor.dtype = dtype::Float16;
  args[1].tensor.ndim = 1;
  args[1].tensor.shape = pshape;
  std::string why = user_error([&] { k.call(args.data(), args.size(), nullptr); });
  EXPECT_NE(why.find("argument 'P' (parameter 1 of kernel 'f') has dtype float16, expected float32"), std::string::npos)
      << why;
  args[1].tensor.dtype = dtype::Float32;
  k.call(args.data(), args.size(), nullptr);
  EXPECT_EQ(k.slots.at(1).ptr, static_cast<void*>(p));
  // An address: passed through as the tensor's data pointer.
  args[1] = ArgValue{};
  args[1].kind = ArgValue::Kind::Int;
  args[1].i = int64_t(reinterpret_cast<uintptr_t>(p + 2));
  k.slots.clear();
  k.call(args.data(), args.size(), nullptr);
  EXPECT_EQ(k.slots.at(1).ptr, static_cast<void*>(p + 2));
  args[1].i = 0;
  why = user_error([&] { k.call(args.data(), args.size(), nullptr); });
  EXPECT_NE(why.find("argument 'P' (parameter 1 of kernel 'f') is the null address"), std::string::npos) << why;
}

TEST(PointerParam, AnAddressNeedsItsShapeFromOtherArguments) {
  RecordingKernel k(KernelSignature::from(function_with_pointer(true, true)), Target::parse("cpu"), "", "");
  float p[8] = {}, x[4] = {};
  int64_t xshape[1] = {4};
  std::vector<ArgValue> args(3);
  args[0].kind = ArgValue::Kind::Int;
  args[0].i = 8;
  args[1].kind = ArgValue::Kind::Int;
  args[1].i = int64_t(reinterpret_cast<uintptr_t>(p));
  args[2].kind = ArgValue::Kind::Tensor;
  args[2].tensor.data = x;
  args[2].tensor.dtype = dtype::Float32;
  args[2].tensor.ndim = 1;
  args[2].tensor.shape = xshape;
  std::string why = user_error([&] { k.call(args.data(), args.size(), nullptr); });
  EXPECT_NE(why.find("argument 'P' of kernel 'f' is an address, but the shape (m,) of the tensor the kernel makes "
                     "of it has 'm', which no other argument gives; pass the tensor itself"),
            std::string::npos)
      << why;
}

}  // namespace
}  // namespace tl
