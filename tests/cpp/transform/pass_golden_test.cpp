// Golden tests of the lowering pipeline, pass by pass: small kernels written with the
// builder are lowered for each target family, and the printed IR after every pass is
// compared with a checked-in file, tests/cpp/transform/golden/<kernel>.<target>.txt,
// one section per pass ("# after <pass>", or "# after <pass>: unchanged" when the pass
// left the function as it was). A failure names the pass whose output moved.
//
// After a deliberate change, regenerate the files and review their diff:
//   TL_UPDATE_GOLDEN=1 build/dev/tl_tests --gtest_filter='PassGolden*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "builder/builder.h"
#include "ir/attrs.h"
#include "ir/expr_ops.h"
#include "ir/printer.h"
#include "target/target.h"
#include "transform/pipeline.h"

namespace tl {
namespace {

// C[M, N] = A[M, K] @ B[K, N]: float16 tiles of 64x64x32 into a float32 fragment, a
// three-stage pipelined K loop, sizes that leave tails in every dimension.
PrimFunc gemm_kernel() {
  const int64_t M = 300, N = 200, K = 100, BM = 64, BN = 64, BK = 32;
  FunctionBuilder fb("gemm");
  Buffer A = fb.tensor_param("A", {int_imm(M), int_imm(K)}, dtype::Float16);
  Buffer B = fb.tensor_param("B", {int_imm(K), int_imm(N)}, dtype::Float16);
  Buffer C = fb.tensor_param("C", {int_imm(M), int_imm(N)}, dtype::Float32);
  fb.kernel({int_imm((N + BN - 1) / BN), int_imm((M + BM - 1) / BM)}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0], by = kv.blocks[1];
    Buffer As = fb.alloc("A_shared", {int_imm(BM), int_imm(BK)}, dtype::Float16, Scope::SharedDyn);
    Buffer Bs = fb.alloc("B_shared", {int_imm(BK), int_imm(BN)}, dtype::Float16, Scope::SharedDyn);
    Buffer Cl = fb.alloc("C_local", {int_imm(BM), int_imm(BN)}, dtype::Float32, Scope::Fragment);
    fb.fill(BufferRegion::full(Cl), float_imm(0));
    fb.pipelined(int_imm((K + BK - 1) / BK), 3, [&](Var k) {
      fb.copy({A, {by * BM, k * BK}, {}}, {As, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BK)}});
      fb.copy({B, {k * BK, bx * BN}, {}}, {Bs, {int_imm(0), int_imm(0)}, {int_imm(BK), int_imm(BN)}});
      fb.gemm(BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(Cl));
    });
    fb.copy({Cl, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BN)}}, {C, {by * BM, bx * BN}, {}});
  });
  return fb.finish();
}

// T.gemm_sp as python/tilelang/language/sparse.py emits it: A's kept values and
// metadata (int16, four 4-bit codes each) decoded into a dense shared tile, and a
// T.gemm of that tile carrying the kept values and the metadata (kGemmSpDecoded).
// select_gemm_sp runs it on mma.sp on sm_80 and on sm_90a (TMA copies there).
PrimFunc gemm_sp_kernel() {
  const int64_t M = 128, N = 64, K = 128, BM = 64, BN = 64, BK = 64;
  FunctionBuilder fb("gemm_sp");
  Buffer A = fb.tensor_param("A_sparse", {int_imm(M), int_imm(K / 2)}, dtype::Float16);
  Buffer E = fb.tensor_param("E", {int_imm(M), int_imm(K / 16)}, dtype::Int16);
  Buffer B = fb.tensor_param("B", {int_imm(K), int_imm(N)}, dtype::Float16);
  Buffer C = fb.tensor_param("C", {int_imm(M), int_imm(N)}, dtype::Float32);
  fb.kernel({int_imm(N / BN), int_imm(M / BM)}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0], by = kv.blocks[1];
    Buffer As = fb.alloc("A_shared", {int_imm(BM), int_imm(BK / 2)}, dtype::Float16, Scope::SharedDyn);
    Buffer Es = fb.alloc("E_shared", {int_imm(BM), int_imm(BK / 16)}, dtype::Int16, Scope::SharedDyn);
    Buffer Bs = fb.alloc("B_shared", {int_imm(BK), int_imm(BN)}, dtype::Float16, Scope::SharedDyn);
    Buffer Cl = fb.alloc("C_local", {int_imm(BM), int_imm(BN)}, dtype::Float32, Scope::Fragment);
    Buffer Ds = fb.alloc("A_decoded", {int_imm(BM), int_imm(BK)}, dtype::Float16, Scope::SharedDyn);
    fb.fill(BufferRegion::full(Cl), float_imm(0));
    fb.pipelined(int_imm(K / BK), 2, [&](Var k) {
      fb.copy({A, {by * BM, k * (BK / 2)}, {}}, {As, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BK / 2)}});
      fb.copy({E, {by * BM, k * (BK / 16)}, {}}, {Es, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BK / 16)}});
      fb.copy({B, {k * BK, bx * BN}, {}}, {Bs, {int_imm(0), int_imm(0)}, {int_imm(BK), int_imm(BN)}});
      fb.parallel({int_imm(BM), int_imm(BK / 4)}, [&](std::vector<Var> iv) {
        Expr m = iv[0], g = iv[1];
        Expr word = cast(dtype::Int32, buffer_load(Es, {m, floordiv(g, int_imm(4))}));
        Expr code = binary(BinaryOp::BitAnd, binary(BinaryOp::Shr, word, floormod(g, int_imm(4)) * 4), int_imm(15));
        for (int p = 0; p < 4; ++p) {
          Expr first = eq(binary(BinaryOp::BitAnd, code, int_imm(3)), int_imm(p));
          Expr second = eq(binary(BinaryOp::BitAnd, binary(BinaryOp::Shr, code, int_imm(2)), int_imm(3)), int_imm(p));
          Expr v = select(first, buffer_load(As, {m, g * 2}),
                          select(second, buffer_load(As, {m, g * 2 + 1}), make_const(dtype::Float16, 0)));
          fb.store(Ds, {m, g * 4 + p}, v);
        }
      });
      fb.tile_op("gemm",
                 {BufferRegion::full(Ds), BufferRegion::full(Bs), BufferRegion::full(Cl), BufferRegion::full(As),
                  BufferRegion::full(Es)},
                 {}, Attrs{{kGemmSpAttr, int64_t(kGemmSpDecoded)}, {"transpose_E", int64_t(0)}});
    });
    fb.copy({Cl, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BN)}}, {C, {by * BM, bx * BN}, {}});
  });
  return fb.finish();
}

