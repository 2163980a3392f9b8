// Workspaces (T.alloc_global): the builder puts them after every other parameter
// and refuses them inside a kernel or with a size no argument binds; the signature's
// text form keeps them; the runtime sizes them from the other arguments and names
// them in its errors.
#include <gtest/gtest.h>

#include "builder/builder.h"
#include "ir/op.h"
#include "runtime/kernel.h"
#include "support/error.h"

namespace tl {
namespace {

class NoLaunchKernel : public Kernel {
 public:
  using Kernel::Kernel;

 protected:
  void launch(size_t, const KernelArg*, size_t, const std::array<int64_t, 3>&, int, void*) const override {}
};

// X(n) float32, then a workspace W(2, n - 3) declared before a scalar parameter `s`
// (as an eager function declares its parameters in the body).
PrimFunc function_with_workspace() {
  FunctionBuilder b("f", SourceSpan{intern_file("user.py"), 1});
  Var n = b.dynamic_var("n");
  Buffer x = b.tensor_param("X", {n}, dtype::Float32);
  b.set_span(SourceSpan{intern_file("user.py"), 3});
  Buffer w = b.workspace("W", {int_imm(2), sub(n, int_imm(3))}, dtype::Float16);
  b.scalar_param("s", dtype::Float32);
  b.kernel({int_imm(1)}, {1}, [&](KernelVars) {
    b.store(w, {int_imm(0), int_imm(0)}, cast(dtype::Float16, buffer_load(x, {int_imm(0)})));
  });
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

TEST(Workspace, ComesLastAndSurvivesTheTextForm) {
  PrimFunc f = function_with_workspace();
  ASSERT_EQ(f->params.size(), 3u);
  EXPECT_EQ(f->params[0].name, "X");
  EXPECT_EQ(f->params[1].name, "s");
  EXPECT_EQ(f->params[2].name, "W");
  EXPECT_TRUE(f->params[2].workspace);
  KernelSignature sig = KernelSignature::from(f);
  EXPECT_EQ(sig.num_visible_params(), 2u);
  std::string text = sig.serialize();
  EXPECT_NE(text.find("workspace W\n"), std::string::npos) << text;
  KernelSignature back = KernelSignature::parse(text);
  EXPECT_TRUE(back.params[2].workspace);
  EXPECT_FALSE(back.params[0].workspace);
  EXPECT_EQ(back.num_visible_params(), 2u);
  // A workspace record that follows no tensor of its name is malformed.
  std::string misplaced = text;
  misplaced.replace(misplaced.find("workspace W"), 11, "workspace X");
  EXPECT_THROW(KernelSignature::parse(misplaced), UserError);
}

TEST(Workspace, SizedFromTheOtherArguments) {
  NoLaunchKernel k(KernelSignature::from(function_with_workspace()), Target::parse("cpu"), "", "");
  float x[10] = {};
  int64_t shape[1] = {10};
  std::vector<ArgValue> args(3);
  args[0].kind = ArgValue::Kind::Tensor;
  args[0].tensor.data = x;
  args[0].tensor.dtype = dtype::Float32;
  args[0].tensor.ndim = 1;
  args[0].tensor.shape = shape;
  args[1].kind = ArgValue::Kind::Float;
  args[1].f = 1.5;
  auto shapes = k.output_shapes(args);
  ASSERT_TRUE(shapes[2].has_value());
  EXPECT_EQ(*shapes[2], (std::vector<int64_t>{2, 7}));
  EXPECT_FALSE(shapes[0].has_value());
  // n = 2 would give the workspace -1 columns.
  shape[0] = 2;
  std::string why = user_error([&] { k.output_shapes(args); });
  EXPECT_NE(why.find("the workspace 'W' (T.alloc_global) of kernel 'f' would have -1 elements in dimension 1"),
            std::string::npos)
      << why;
}

TEST(Workspace, RefusedInsideAKernelAtItsLine) {
  FunctionBuilder b("g");
  Buffer x = b.tensor_param("X", {int_imm(4)}, dtype::Float32);
  b.begin_kernel({int_imm(1)}, {1});
  b.set_span(SourceSpan{intern_file("user.py"), 7});
  std::string why = user_error([&] { b.workspace("W", {int_imm(4)}, dtype::Float32); });
  EXPECT_NE(why.find("user.py:7"), std::string::npos) << why;
  EXPECT_NE(why.find("T.alloc_global('W') is inside a `with T.Kernel(...)` block"), std::string::npos) << why;
  (void)x;
}

TEST(Workspace, ASizeNoArgumentBindsIsRefusedAtItsLine) {
  FunctionBuilder b("h");
  Var n = b.dynamic_var("n");
  Var m = b.dynamic_var("m");
  b.tensor_param("X", {mul(n, int_imm(2))}, dtype::Float32);  // n is not bound by X: 2*n is only checked
  b.tensor_param("Y", {m}, dtype::Float32);
  b.set_span(SourceSpan{intern_file("user.py"), 9});
  b.workspace("W", {m, n}, dtype::Float32);
  b.kernel({int_imm(1)}, {1}, [&](KernelVars) {});
  std::string why = user_error([&] { b.finish(); });
  EXPECT_NE(why.find("user.py:9"), std::string::npos) << why;
  EXPECT_NE(why.find("dimension 1 of workspace 'W' is 'n', and no argument binds 'n'"), std::string::npos) << why;
}

TEST(Workspace, NamesStayUniqueAmongParameters) {
  FunctionBuilder b("u");
  b.tensor_param("A", {int_imm(4)}, dtype::Float32);
  Buffer w = b.workspace("A", {int_imm(4)}, dtype::Float32);
  Buffer w2 = b.workspace("A", {int_imm(4)}, dtype::Float32);
  EXPECT_EQ(w->name, "A_1");
  EXPECT_EQ(w2->name, "A_2");
}

}  // namespace
}  // namespace tl
