// Target: what the code is generated for, and the capabilities passes may ask
// about. Target names are parsed here and tested only in pipeline.cpp, codegen/
// and device/ (DESIGN §4).
#pragma once

#include <set>
#include <string>

namespace tl {

enum class TargetKind { CPU, CUDA, Metal };

struct Target {
  TargetKind kind = TargetKind::CPU;
  std::string arch;            // "sm_90a" for CUDA; empty for the CPU
  std::set<std::string> keys;  // e.g. "metal4"
  // Run the target's exact source on the CPU through device/emu shims ("-emulate").
  bool emulated = false;

  // Parses "cpu", "c", "llvm", "cuda", "cuda -arch=sm_90a", "metal", "metal -keys=metal4",
  // or a JSON-ish dict string handled by the Python side. Throws a UserError on others.
  static Target parse(const std::string& s);
  std::string str() const;  // canonical form, part of the cache key

  int warp_size() const { return kind == TargetKind::Metal ? 32 : kind == TargetKind::CUDA ? 32 : 1; }
  // One executor runs a whole thread block (fragments are block-wide arrays).
  bool runs_blocks_serially() const { return kind == TargetKind::CPU; }
};

}  // namespace tl