// S[m] = sum over n of X[m, n]: 64 rows per block through shared memory into a
// fragment, reduced over dim 1 into a fragment of 64. `from_shared`: the sum reduced
// straight from the shared tile (on CUDA stage_reduction_sources reads the tile into a
// register fragment first, then lower_fragments reduces it there).
PrimFunc row_sum_of(const char* name, bool from_shared) {
  const int64_t M = 256, N = 128, BM = 64;
  FunctionBuilder fb(name);
  Buffer X = fb.tensor_param("X", {int_imm(M), int_imm(N)}, dtype::Float32);
  Buffer S = fb.tensor_param("S", {int_imm(M)}, dtype::Float32);
  fb.kernel({int_imm(M / BM)}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0];
    Buffer Xs = fb.alloc("X_shared", {int_imm(BM), int_imm(N)}, dtype::Float32, Scope::SharedDyn);
    Buffer Xf = from_shared ? Xs : fb.alloc("X_frag", {int_imm(BM), int_imm(N)}, dtype::Float32, Scope::Fragment);
    Buffer Sf = fb.alloc("S_frag", {int_imm(BM)}, dtype::Float32, Scope::Fragment);
    fb.copy({X, {bx * BM, int_imm(0)}, {}}, {Xs, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(N)}});
    if (!from_shared)
      fb.copy({Xs, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(N)}}, {Xf, {int_imm(0), int_imm(0)}, {}});
    fb.tile_op("reduce", {BufferRegion::full(Xf), BufferRegion::full(Sf)}, {},
               Attrs{{"kind", std::string("sum")}, {"dim", int64_t(1)}, {"clear", int64_t(1)}});
    fb.copy({Sf, {int_imm(0)}, {int_imm(BM)}}, {S, {bx * BM}, {}});
  });
  return fb.finish();
}
PrimFunc row_sum_kernel() {
  return row_sum_of("row_sum", false);
}
PrimFunc shared_row_sum_kernel() {
  return row_sum_of("shared_row_sum", true);
}

// C[i] = A[i] * 2 + B[i] over a dynamic n: a T.Parallel loop of 256 per block with a
// guard for the last block's tail.
PrimFunc axpy_kernel() {
  FunctionBuilder fb("axpy");
  Var n = fb.dynamic_var("n");
  Buffer A = fb.tensor_param("A", {n}, dtype::Float32);
  Buffer B = fb.tensor_param("B", {n}, dtype::Float32);
  Buffer C = fb.tensor_param("C", {n}, dtype::Float32);
  fb.kernel({floordiv(n + 255, int_imm(256))}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0];
    fb.parallel({int_imm(256)}, [&](std::vector<Var> iv) {
      Expr i = bx * 256 + iv[0];
      fb.begin_if(i < n);
      fb.store(C, {i}, buffer_load(A, {i}) * 2.0 + buffer_load(B, {i}));
      fb.end_if();
    });
  });
  return fb.finish();
}

