// TMA maps of a launch: the TmaMapSpec record round-trips through its text form and
// the signature's, malformed records are errors that quote them, and TmaLaunchMaps
// encodes a map from the tensor argument (emulator encoding: dims and byte strides
// innermost first, the box, the swizzle), keeps it per tensor and names the
// argument when TMA cannot describe it. A launch's thread block cluster and its
// need of a cooperative launch (T.sync_grid) travel with the signature text too.
#include "runtime/tma_launch.h"

#include <gtest/gtest.h>

#include <cstring>

#include "../../../device/common/tma_map.h"
#include "support/error.h"

namespace tl {
namespace {

TmaMapSpec spec() {
  TmaMapSpec m;
  m.param = 1;
  m.dtype = dtype::BFloat16;
  m.box = {64, 32, 1};
  m.swizzle_bytes = 128;
  m.dynamic_dims = 5;
  return m;
}

TEST(TmaMapSpec, RoundTripsThroughItsRecord) {
  TmaMapSpec m = spec();
  EXPECT_EQ(m.str(), "tma 1 bfloat16 3 64,32,1 128 5");
  TmaMapSpec back = TmaMapSpec::parse(m.str());
  EXPECT_EQ(back.param, 1);
  EXPECT_EQ(back.dtype, dtype::BFloat16);
  EXPECT_EQ(back.box, m.box);
  EXPECT_EQ(back.swizzle_bytes, 128);
  EXPECT_EQ(back.dynamic_dims, 5u);
}

TEST(TmaMapSpec, MalformedRecordsAreErrors) {
  for (const char* bad : {"tma 1 bfloat16 2 64,32,1 128 0", "tma 1 bfloat17 1 64 0 0", "tma 1 float16 1 64 48 0",
                          "tma 1 float16 1 6x 0 0", "tmx 1 float16 1 64 0 0", "tma 1 float16"}) {
    try {
      TmaMapSpec::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

KernelSignature signature_with_map(const TmaMapSpec& m) {
  KernelSignature sig;
  sig.name = "k";
  Var rows("rows", dtype::Int64);
  sig.params.push_back(Param{"A", Buffer::make("A", dtype::Float32, {int_imm(4)}, Scope::Global), {}});
  sig.params.push_back(Param{"B", Buffer::make("B", m.dtype, {rows, int_imm(40), int_imm(64)}, Scope::Global), {}});
  sig.dynamic_vars.push_back(rows);
  sig.launches.push_back(LaunchSpec{{int_imm(1)}, {128}, {m}, {}, {}});
  return sig;
}

TEST(TmaMapSpec, TravelsWithTheSignatureText) {
  KernelSignature sig = signature_with_map(spec());
  KernelSignature back = KernelSignature::parse(sig.serialize());
  ASSERT_EQ(back.launches.size(), 1u);
  ASSERT_EQ(back.launches[0].tma_maps.size(), 1u);
  EXPECT_EQ(back.launches[0].tma_maps[0].str(), spec().str());
  EXPECT_EQ(back.num_slots(), back.num_args() + 1);
}

TEST(KernelSignature, ClusterTravelsWithTheSignatureText) {
  KernelSignature sig = signature_with_map(spec());
  sig.launches[0].cluster = {2, 1, 1};
  KernelSignature back = KernelSignature::parse(sig.serialize());
  ASSERT_EQ(back.launches.size(), 1u);
  EXPECT_EQ(back.launches[0].cluster, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_TRUE(KernelSignature::parse(signature_with_map(spec()).serialize()).launches[0].cluster.empty());
}

TEST(KernelSignature, CooperativeLaunchTravelsWithTheSignatureText) {
  KernelSignature sig = signature_with_map(spec());
  sig.launches[0].cooperative = true;
  KernelSignature back = KernelSignature::parse(sig.serialize());
  ASSERT_EQ(back.launches.size(), 1u);
  EXPECT_TRUE(back.launches[0].cooperative);
  EXPECT_EQ(back.launches[0].tma_maps.size(), 1u);
  EXPECT_FALSE(KernelSignature::parse(signature_with_map(spec()).serialize()).launches[0].cooperative);
}

TEST(TmaLaunchMaps, EncodesFromTheTensorAndKeepsItPerTensor) {
  KernelSignature sig = signature_with_map(spec());
  TmaLaunchMaps maps(sig, sig.launches[0].tma_maps, /*emulate=*/true);
  alignas(64) static uint16_t data[2][3][40][64];
  int64_t shape[3] = {3, 40, 64};
  ArgValue args[2];
  args[1].kind = ArgValue::Kind::Tensor;
  args[1].tensor = TensorArg{&data[0], dtype::BFloat16, 3, shape, nullptr};
  TensorMapSlot out[1];
  maps.encode(args, out);
  EmuTensorMap m;
  std::memcpy(&m, out[0].bytes, sizeof m);
  EXPECT_EQ(m.magic, kEmuTensorMapMagic);
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.swizzle_bytes, 128);
  EXPECT_EQ(m.base, uint64_t(uintptr_t(&data[0])));
  EXPECT_EQ(m.dims[0], 64u);
  EXPECT_EQ(m.dims[1], 40u);
  EXPECT_EQ(m.dims[2], 3u);
  EXPECT_EQ(m.strides[1], 128u);
  EXPECT_EQ(m.strides[2], 40u * 128u);
  EXPECT_EQ(m.box[0], 64);
  EXPECT_EQ(m.box[1], 32);
  // Another tensor of the same shape: a map of its own address.
  args[1].tensor.data = &data[1];
  maps.encode(args, out);
  std::memcpy(&m, out[0].bytes, sizeof m);
  EXPECT_EQ(m.base, uint64_t(uintptr_t(&data[1])));
  // Strides given explicitly (a view with a padded row of 72 elements).
  int64_t strides[3] = {40 * 72, 72, 1};
  int64_t narrow[3] = {2, 40, 64};
  args[1].tensor.shape = narrow;
  args[1].tensor.strides = strides;
  maps.encode(args, out);
  std::memcpy(&m, out[0].bytes, sizeof m);
  EXPECT_EQ(m.strides[1], 144u);
  EXPECT_EQ(m.dims[2], 2u);
}

TEST(TmaLaunchMaps, ATensorTmaCannotDescribeNamesTheArgument) {
  KernelSignature sig = signature_with_map(spec());
  TmaLaunchMaps maps(sig, sig.launches[0].tma_maps, /*emulate=*/true);
  alignas(64) static uint16_t data[3 * 40 * 64];
  int64_t shape[3] = {3, 40, 60};  // rows of 120 bytes
  ArgValue args[2];
  args[1].kind = ArgValue::Kind::Tensor;
  args[1].tensor = TensorArg{data, dtype::BFloat16, 3, shape, nullptr};
  TensorMapSlot out[1];
  try {
    maps.encode(args, out);
    ADD_FAILURE() << "a 120-byte row stride was accepted";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("argument 'B' (parameter 1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("multiple of 16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tl.disable_tma_lower"), std::string::npos) << msg;
  }
}

TEST(TmaLaunchMaps, ARecordThatDoesNotFitTheParametersIsRefused) {
  TmaMapSpec m = spec();
  m.param = 0;  // A is float32 of rank 1
  KernelSignature sig = signature_with_map(m);
  EXPECT_THROW(TmaLaunchMaps(sig, sig.launches[0].tma_maps, true), UserError);
}

}  // namespace
}  // namespace tl
