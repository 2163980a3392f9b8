// The runtime's argument checks on both of its paths (the fast check and the slow
// one that explains a refusal), against a kernel whose launch only records what it
// would run: read-only tensors for written parameters, relabelled element sizes,
// integers outside their dtype's range, a scalar that disagrees with the shape
// that bound its var first, and misaligned data for CUDA kernels. The written-parameter record travels with the text
// form.
#include <gtest/gtest.h>

#include "runtime/kernel.h"
#include "support/error.h"

namespace tl {
namespace {

class RecordingKernel : public Kernel {
 public:
  using Kernel::Kernel;
  mutable std::vector<int64_t> slots;
  mutable int launches = 0;

 protected:
  void launch(size_t, const KernelArg* args, size_t num_slots, const std::array<int64_t, 3>&, int,
              void*) const override {
    ++launches;
    slots.clear();
    for (size_t i = 0; i < num_slots; ++i) slots.push_back(args[i].i);
  }
};

// A(n) float32 read, B(n) float32 written, a scalar `s` of `scalar_dtype`; `n` is
// the scalar itself when `scalar_is_n`.
KernelSignature signature(DataType scalar_dtype, bool scalar_is_n = false) {
  KernelSignature sig;
  sig.name = "k";
  Var n("n", dtype::Int32);
  Var s = scalar_is_n ? n : Var("s", scalar_dtype);
  sig.params.push_back(Param{"A", Buffer::make("A", dtype::Float32, {n}, Scope::Global), {}});
  sig.params.push_back(Param{"B", Buffer::make("B", dtype::Float32, {n}, Scope::Global), {}});
  sig.params.push_back(Param{"s", {}, s});
  sig.written = {false, true, false};
  if (!scalar_is_n) sig.dynamic_vars.push_back(n);
  sig.launches.push_back(LaunchSpec{{int_imm(1)}, {1}, {}, {}, {}});
  return sig;
}

struct Args {
  float a[4] = {1, 2, 3, 4}, b[4] = {};
  int64_t shape[1] = {4};
  std::vector<ArgValue> values{3};
  explicit Args(int64_t scalar) {
    for (int i = 0; i < 2; ++i) {
      values[i].kind = ArgValue::Kind::Tensor;
      values[i].tensor.data = i ? b : a;
      values[i].tensor.dtype = dtype::Float32;
      values[i].tensor.ndim = 1;
      values[i].tensor.shape = shape;
      values[i].tensor.itemsize = 4;
    }
    values[2].kind = ArgValue::Kind::Int;
    values[2].i = scalar;
  }
};

std::string refusal(const Kernel& k, const std::vector<ArgValue>& args) {
  try {
    k.call(args);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

RecordingKernel make(KernelSignature sig) {
  return RecordingKernel(std::move(sig), Target::parse("cpu"), "", "");
}

TEST(ArgChecks, ReadOnlyTensorOnlyForParametersTheKernelReads) {
  RecordingKernel k = make(signature(dtype::Int32));
  Args ok(7);
  ok.values[0].tensor.readonly = true;  // A is only read
  k.call(ok.values);
  EXPECT_EQ(k.launches, 1);
  Args bad(7);
  bad.values[1].tensor.readonly = true;
  EXPECT_NE(
      refusal(k, bad.values).find("argument 'B' (parameter 1 of kernel 'k') is read-only, but the kernel writes it"),
      std::string::npos);
  EXPECT_EQ(k.launches, 1);
}

TEST(ArgChecks, RelabelledElementSizeIsRefused) {
  RecordingKernel k = make(signature(dtype::Int32));
  Args bad(7);
  bad.values[0].tensor.itemsize = 1;  // four bytes relabelled as four float32
  std::string why = refusal(k, bad.values);
  EXPECT_NE(why.find("argument 'A' (parameter 0 of kernel 'k') is a buffer of 1-byte elements (4 bytes) relabelled as "
                     "float32, whose elements take 4 bytes: the kernel would touch 16 bytes"),
            std::string::npos)
      << why;
  EXPECT_EQ(k.launches, 0);
}

TEST(ArgChecks, IntegerScalarsOutsideTheirDtypeAreRefused) {
  struct Case {
    DataType dtype;
    int64_t value;
    ArgValue::IntRange range;
    const char* message;  // empty: accepted
  };
  const Case cases[] = {
      {dtype::Int32, int64_t(1) << 31, ArgValue::IntRange::Int64,
       "is 2147483648, outside the range [-2147483648, 2147483647] of its dtype int32"},
      {dtype::Int32, -(int64_t(1) << 31), ArgValue::IntRange::Int64, ""},
      {dtype::UInt32, -1, ArgValue::IntRange::Int64, "is -1, outside the range [0, 4294967295] of its dtype uint32"},
      {dtype::UInt8, 256, ArgValue::IntRange::Int64, "is 256, outside the range [0, 255] of its dtype uint8"},
      {dtype::Bool, 2, ArgValue::IntRange::Int64, "is 2, outside the range [0, 1] of its dtype bool"},
      {dtype::UInt64, -1, ArgValue::IntRange::UInt64, ""},  // 2**64 - 1
      {dtype::Int64, -1, ArgValue::IntRange::UInt64,
       "is 18446744073709551615, outside the range [-9223372036854775808, 9223372036854775807]"},
      {dtype::UInt64, 0, ArgValue::IntRange::Wider, "is an integer wider than 64 bits, outside the range"},
      {dtype::Int64, -5, ArgValue::IntRange::Int64, ""},
  };
  for (const Case& c : cases) {
    RecordingKernel k = make(signature(c.dtype));
    Args args(c.value);
    args.values[2].int_range = c.range;
    std::string why = refusal(k, args.values);
    if (!*c.message) {
      EXPECT_EQ(why, "") << c.dtype.name() << " " << c.value;
      ASSERT_EQ(k.launches, 1);
      EXPECT_EQ(k.slots[2], c.value);
      continue;
    }
    EXPECT_NE(why.find(str_cat("argument 's' (parameter 2 of kernel 'k') ", c.message)), std::string::npos) << why;
    EXPECT_EQ(k.launches, 0);
  }
}

TEST(ArgChecks, ScalarMustAgreeWithTheShapeThatBoundItsVar) {
  RecordingKernel k = make(signature(dtype::Int32, /*scalar_is_n=*/true));
  Args ok(4);
  k.call(ok.values);
  EXPECT_EQ(k.launches, 1);
  Args bad(1000000);  // would let the kernel loop far past A and B
  std::string why = refusal(k, bad.values);
  EXPECT_NE(why.find("argument 's' (parameter 2 of kernel 'k') is 1000000, but 'n' was bound to 4 by the shape"),
            std::string::npos)
      << why;
  EXPECT_EQ(k.launches, 1);
}

TEST(ArgChecks, SymbolicDimOutsideItsDtypeIsRefused) {
  RecordingKernel k = make(signature(dtype::Int32));
  Args bad(7);
  bad.shape[0] = int64_t(1) << 32;  // never launched: the data is not touched
  std::string why = refusal(k, bad.values);
  EXPECT_NE(why.find("dimension 0 is 4294967296, outside the range [-2147483648, 2147483647] of 'n' (int32)"),
            std::string::npos)
      << why;
  EXPECT_EQ(k.launches, 0);
}

TEST(ArgChecks, CudaKernelsRefuseMisalignedData) {
  RecordingKernel k(signature(dtype::Int32), Target::parse("cuda -arch=sm_80"), "", "");
  alignas(16) float a[8] = {}, b[8] = {};
  Args args(7);
  for (int i = 0; i < 2; ++i) args.values[i].tensor.device_type = int32_t(DeviceType::CUDA);
  args.values[0].tensor.data = a;
  args.values[1].tensor.data = b;
  k.call(args.values);  // never touched: the launch only records
  EXPECT_EQ(k.launches, 1);
  args.values[1].tensor.data = b + 1;
  std::string why = refusal(k, args.values);
  EXPECT_NE(why.find("argument 'B' (parameter 1 of kernel 'k') starts at address 0x"), std::string::npos) << why;
  EXPECT_NE(why.find(", not a multiple of 16 bytes: the cuda -arch=sm_80 kernel may move it in vectors"),
            std::string::npos)
      << why;
  EXPECT_EQ(k.launches, 1);
  // The cpu target's code assumes nothing of the address.
  RecordingKernel cpu = make(signature(dtype::Int32));
  args.values[1].tensor.device_type = args.values[0].tensor.device_type = int32_t(DeviceType::CPU);
  cpu.call(args.values);
  EXPECT_EQ(cpu.launches, 1);
}

TEST(ArgChecks, WrittenParametersSurviveTheTextForm) {
  KernelSignature sig = signature(dtype::Int32);
  std::string text = sig.serialize();
  EXPECT_NE(text.find("readonly A\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("readonly B"), std::string::npos) << text;
  KernelSignature back = KernelSignature::parse(text);
  EXPECT_FALSE(back.writes(0));
  EXPECT_TRUE(back.writes(1));
  EXPECT_FALSE(back.writes(2));
  // A text without the records (written before they existed) counts every tensor as written.
  std::string old = text;
  old.erase(old.find("readonly A\n"), std::string("readonly A\n").size());
  EXPECT_TRUE(KernelSignature::parse(old).writes(0));
  // A record that follows no tensor of its name is malformed.
  std::string misplaced = text;
  misplaced.replace(misplaced.find("readonly A"), 10, "readonly B");
  EXPECT_THROW(KernelSignature::parse(misplaced), UserError);
}

// Only a tensor the signature records as never accessed takes a null pointer (on the
// fast path and the slow one); any other parameter refuses it, naming it.
TEST(ArgChecks, NullPointerOnlyForTensorsTheKernelNeverAccesses) {
  KernelSignature sig = signature(dtype::Int32);
  sig.accessed = {false, true, true};  // A is never accessed
  RecordingKernel k = make(sig);
  Args ok(7);
  ok.values[0] = ArgValue{};
  ok.values[0].kind = ArgValue::Kind::Null;
  k.call(ok.values);
  ASSERT_EQ(k.launches, 1);
  EXPECT_EQ(k.slots[0], 0);  // the null pointer
  EXPECT_EQ(k.slots[3], 4);  // n, bound by B alone
  Args slow(7);
  slow.values[0].kind = ArgValue::Kind::Null;
  slow.values[2].i = int64_t(1) << 40;  // refused by the slow path, after A's null passed its check
  EXPECT_NE(refusal(k, slow.values).find("argument 's'"), std::string::npos);
  for (size_t i : {1, 2}) {
    Args bad(7);
    bad.values[i] = ArgValue{};
    bad.values[i].kind = ArgValue::Kind::Null;
    std::string name = i == 1 ? "B" : "s";
    EXPECT_NE(refusal(k, bad.values)
                  .find(str_cat("argument '", name, "' (parameter ", i, " of kernel 'k') is None; expected a ")),
              std::string::npos)
        << refusal(k, bad.values);
  }
  EXPECT_EQ(k.launches, 1);
  // The record travels with the text form; a text without it counts every tensor as accessed.
  std::string text = sig.serialize();
  EXPECT_NE(text.find("unused A\n"), std::string::npos) << text;
  KernelSignature back = KernelSignature::parse(text);
  EXPECT_FALSE(back.accesses(0));
  EXPECT_TRUE(back.accesses(1));
  EXPECT_TRUE(back.accesses(2));
  std::string old = text;
  old.erase(old.find("unused A\n"), std::string("unused A\n").size());
  EXPECT_TRUE(KernelSignature::parse(old).accesses(0));
  std::string misplaced = text;
  misplaced.replace(misplaced.find("unused A"), 8, "unused B");
  EXPECT_THROW(KernelSignature::parse(misplaced), UserError);
}

}  // namespace
}  // namespace tl