struct Case {
  const char* kernel;
  PrimFunc (*make)();
  const char* target;
};

std::string file_name(const Case& c) {
  std::string t = c.target;
  for (char& ch : t)
    if (ch == ' ' || ch == '=' || ch == '-') ch = '_';
  while (!t.empty() && t.back() == '_') t.pop_back();
  std::string out;
  for (char ch : t)
    if (!(ch == '_' && !out.empty() && out.back() == '_')) out += ch;
  return std::string(TL_GOLDEN_DIR) + "/" + c.kernel + "." + out + ".txt";
}

// (pass, text after it): "unchanged" where the pass returned the same printed IR.
std::vector<std::pair<std::string, std::string>> lower_and_record(const Case& c) {
  std::vector<std::pair<std::string, std::string>> steps;
  std::string previous;
  lower(c.make(), Target::parse(c.target), Attrs{}, [&](const std::string& step, const PrimFunc& after) {
    std::string text = to_string(after);
    steps.emplace_back(step, text == previous ? std::string() : text);
    previous = std::move(text);
  });
  return steps;
}

std::string render(const std::vector<std::pair<std::string, std::string>>& steps) {
  std::string out;
  for (const auto& [step, text] : steps) {
    if (text.empty()) {
      out += "# after " + step + ": unchanged\n";
    } else {
      out += "# after " + step + "\n" + text;
      if (out.back() != '\n') out += '\n';
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse(const std::string& golden) {
  std::vector<std::pair<std::string, std::string>> steps;
  std::istringstream in(golden);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# after ", 0) == 0) {
      std::string step = line.substr(8);
      bool unchanged = step.size() > 11 && step.compare(step.size() - 11, 11, ": unchanged") == 0;
      if (unchanged) step.resize(step.size() - 11);
      steps.emplace_back(step, std::string());
      continue;
    }
    if (steps.empty()) continue;
    steps.back().second += line + "\n";
  }
  return steps;
}

class PassGolden : public testing::TestWithParam<Case> {};

TEST_P(PassGolden, EveryPassPrintsWhatTheGoldenFileHolds) {
  const Case& c = GetParam();
  auto got = lower_and_record(c);
  std::string path = file_name(c);
  const char* update = std::getenv("TL_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << render(got);
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing; create it with TL_UPDATE_GOLDEN=1";
  std::stringstream buf;
  buf << in.rdbuf();
  auto want = parse(buf.str());
  std::vector<std::string> got_steps, want_steps;
  for (const auto& s : got) got_steps.push_back(s.first);
  for (const auto& s : want) want_steps.push_back(s.first);
  ASSERT_EQ(got_steps, want_steps) << "the pass list for " << c.target << " changed; regenerate " << path;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("pass " + got[i].first + " of " + c.kernel + " on " + c.target);
    // a section printed "unchanged" stays unchanged; one with text matches it line for line
    std::string g = got[i].second.empty() ? std::string() : got[i].second;
    if (!g.empty() && g.back() != '\n') g += '\n';
    EXPECT_EQ(g, want[i].second) << "the output of pass '" << got[i].first << "' moved; if that is intended, "
                                 << "regenerate " << path << " with TL_UPDATE_GOLDEN=1 and review the diff";
  }
}

const Case kCases[] = {
    {"gemm", gemm_kernel, "cpu"},
    {"gemm", gemm_kernel, "cuda -arch=sm_80"},
    {"gemm", gemm_kernel, "cuda -arch=sm_90a"},
    {"gemm", gemm_kernel, "metal"},
    {"row_sum", row_sum_kernel, "cpu"},
    {"row_sum", row_sum_kernel, "cuda -arch=sm_80"},
    {"row_sum", row_sum_kernel, "cuda -arch=sm_90a"},
    {"row_sum", row_sum_kernel, "metal"},
    {"shared_row_sum", shared_row_sum_kernel, "cuda -arch=sm_80"},
    {"axpy", axpy_kernel, "cpu"},
    {"axpy", axpy_kernel, "cuda -arch=sm_80"},
    {"axpy", axpy_kernel, "cuda -arch=sm_90a"},
    {"axpy", axpy_kernel, "metal"},
    {"gemm_sp", gemm_sp_kernel, "cuda -arch=sm_80"},
    {"gemm_sp", gemm_sp_kernel, "cuda -arch=sm_90a"},
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string name = file_name(info.param);
  name = name.substr(name.rfind('/') + 1);
  name.resize(name.size() - 4);
  for (char& ch : name)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Pipeline, PassGolden, testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace tl
