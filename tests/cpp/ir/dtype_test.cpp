#include <gtest/gtest.h>

#include "ir/dtype.h"
#include "support/error.h"

namespace tl {

TEST(DataType, ParsesNamesAliasesAndLanes) {
  EXPECT_EQ(DataType::from_string("float16"), dtype::Float16);
  EXPECT_EQ(DataType::from_string("half"), dtype::Float16);
  EXPECT_EQ(DataType::from_string("float32x4"), dtype::Float32.with_lanes(4));
  EXPECT_EQ(dtype::Float32.with_lanes(4).name(), "float32x4");
  EXPECT_EQ(dtype::Float8E4M3FN.bits(), 8);
  EXPECT_EQ(dtype::Int4.bytes(), 1);
  EXPECT_EQ(dtype::Float16.with_lanes(8).bytes(), 16);
  EXPECT_TRUE(dtype::BFloat16.is_low_precision_float());
}

TEST(DataType, UnknownNameQuotesIt) {
  try {
    DataType::from_string("float17");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'float17'"), std::string::npos);
  }
}

}  // namespace tl
