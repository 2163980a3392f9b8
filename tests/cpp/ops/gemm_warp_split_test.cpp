// gemm_warp_split: how many of a gemm's warps go along M for each GemmWarpPolicy.
#include <gtest/gtest.h>

#include "ops/tile_op.h"

namespace tl {
namespace {

constexpr int64_t kSquare = 0, kFullRow = 1, kFullCol = 2;

TEST(GemmWarpSplit, SquareKeepsWarpTilesSquare) {
  EXPECT_EQ(gemm_warp_split(128, 128, 4, kSquare), 2);  // 64 x 64 per warp
  EXPECT_EQ(gemm_warp_split(64, 512, 8, kSquare), 1);   // 64 x 64 per warp
  EXPECT_EQ(gemm_warp_split(64, 32, 8, kSquare), 4);    // 16 x 16 per warp
}

TEST(GemmWarpSplit, FullRowAndFullColWhenTheyFit) {
  EXPECT_EQ(gemm_warp_split(128, 128, 4, kFullRow), 4);
  EXPECT_EQ(gemm_warp_split(128, 128, 4, kFullCol), 1);
}

TEST(GemmWarpSplit, FullRowTakesTheMostWarpsAlongMThatFit) {
  // 64 rows cannot give 8 warps 16 rows each: 4 along M, whatever N is, so two
  // gemms of 64 rows split their rows alike (row vectors shared by both).
  EXPECT_EQ(gemm_warp_split(64, 32, 8, kFullRow), 4);
  EXPECT_EQ(gemm_warp_split(64, 512, 8, kFullRow), 4);
  EXPECT_EQ(gemm_warp_split(32, 32, 4, kFullRow), 2);
  EXPECT_EQ(gemm_warp_split(32, 64, 4, kFullRow), 2);
}

TEST(GemmWarpSplit, FullColTakesTheFewestWarpsAlongMThatFit) {
  // 64 columns give 8 warps 8 each: every warp along N.
  EXPECT_EQ(gemm_warp_split(64, 64, 8, kFullCol), 1);
  // 16 columns over 8 warps would be 2 each: the fewest along M that fit is 4.
  EXPECT_EQ(gemm_warp_split(64, 16, 8, kFullCol), 4);
}

TEST(GemmWarpSplit, NoSplitFits) {
  EXPECT_EQ(gemm_warp_split(8, 8, 4, kSquare), 0);
  EXPECT_EQ(gemm_warp_split(8, 8, 4, kFullRow), 0);
  EXPECT_EQ(gemm_warp_split(8, 8, 4, kFullCol), 0);
}

}  // namespace
}  // namespace tl
