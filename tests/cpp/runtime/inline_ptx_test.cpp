// emulate_inline_ptx: which statements it rewrites, that the source keeps its lines,
// and what stands in for a statement the emulator cannot run. The instructions'
// results are checked bit for bit by tests/python/test_inline_ptx.py.
#include "driver/cuda/inline_ptx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace tl {
namespace {

size_t lines(const std::string& s) {
  return size_t(std::count(s.begin(), s.end(), '\n'));
}

TEST(InlinePtx, SourceWithoutAsmIsUnchanged) {
  const std::string src =
      "// asm volatile(\"lop3.b32 %0;\") in a comment\n"
      "const char* s = \"asm(\\\"x\\\")\";\n"
      "int asm_count = 0; p->asm_field = 1;\n";
  EXPECT_EQ(emulate_inline_ptx(src), src);
}

TEST(InlinePtx, StatementBecomesCodeOnItsOwnLines) {
  const std::string src =
      "int f(unsigned a) {\n"
      "  unsigned d;\n"
      "  asm volatile(\"lop3.b32 %0, %1, %2, %3, 0xea;\\n\"\n"
      "               : \"=r\"(d)\n"
      "               : \"r\"(a), \"n\"(0xff), \"r\"(a >> 4));\n"
      "  return d;\n"
      "}\n";
  const std::string out = emulate_inline_ptx(src);
  EXPECT_EQ(lines(out), lines(src));
  EXPECT_EQ(out.find("asm"), std::string::npos) << out;
  EXPECT_NE(out.find("tl_ptx_0 = tlp::lop3<tlp::Ty::b32>(tl_ptx_1, tl_ptx_2, tl_ptx_3, 234ull"), std::string::npos)
      << out;
  EXPECT_NE(out.find("tlp::u64 tl_ptx_3 = tlp::bits(a >> 4);"), std::string::npos) << out;
  EXPECT_NE(out.find("tlp::store(tl_ptx_0_out, tl_ptx_0);"), std::string::npos) << out;
  // The lines after the statement are where they were.
  EXPECT_EQ(out.substr(out.rfind("  return d;")), "  return d;\n}\n");
}

TEST(InlinePtx, MacroContinuationsAreKept) {
  const std::string src =
      "#define ADD(d, a, b) \\\n"
      "  asm(\"add.u32 %0, %1, %2;\" \\\n"
      "      : \"=r\"(d) : \"r\"(a), \"r\"(b))\n"
      "int x;\n";
  const std::string out = emulate_inline_ptx(src);
  EXPECT_EQ(lines(out), lines(src));
  EXPECT_NE(out.find("tlp::add<tlp::Ty::u32>(tl_ptx_1, tl_ptx_2)"), std::string::npos) << out;
  // The statement's continued line still ends in a backslash, its last one does not.
  EXPECT_NE(out.find(") \\\n  { namespace tlp"), std::string::npos) << out;
  EXPECT_NE(out.find("} \\\n\nint x;\n"), std::string::npos) << out;
}

TEST(InlinePtx, ScopesRegistersGuardsAndVectors) {
  const std::string src =
      "asm(\"{ .reg .pred p; .reg .b16 h<2>; setp.ne.u32 p, %1, 0; @!p mov.b32 {h0, h1}, %1;"
      " mov.b32 %0, {h1, h0}; }\" : \"=r\"(d) : \"r\"(a));\n";
  const std::string out = emulate_inline_ptx(src);
  EXPECT_NE(out.find("{ tlp::u64 tl_ptx_r_p = 0; tlp::u64 tl_ptx_r_h0 = 0; tlp::u64 tl_ptx_r_h1 = 0;"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("if (!(tl_ptx_r_p & 1)) { tlp::u64 tl_v = tl_ptx_1;"), std::string::npos) << out;
  EXPECT_NE(out.find("tl_ptx_0 = tlp::pack<tlp::Ty::b32>({tl_ptx_r_h1, tl_ptx_r_h0});"), std::string::npos) << out;
}

TEST(InlinePtx, UnsupportedStatementBecomesACompileError) {
  // Stops the build only where the preprocessor keeps it: a pragma, not a C++ error here.
  const std::string src =
      "\n"
      "asm volatile(\"ld.global.u32 %0, [%1];\" : \"=r\"(d) : \"l\"(p));\n";
  const std::string out = emulate_inline_ptx(src);
  EXPECT_EQ(lines(out), lines(src));
  EXPECT_NE(out.find("_Pragma(\"GCC error \\\"inline PTX at line 2 of the CUDA source: the instruction "
                     "`ld.global.u32`"),
            std::string::npos)
      << out;
  for (const char* ptx : {"add.rz.f32 %0, %1, %1;", "L1: mov.u32 %0, %1;", "bar.sync 1, 64;", "mov.u32 %0, %%nctaid.x;",
                          "add.u32 %0, %1, %9;"}) {
    const std::string one = std::string("asm(\"") + ptx + "\" : \"=r\"(d) : \"r\"(a));\n";
    EXPECT_NE(emulate_inline_ptx(one).find("_Pragma(\"GCC error"), std::string::npos) << ptx;
  }
}

TEST(InlinePtx, OperandConstraints) {
  const std::string src =
      "asm(\"add.u32 %0, %0, %[b]; mov.b64 %1, %2;\" : \"+r\"(x), \"=&l\"(y) : \"l\"(z), [b] \"r\"(w));\n";
  const std::string out = emulate_inline_ptx(src);
  EXPECT_NE(out.find("auto& tl_ptx_0_out = (x); tlp::u64 tl_ptx_0 = tlp::bits(tl_ptx_0_out);"), std::string::npos)
      << out;
  EXPECT_NE(out.find("auto& tl_ptx_1_out = (y); tlp::u64 tl_ptx_1 = 0;"), std::string::npos) << out;
  EXPECT_NE(out.find("tl_ptx_0 = tlp::add<tlp::Ty::u32>(tl_ptx_0, tl_ptx_3);"), std::string::npos) << out;
  // A memory constraint is not emulated.
  EXPECT_NE(emulate_inline_ptx("asm(\"mov.u32 %0, 1;\" : \"=m\"(x));").find("_Pragma"), std::string::npos);
}

}  // namespace
}  // namespace tl
