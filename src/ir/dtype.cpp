// Everything about a DataType is read from the one table in dtypes.def.
#include "ir/dtype.h"

#include <cstring>

#include "support/error.h"

namespace tl {
namespace {

struct ScalarInfo {
  const char* name;
  TypeCategory category;
  int bits;
  const char* numpy;
  const char* torch;
};

constexpr ScalarInfo kScalarInfo[] = {
#define TL_DTYPE(Ident, name, cat, bits, np, torch) {name, TypeCategory::cat, bits, np, torch},
#include "ir/dtypes.def"
#undef TL_DTYPE
};

const ScalarInfo& info(ScalarType t) {
  return kScalarInfo[static_cast<int>(t)];
}

struct Alias {
  const char* alias;
  const char* name;
};
// TileLang's C-style aliases.
constexpr Alias kAliases[] = {{"half", "float16"},
                              {"float", "float32"},
                              {"double", "float64"},
                              {"short", "int16"},
                              {"int", "int32"},
                              {"uint", "uint32"},
                              {"long", "int64"},
                              {"bf16", "bfloat16"},
                              {"fp16", "float16"},
                              {"fp32", "float32"},
                              {"float4_e2m1_unpacked", "custom[float4_e2m1_unpacked]8"}};

std::optional<ScalarType> parse_scalar(std::string_view name) {
  for (const Alias& a : kAliases)
    if (name == a.alias) name = a.name;
  for (int i = 0; i < num_scalar_types(); ++i)
    if (name == kScalarInfo[i].name) return static_cast<ScalarType>(i);
  return std::nullopt;
}

}  // namespace

int num_scalar_types() {
  return int(sizeof(kScalarInfo) / sizeof(kScalarInfo[0]));
}

int DataType::bits() const {
  return info(type_).bits;
}
int DataType::bytes() const {
  return (bits() * lanes_ + 7) / 8;
}
TypeCategory DataType::category() const {
  return info(type_).category;
}
std::string DataType::numpy_name() const {
  return info(type_).numpy;
}
std::string DataType::torch_name() const {
  return info(type_).torch;
}

std::string DataType::name() const {
  std::string n = info(type_).name;
  // Appended in two steps, not n += "x" + std::to_string(): GCC 12 gives a false -Wrestrict
  // warning on that (GCC bug 105651).
  if (lanes_ != 1) n.append("x").append(std::to_string(lanes_));
  return n;
}

std::optional<DataType> DataType::parse(std::string_view name) {
  if (auto t = parse_scalar(name)) return DataType(*t);
  // Vector form: <scalar>x<lanes>, e.g. float16x8.
  size_t x = name.rfind('x');
  if (x == std::string_view::npos || x + 1 >= name.size()) return std::nullopt;
  int lanes = 0;
  for (char c : name.substr(x + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    lanes = lanes * 10 + (c - '0');
    if (lanes > 1024) return std::nullopt;
  }
  auto t = parse_scalar(name.substr(0, x));
  if (!t || lanes < 1) return std::nullopt;
  return DataType(*t, lanes);
}

DataType DataType::from_string(std::string_view name) {
  if (auto t = parse(name)) return *t;
  throw_user_error({}, str_cat("unknown dtype '", name,
                               "'; expected one of bool, int4, int8, int16, int32, int64, "
                               "uint8..uint64, float16, bfloat16, float32, float64, tfloat32, "
                               "float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, "
                               "float8_e8m0fnu, float4_e2m1fn, float4_e2m1_unpacked, optionally with lanes as in "
                               "'float16x8'"));
}

}  // namespace tl
