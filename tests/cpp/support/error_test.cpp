// Internal errors name the compiler's source file as the repository does, never the
// build machine's path to it (a relative build tree or an absolute checkout).
#include "support/error.h"

#include <gtest/gtest.h>

namespace tl {
namespace {

std::string internal_message(const char* file) {
  try {
    throw_internal_error(file, 42, "check failed");
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(InternalError, NamesTheRepositoryPathOfTheSource) {
  EXPECT_NE(internal_message("../../src/runtime/compile.cpp").find("check failed [src/runtime/compile.cpp:42]"),
            std::string::npos);
  EXPECT_NE(internal_message("/home/builder/work/tilelang/src/ir/op.cpp").find("check failed [src/ir/op.cpp:42]"),
            std::string::npos);
  EXPECT_EQ(internal_message("/home/builder/work/tilelang/src/ir/op.cpp").find("/home/builder"), std::string::npos);
}

}  // namespace
}  // namespace tl
