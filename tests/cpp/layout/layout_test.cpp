// Layout::same_placement: the passes compare a tile's layout with the one its readers
// expect by where the layouts put the elements, not by their printed form.
#include <gtest/gtest.h>

#include "arith/simplify.h"
#include "ir/expr_ops.h"
#include "layout/layout.h"

namespace tl {
namespace {

TEST(Layout, SamePlacementIsTheSwizzleNotTheObject) {
  // 64 half columns: 128-byte rows, chunk ^= row % 8 either way it is built.
  auto sw = Layout::swizzle(64, 2);
  auto xor_form = Layout::xor_chunks(64, 2, 0, 7);
  ASSERT_TRUE(sw && xor_form);
  EXPECT_TRUE(sw->same_placement(*Layout::swizzle(64, 2)));
  EXPECT_TRUE(sw->same_placement(*xor_form));
  // Rows of 256 bytes: the wgmma form cuts them into 128-byte column blocks.
  auto wide = Layout::swizzle(128, 2), wide_wgmma = Layout::wgmma_swizzle(128, 2);
  ASSERT_TRUE(wide && wide_wgmma);
  EXPECT_FALSE(wide->same_placement(*wide_wgmma));
  EXPECT_FALSE(sw->same_placement(*Layout::swizzle(32, 2)));
  // Whatever the comparison says, the element offsets agree.
  Buffer b = Buffer::make("t", dtype::Float16, {int_imm(16), int_imm(64)}, Scope::Shared, {}, {});
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 64; c += 8) {
      auto x = as_const_int(simplify(sw->offset(b, {int_imm(r), int_imm(c)})));
      auto y = as_const_int(simplify(xor_form->offset(b, {int_imm(r), int_imm(c)})));
      ASSERT_TRUE(x && y);
      EXPECT_EQ(*x, *y) << "row " << r << " col " << c;
    }
}

}  // namespace
}  // namespace tl
