// Internal errors name the compiler's source file as the repository does, never the
// build machine's path to it (a relative build tree or an absolute checkout); what the
// machine lacks is an EnvironmentError, which a handler of UserError also catches.
#include "support/error.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tl/device_dir.h"

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
  EXPECT_NE(internal_message("../../src/driver/compile.cpp").find("check failed [src/driver/compile.cpp:42]"),
            std::string::npos);
  EXPECT_NE(internal_message("/home/builder/work/tilelang/src/ir/op.cpp").find("check failed [src/ir/op.cpp:42]"),
            std::string::npos);
  EXPECT_EQ(internal_message("/home/builder/work/tilelang/src/ir/op.cpp").find("/home/builder"), std::string::npos);
}

// What the machine lacks is an EnvironmentError: a UserError with no source line, so a
// handler of UserError still catches it, and DeviceDirError is one kind of it.
TEST(EnvironmentError, IsAUserErrorWithoutASpan) {
  try {
    throw_environment_error("the cuda target needs NVRTC (libnvrtc.so), which was not found");
  } catch (const UserError& e) {
    EXPECT_NE(dynamic_cast<const EnvironmentError*>(&e), nullptr);
    EXPECT_FALSE(e.span().defined());
    EXPECT_STREQ(e.what(), "the cuda target needs NVRTC (libnvrtc.so), which was not found");
    EXPECT_EQ(e.bare_message(), e.what());
    return;
  }
  ADD_FAILURE() << "nothing caught";
}

TEST(EnvironmentError, DeviceDirErrorIsOne) {
  // TILELANG_DEVICE_DIR, when set, wins over set_device_include_dir (which then checks nothing).
  const char* set = std::getenv("TILELANG_DEVICE_DIR");
  std::string saved = set ? set : "";
  unsetenv("TILELANG_DEVICE_DIR");
  try {
    set_device_include_dir("/no/such/dir");
  } catch (const EnvironmentError& e) {
    if (set) setenv("TILELANG_DEVICE_DIR", saved.c_str(), 1);
    EXPECT_NE(dynamic_cast<const DeviceDirError*>(&e), nullptr);
    EXPECT_NE(std::string(e.what()).find("/no/such/dir does not hold the tilelang device headers"), std::string::npos);
    return;
  }
  if (set) setenv("TILELANG_DEVICE_DIR", saved.c_str(), 1);
  ADD_FAILURE() << "nothing caught";
}

TEST(UserError, ShowsTheSourceLineUnderTheFirstLineAndNotesAfterIt) {
  std::string path = testing::TempDir() + "tl_error_snippet.py";
  {
    std::ofstream f(path);
    f << "import x\n\n    buf = alloc(4)\n        use(buf)\n";
  }
  SourceSpan use{intern_file(path), 4}, alloc{intern_file(path), 3};
  EXPECT_EQ(source_snippet(use), " --> " + path + ":4:9\n  |\n4 |         use(buf)\n  |");
  EXPECT_EQ(source_snippet(SourceSpan{intern_file(path), 2}), "");  // a blank line
  EXPECT_EQ(source_snippet(SourceSpan{intern_file(path), 9}), "");  // past the end
  EXPECT_EQ(source_snippet(SourceSpan{intern_file(path + ".missing"), 1}), "");
  UserError e(use, "bad use" + note_at(alloc, "'buf' is allocated here"));
  EXPECT_EQ(std::string(e.what()),
            path + ":4: bad use\n" + source_snippet(use) + "\nnote: 'buf' is allocated here\n" + source_snippet(alloc));
  EXPECT_EQ(e.bare_message(), "bad use" + note_at(alloc, "'buf' is allocated here"));
  // Without a readable file the location stays on the message's line, the note names it.
  SourceSpan gone{intern_file(path + ".missing"), 7};
  EXPECT_EQ(std::string(UserError(gone, "bad" + note_at(gone, "here")).what()),
            path + ".missing:7: bad\nnote: here (" + path + ".missing:7)");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tl
