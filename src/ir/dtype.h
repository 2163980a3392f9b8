// DataType: a scalar type from dtypes.def plus a vector lane count. Small, copyable,
// compared by value; the same object serves IR nodes, codegen and the Python `T.<name>`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tl {

enum class ScalarType : uint8_t {
#define TL_DTYPE(Ident, name, cat, bits, np, torch) Ident,
#include "ir/dtypes.def"
#undef TL_DTYPE
};

enum class TypeCategory : uint8_t { Bool, Int, UInt, Float, Handle, Void };

class DataType {
 public:
  constexpr DataType() = default;
  constexpr DataType(ScalarType t, int lanes = 1) : type_(t), lanes_(uint16_t(lanes)) {}

  ScalarType scalar_type() const { return type_; }
  int lanes() const { return lanes_; }
  int bits() const;   // bits of one lane
  int bytes() const;  // storage bytes of all lanes, rounded up
  TypeCategory category() const;
  std::string name() const;  // "float16", "float32x4"
  std::string numpy_name() const;
  std::string torch_name() const;

  bool is_bool() const { return category() == TypeCategory::Bool; }
  bool is_int() const { return category() == TypeCategory::Int; }
  bool is_uint() const { return category() == TypeCategory::UInt; }
  bool is_integer() const { return is_int() || is_uint(); }  // excludes bool
  bool is_float() const { return category() == TypeCategory::Float; }
  bool is_handle() const { return category() == TypeCategory::Handle; }
  bool is_void() const { return category() == TypeCategory::Void; }
  bool is_scalar() const { return lanes_ == 1; }
  // Types whose C++ arithmetic goes through float32 (half, bfloat16, fp8, fp4).
  bool is_low_precision_float() const { return is_float() && bits() < 32; }
  // Elements narrower than a byte (int4, float4_e2m1fn): memory holds them packed,
  // two a byte with the lower index in the low nibble, and a tensor argument is a
  // tensor of bytes whose last dimension holds two elements each.
  bool is_sub_byte() const { return (is_integer() || is_float()) && bits() * lanes() < 8; }

  DataType with_lanes(int lanes) const { return DataType(type_, lanes); }
  DataType element_of() const { return DataType(type_, 1); }

  bool operator==(const DataType& o) const { return type_ == o.type_ && lanes_ == o.lanes_; }
  bool operator!=(const DataType& o) const { return !(*this == o); }

  // Parses "float16", "float32x4", and the aliases half/float/double/int/... .
  static std::optional<DataType> parse(std::string_view name);
  // Like parse but throws a UserError quoting the unknown name.
  static DataType from_string(std::string_view name);

 private:
  ScalarType type_ = ScalarType::Void;
  uint16_t lanes_ = 1;
};

namespace dtype {
#define TL_DTYPE(Ident, name, cat, bits, np, torch) inline constexpr DataType Ident{ScalarType::Ident};
#include "ir/dtypes.def"
#undef TL_DTYPE
}  // namespace dtype

// The number of scalar types in dtypes.def (for iteration from bindings).
int num_scalar_types();

}  // namespace tl
