// The shared C-family printer: expressions, statements and buffer addressing.
#include "codegen/c_family/codegen_c.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>

#include "arith/simplify.h"
#include "ir/attrs.h"
#include "ir/printer.h"
#include "layout/layout.h"
#include "ops/tile_op.h"

namespace tl {

std::string CodeGenC::type_name(DataType t) {
  if (!t.is_scalar()) throw_user_error({}, str_cat("vector type ", t.name(), " is not supported by this backend yet"));
  switch (t.scalar_type()) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::Int8:
      return "int8_t";
    case ScalarType::Int16:
      return "int16_t";
    case ScalarType::Int32:
      return "int32_t";
    case ScalarType::Int64:
      return "int64_t";
    case ScalarType::UInt8:
      return "uint8_t";
    case ScalarType::UInt16:
      return "uint16_t";
    case ScalarType::UInt32:
      return "uint32_t";
    case ScalarType::UInt64:
      return "uint64_t";
    case ScalarType::Float16:
      return "tl::half_t";
    case ScalarType::BFloat16:
      return "tl::bfloat16_t";
    case ScalarType::Float32:
    case ScalarType::TFloat32:
      return "float";
    case ScalarType::Float64:
      return "double";
    case ScalarType::Float8E4M3FN:
      return "tl::float8_e4m3fn_t";
    case ScalarType::Float8E5M2:
      return "tl::float8_e5m2_t";
    case ScalarType::Float8E4M3FNUZ:
      return "tl::float8_e4m3fnuz_t";
    case ScalarType::Float8E5M2FNUZ:
      return "tl::float8_e5m2fnuz_t";
    case ScalarType::Float8E8M0FNU:
      return "tl::float8_e8m0fnu_t";
    case ScalarType::Handle:
      return "void*";
    case ScalarType::Void:
      return "void";
    case ScalarType::Int4:
      return "tl::int4_t";
    case ScalarType::Float4E2M1FN:
      return "tl::float4_e2m1fn_t";
    case ScalarType::Float4E2M1Unpacked:
      throw_user_error(statement_span_,
                       str_cat("dtype float4_e2m1_unpacked (", t.name(),
                               ") is TileLang's tag for the shared-memory layout sm_100's TMA unpacks fp4 into for "
                               "tcgen05 gemms, which the targets here (cpu, cuda sm_80 to sm_90a, metal) do not "
                               "have; use float4_e2m1fn (packed two a byte) for fp4 buffers"));
  }
  TL_UNREACHABLE("unknown scalar type");
}

std::string CodeGenC::storage_type(DataType t) {
  return t.is_sub_byte() ? "uint8_t" : type_name(t);
}

int64_t CodeGenC::storage_count(DataType t, int64_t elements) {
  return t.is_sub_byte() ? (elements * t.bits() * t.lanes() + 7) / 8 : elements;
}

std::string CodeGenC::packed_load(const Buffer& b, const std::string& offset, const SourceSpan& span) {
  return "tl::load_packed<" + type_name(b->dtype) + ">(" + packed_base(b, offset, false, span) + ", " + offset + ")";
}

std::string CodeGenC::packed_store(const Buffer& b, const std::string& offset, const std::string& value,
                                   const SourceSpan& span) {
  // A thread's registers are its own; other memory may hold a neighbour's element
  // in the other half of the byte (device/common/sub_byte.h).
  bool own = b->scope == Scope::Local || b->scope == Scope::LocalVar;
  return str_cat("tl::", own ? "store_packed" : "store_packed_shared", "<", type_name(b->dtype), ">(",
                 packed_base(b, offset, true, span), ", ", offset, ", ", value, ");");
}

// Words a kernel's own names must not take in any of the dialects: C++ keywords
// and common types, CUDA's built-in variables, MSL's qualifiers and types (a
// convolution's weight is often called `kernel`), and the namespace of our headers.
static const std::unordered_set<std::string>& reserved_words() {
  static const std::unordered_set<std::string> words = {"alignas",
                                                        "alignof",
                                                        "and",
                                                        "asm",
                                                        "auto",
                                                        "bool",
                                                        "break",
                                                        "case",
                                                        "catch",
                                                        "char",
                                                        "class",
                                                        "const",
                                                        "constexpr",
                                                        "continue",
                                                        "decltype",
                                                        "default",
                                                        "delete",
                                                        "do",
                                                        "double",
                                                        "else",
                                                        "enum",
                                                        "explicit",
                                                        "export",
                                                        "extern",
                                                        "false",
                                                        "float",
                                                        "for",
                                                        "friend",
                                                        "goto",
                                                        "if",
                                                        "inline",
                                                        "int",
                                                        "long",
                                                        "mutable",
                                                        "namespace",
                                                        "new",
                                                        "noexcept",
                                                        "not",
                                                        "nullptr",
                                                        "operator",
                                                        "or",
                                                        "private",
                                                        "protected",
                                                        "public",
                                                        "register",
                                                        "return",
                                                        "short",
                                                        "signed",
                                                        "sizeof",
                                                        "static",
                                                        "struct",
                                                        "switch",
                                                        "template",
                                                        "this",
                                                        "throw",
                                                        "true",
                                                        "try",
                                                        "typedef",
                                                        "typeid",
                                                        "typename",
                                                        "union",
                                                        "unsigned",
                                                        "using",
                                                        "virtual",
                                                        "void",
                                                        "volatile",
                                                        "while",
                                                        "xor",
                                                        "int8_t",
                                                        "int16_t",
                                                        "int32_t",
                                                        "int64_t",
                                                        "uint8_t",
                                                        "uint16_t",
                                                        "uint32_t",
                                                        "uint64_t",
                                                        "size_t",
                                                        "threadIdx",
                                                        "blockIdx",
                                                        "blockDim",
                                                        "gridDim",
                                                        "warpSize",
                                                        "dim3",
                                                        "kernel",
                                                        "device",
                                                        "constant",
                                                        "thread",
                                                        "threadgroup",
                                                        "threadgroup_imageblock",
                                                        "vertex",
                                                        "fragment",
                                                        "half",
                                                        "bfloat",
                                                        "uint",
                                                        "uchar",
                                                        "ushort",
                                                        "ulong",
                                                        "sampler",
                                                        "texture",
                                                        "metal",
                                                        "simd_group_id",
                                                        "tl",
                                                        "std"};
  return words;
}

// `name` as a C identifier: other characters become '_', a leading digit gets "v_".
static std::string sanitized(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  return s;
}

std::string CodeGenC::c_ident(const std::string& name) {
  return sanitized(name);
}

// A variable or buffer's name in the generated code: off the reserved words too.
static std::string local_ident(const std::string& name) {
  std::string s = sanitized(name);
  if (reserved_words().count(s)) s += "_";
  return s;
}

static std::string unique_name(std::unordered_map<const void*, std::string>& names,
                               std::unordered_set<std::string>& taken, const void* key, const std::string& base) {
  auto it = names.find(key);
  if (it != names.end()) return it->second;
  std::string name = base;
  for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
  taken.insert(name);
  return names[key] = name;
}

std::string CodeGenC::name_of(const VarNode* v) {
  return unique_name(names_, taken_, v, local_ident(v->name));
}
std::string CodeGenC::name_of(const Buffer& b) {
  return unique_name(names_, taken_, b.get(), local_ident(b->name));
}

void CodeGenC::alias_params(const std::vector<Param>& lowered, const std::vector<Param>& declared) {
  for (size_t i = 0; i < lowered.size() && i < declared.size(); ++i)
    if (lowered[i].is_tensor() && declared[i].is_tensor() && !lowered[i].buffer.same_as(declared[i].buffer))
      names_[lowered[i].buffer.get()] = name_of(declared[i].buffer);
}

void CodeGenC::emit_block_op(const Stmt& op_body, int64_t threads) {
  if (auto* coop = op_body.as<AttrNode>(); coop && coop->key == kCooperativeAttr) return stmt(coop->body);
  std::vector<const ForNode*> nest;
  Stmt body = op_body;
  while (auto* f = body.as<ForNode>()) {
    if (f->for_kind != ForKind::Parallel) break;
    nest.push_back(f);
    body = f->body;
  }
  if (nest.empty()) {
    line("if (" + thread_rank_ + " == 0) {");
    indent();
    stmt(op_body);
    dedent();
    line("}");
    return;
  }
  const std::string i64 = type_name(dtype::Int64);
  Expr total = cast(dtype::Int64, nest[0]->extent);
  for (size_t i = 1; i < nest.size(); ++i) total = mul(total, cast(dtype::Int64, nest[i]->extent));
  std::string f = "tl_flat" + std::to_string(flat_counter_++);
  // A constant trip count in 32 bits: a counted int32 loop (unrolled when short), so
  // that the compiler folds each iteration's index arithmetic (the thread's share of
  // a tile, `it * threads + rank`, split by constant extents) instead of dividing
  // 64-bit counters at run time.
  std::optional<int64_t> count = as_const_int(simplify(total));
  bool narrow = count && *count > 0 && *count <= std::numeric_limits<int32_t>::max() && threads > 0;
  for (const ForNode* l : nest) narrow = narrow && l->var.dtype() == dtype::Int32;
  const std::string index_t = narrow ? type_name(dtype::Int32) : i64;
  bool guarded = false;
  if (narrow) {
    const int64_t trips = (*count + threads - 1) / threads;
    const std::string it = f + "_it";
    if (trips <= 16) line(unroll_pragma());
    line("for (" + index_t + " " + it + " = 0; " + it + " < " + std::to_string(trips) + "; ++" + it + ") {");
    indent();
    line("const " + index_t + " " + f + " = " + it + " * " + std::to_string(threads) + " + " + thread_rank_ + ";");
    if (*count % threads != 0) {
      line("if (" + f + " < " + std::to_string(*count) + ") {");
      indent();
      guarded = true;
    }
  } else {
    line("for (" + index_t + " " + f + " = " + thread_rank_ + "; " + f + " < " + expr(total) + "; " + f +
         " += " + std::to_string(threads) + ") {");
    indent();
  }
  std::string rest = f;
  for (int i = int(nest.size()) - 1; i >= 0; --i) {
    const ForNode* l = nest[i];
    std::string ext = expr(cast(narrow ? dtype::Int32 : dtype::Int64, l->extent));
    std::string t = type_name(l->var.dtype());
    line("const " + t + " " + name_of(l->var.node()) + " = (" + t + ")(" + expr(l->min) + " + " +
         (i == 0 ? rest : "(" + rest + " % " + ext + ")") + ");");
    if (i > 0) {
      std::string next = f + "_" + std::to_string(i);
      line("const " + index_t + " " + next + " = " + rest + " / " + ext + ";");
      rest = next;
    }
  }
  stmt(body);
  if (guarded) {
    dedent();
    line("}");
  }
  dedent();
  line("}");
}

void CodeGenC::line(const std::string& s) {
  for (int i = 0; i < indent_; ++i) out_ << "  ";
  out_ << s << "\n";
}

std::string CodeGenC::expr(const Expr& e) {
  return print_expr(e);
}

std::string CodeGenC::flat_offset(const Buffer& b, const std::vector<Expr>& indices) {
  if (indices.empty()) return "0";
  if (b->layout) return print_expr(simplify(b->layout->offset(b, indices)));
  std::vector<Expr> strides = b.effective_strides();
  Expr off;
  for (size_t i = 0; i < indices.size(); ++i) {
    Expr idx = indices[i];
    // Offsets of global tensors are computed in 64 bits: they may pass 2^31 elements.
    if (b->scope == Scope::Global && idx.dtype() != dtype::Int64) idx = cast(dtype::Int64, idx);
    Expr term = is_const_one(strides[i]) ? idx : mul(idx, strides[i]);
    off = off.defined() ? add(off, term) : term;
  }
  return print_expr(off);
}

std::string CodeGenC::reinterpret_operand(const ReinterpretNode* n) {
  const DataType from = n->value.dtype();
  std::string v = print_expr(n->value);
  if (from.is_integer() && from.bits() < 32 && !n->value.as<BufferLoadNode>() && !n->value.as<VarNode>())
    return "((" + type_name(from) + ")" + v + ")";
  return v;
}

std::string CodeGenC::literal(const Expr& e) {
  std::ostringstream os;
  if (auto* i = e.as<IntImmNode>()) {
    DataType t = i->dtype;
    if (t.is_bool()) return i->value ? "true" : "false";
    if (t == dtype::Int32) {
      if (i->value == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return std::to_string(i->value);
    }
    if (t == dtype::Int64) {
      if (i->value == std::numeric_limits<int64_t>::min()) return "(int64_t)(-9223372036854775807LL - 1)";
      return "(int64_t)" + std::to_string(i->value) + "LL";
    }
    if (t.is_uint()) return "((" + type_name(t) + ")" + std::to_string(uint64_t(i->value)) + "ULL)";
    return "((" + type_name(t) + ")" + std::to_string(i->value) + ")";
  }
  auto* f = e.as<FloatImmNode>();
  TL_ICHECK(f, "literal of non-constant");
  DataType t = f->dtype;
  std::string v;
  bool special = std::isinf(f->value) || std::isnan(f->value);
  if (special) {
    if (std::string whole = special_literal(f->value, t); !whole.empty()) return whole;
    v = special_float(f->value, t);
  } else {
    os << std::hexfloat << f->value;
    v = os.str();
  }
  if (t == dtype::Float64) return v;
  if (t == dtype::Float32 || t == dtype::TFloat32) return (special || v[0] == '-') ? "((float)" + v + ")" : v + "f";
  // A value float holds exactly goes in as float; another one whole where the type
  // rounds float64 once (the Cast rule below).
  bool exact = special || double(float(f->value)) == f->value;
  return type_name(t) + (exact || !rounds_wide_once() ? "((float)" + v + ")" : "(" + v + ")");
}

bool is_safe_divisor(const Expr& b) {
  auto c = as_const_int(b);
  return c && *c != 0 && *c != -1;
}

std::string CodeGenC::print_binary(const BinaryNode* op) {
  DataType t = op->a.dtype();
  std::string a = print_expr(op->a), b = print_expr(op->b);
  // In the operands' own type, 16- and 8-bit floats too: the headers give every float
  // type the GPU's NaN and signed-zero rules bit for bit (device/common/float_minmax.h).
  if (op->op == BinaryOp::Min || op->op == BinaryOp::Max)
    return "tl::" + std::string(op->op == BinaryOp::Min ? "min" : "max") + "<" + type_name(t) + ">(" + a + ", " + b +
           ")";
  bool low = t.is_low_precision_float();
  auto wrap = [&](const std::string& s) {
    return low && !binary_op_is_comparison(op->op) ? type_name(op->dtype) + "(" + s + ")" : s;
  };
  if (low) {
    a = "(float)" + a;
    b = "(float)" + b;
  }
  switch (op->op) {
    case BinaryOp::FloorDiv:
      if (t.is_float()) return wrap(math_prefix() + "floor(" + a + " / " + b + ")");
      return "tl::floordiv<" + type_name(t) + ">(" + a + ", " + b + ")";
    case BinaryOp::FloorMod:
      if (t.is_float()) return wrap("(" + a + " - " + math_prefix() + "floor(" + a + " / " + b + ") * " + b + ")");
      return "tl::floormod<" + type_name(t) + ">(" + a + ", " + b + ")";
    case BinaryOp::Div:
      if (t.is_integer() && t.is_scalar() && !is_safe_divisor(op->b))
        return "tl::truncdiv<" + type_name(t) + ">(" + a + ", " + b + ")";
      break;
    case BinaryOp::Mod:
      if (t.is_float()) return wrap(math_prefix() + "fmod(" + a + ", " + b + ")");
      if (t.is_integer() && t.is_scalar() && !is_safe_divisor(op->b))
        return "tl::truncmod<" + type_name(t) + ">(" + a + ", " + b + ")";
      break;
    default:
      break;
  }
  return wrap("(" + a + " " + binary_op_symbol(op->op) + " " + b + ")");
}

const char* fast_math_function(Intrinsic op) {
  switch (op) {
    case Intrinsic::FastExp:
      return "exp";
    case Intrinsic::FastExp10:
      return "exp10";
    case Intrinsic::FastLog:
      return "log";
    case Intrinsic::FastLog2:
      return "log2";
    case Intrinsic::FastLog10:
      return "log10";
    case Intrinsic::FastSin:
      return "sin";
    case Intrinsic::FastCos:
      return "cos";
    case Intrinsic::FastTan:
      return "tan";
    case Intrinsic::FastRcp:
      return "rcp";
    default:
      return nullptr;
  }
}

std::string CodeGenC::print_call(const CallNode* op) {
  switch (op->op) {
    case Intrinsic::Extern: {
      // T.__ldg(x[i]): CUDA's read-only load takes the element's address; every
      // target's header defines __ldg (a plain load off the GPU).
      if (op->args[0].as<StringImmNode>()->value == "__ldg" && op->args.size() == 2 && op->args[1].is<BufferLoadNode>())
        return "__ldg(&(" + print_expr(op->args[1]) + "))";
      if (op->args[0].as<StringImmNode>()->value == kSourceKernelCall)
        throw_user_error(statement_span_,
                         "T.CUDASourceCodeKernel: a kernel given as CUDA source runs on the cuda target (and its "
                         "emulator) only; compile this prim_func for a cuda target, or write the kernel with "
                         "T.Kernel for this one");
      std::string s = op->args[0].as<StringImmNode>()->value + "(";
      for (size_t i = 1; i < op->args.size(); ++i) s += (i > 1 ? ", " : "") + print_expr(op->args[i]);
      return s + ")";
    }
    case Intrinsic::AddressOf: {
      auto* load = op->args[0].as<BufferLoadNode>();
      TL_ICHECK(load, "address_of needs a buffer load");
      // A packed element's address is that of the byte that holds it, as in TileLang.
      if (load->buffer->dtype.is_sub_byte())
        return "(" + name_of(load->buffer) + " + ((" + flat_offset(load->buffer, load->indices) + ") >> 1))";
      if (scalar_var(load->buffer)) return "(&" + name_of(load->buffer) + ")";
      return "(&" + name_of(load->buffer) + "[" + flat_offset(load->buffer, load->indices) + "])";
    }
    case Intrinsic::IsNan:
    case Intrinsic::IsInf:
    case Intrinsic::IsFinite: {
      // In the operand's own precision (float or double); the 16- and 8-bit floats
      // through float, integers (always finite) through double.
      DataType a = op->args[0].dtype();
      std::string cast = a == dtype::Float32 || a == dtype::Float64 ? "" : a.is_float() ? "(float)" : "(double)";
      return "tl::" + std::string(intrinsic_name(op->op)) + "(" + cast + print_expr(op->args[0]) + ")";
    }
    case Intrinsic::MaxNan:
    case Intrinsic::MinNan:  // as Max / Min, in the operands' own type
      return "tl::" + std::string(intrinsic_name(op->op)) + "<" + type_name(op->dtype) + ">(" +
             print_expr(op->args[0]) + ", " + print_expr(op->args[1]) + ")";
    case Intrinsic::Print:
    case Intrinsic::DeviceAssert:
    case Intrinsic::Assume:
      TL_UNREACHABLE("statement-level call in expression position");
    default:
      break;
  }
  DataType t = op->dtype;
  bool low = t.is_low_precision_float();
  // float16 / bfloat16 x * y + z rounded once (tl::fma of the 16-bit types), as the GPU's
  // fma.rn.f16 / fma.rn.bf16.
  if (op->op == Intrinsic::Fma && (t == dtype::Float16 || t == dtype::BFloat16) && fma16_rounds_once()) low = false;
  const char* fast = fast_math_function(op->op);
  std::string s = math_prefix() + (fast ? std::string("fast_") + fast : math_name(op->op, t)) + "(";
  for (size_t i = 0; i < op->args.size(); ++i) {
    std::string a = print_expr(op->args[i]);
    s += (i ? ", " : "") + (low ? "(float)" + a : a);
  }
  s += ")";
  return low ? type_name(t) + "(" + s + ")" : s;
}

std::string CodeGenC::math_name(Intrinsic op, DataType t) {
  if (op == Intrinsic::Abs && t.is_float()) return "fabs";
  if (op == Intrinsic::Round) return "RoundTiesAwayFromZero";
  return intrinsic_name(op);
}

std::string CodeGenC::print_expr(const Expr& e) {
  switch (e.kind()) {
    case NodeKind::IntImm:
    case NodeKind::FloatImm:
      return literal(e);
    case NodeKind::StringImm: {
      // A C string literal: quotes, backslashes and control characters escaped.
      std::string s = "\"";
      for (unsigned char c : e.as<StringImmNode>()->value) {
        if (c == '"' || c == '\\') {
          s += '\\';
          s += char(c);
        } else if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          s += buf;
        } else {
          s += char(c);
        }
      }
      return s + "\"";
    }
    case NodeKind::Var:
      return name_of(e.as<VarNode>());
    case NodeKind::Binary:
      return print_binary(e.as<BinaryNode>());
    case NodeKind::Unary: {
      auto* n = e.as<UnaryNode>();
      std::string a = print_expr(n->a);
      if (n->op == UnaryOp::Neg && n->dtype.is_low_precision_float())
        return type_name(n->dtype) + "(-(float)" + a + ")";
      return "(" + std::string(unary_op_symbol(n->op)) + a + ")";
    }
    case NodeKind::Select: {
      auto* n = e.as<SelectNode>();
      return "(" + print_expr(n->cond) + " ? " + print_expr(n->true_value) + " : " + print_expr(n->false_value) + ")";
    }
    case NodeKind::Cast: {
      auto* n = e.as<CastNode>();
      DataType from = n->value.dtype();
      std::string v = print_expr(n->value);
      // Low-precision types convert through float in both directions.
      if (from.is_low_precision_float() && n->dtype != dtype::Float32) v = "(float)" + v;
      // float64 and integers go in whole and round once (as numpy and ml_dtypes do),
      // where the target's types can (rounds_wide_once); the rest through float.
      if (n->dtype.is_low_precision_float()) {
        bool whole = from == dtype::Float64 || ((from.is_integer() || from.is_bool()) && rounds_wide_once());
        return type_name(n->dtype) + (whole ? "(" + v + ")" : "((float)" + v + ")");
      }
      return "((" + type_name(n->dtype) + ")" + v + ")";
    }
    case NodeKind::Reinterpret: {
      auto* n = e.as<ReinterpretNode>();
      return "tl::bit_cast<" + type_name(n->dtype) + ">(" + reinterpret_operand(n) + ")";
    }
    case NodeKind::Call:
      return print_call(e.as<CallNode>());
    case NodeKind::BufferLoad: {
      auto* n = e.as<BufferLoadNode>();
      if (n->buffer->dtype.is_sub_byte()) return packed_load(n->buffer, flat_offset(n->buffer, n->indices), n->span);
      return element(n->buffer, flat_offset(n->buffer, n->indices), false, n->span);
    }
    case NodeKind::Let: {
      auto* n = e.as<LetNode>();
      return "({ " + type_name(n->var.dtype()) + " " + name_of(n->var.node()) + " = " + print_expr(n->value) + "; " +
             print_expr(n->body) + "; })";
    }
    case NodeKind::Ramp:
    case NodeKind::Broadcast:
      throw_user_error(e.span(), "vector expressions are not supported by this backend yet");
#define TL_STMT(Name) case NodeKind::Name:
#include "ir/node_kinds.def"
      break;
  }
  TL_UNREACHABLE("statement in expression position");
}

void CodeGenC::print_for(const ForNode* op) {
  std::string v = name_of(op->var.node());
  std::string t = type_name(op->var.dtype());
  if (op->for_kind == ForKind::Unrolled) {
    // T.unroll(..., unroll_factor=n): unrolled n times, as TileLang's `#pragma unroll n`.
    auto factor = op->annotations.find("unroll_factor");
    const int64_t* n = factor == op->annotations.end() ? nullptr : std::get_if<int64_t>(&factor->second);
    line(n && *n > 0 ? unroll_pragma(*n) : unroll_pragma());
  }
  std::string lo = print_expr(op->min);
  std::string hi = print_expr(add(op->min, op->extent));
  line("for (" + t + " " + v + " = " + lo + "; " + v + " < " + hi + "; ++" + v + ") {");
  indent();
  stmt(op->body);
  dedent();
  line("}");
}

void CodeGenC::emit_allocate(const AllocateNode* op) {
  const Buffer& b = op->buffer;
  auto count = as_const_int(b.num_elements());
  TL_ICHECK(count, "allocation of non-constant size reached codegen");
  if (scalar_var(b))
    line(alloc_prefix(b) + storage_type(b->dtype) + " " + name_of(b) + ";");
  else
    line(alloc_prefix(b) + storage_type(b->dtype) + " " + name_of(b) + "[" +
         std::to_string(storage_count(b->dtype, *count)) + "];");
  stmt(op->body);
}

void CodeGenC::stmt(const Stmt& s) {
  if (!s.defined()) return;
  // The innermost user-written statement: expressions without a span of their own
  // are attributed to it.
  struct SpanScope {
    SourceSpan& slot;
    SourceSpan saved;
    ~SpanScope() { slot = saved; }
  } scope{statement_span_, statement_span_};
  if (s.span().defined()) statement_span_ = s.span();
  switch (s.kind()) {
    case NodeKind::Seq:
      for (const Stmt& x : s.as<SeqNode>()->seq) stmt(x);
      return;
    case NodeKind::For:
      print_for(s.as<ForNode>());
      return;
    case NodeKind::While: {
      auto* n = s.as<WhileNode>();
      line("while (" + print_expr(n->cond) + ") {");
      indent();
      stmt(n->body);
      dedent();
      line("}");
      return;
    }
    case NodeKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      line("if (" + print_expr(n->cond) + ") {");
      indent();
      stmt(n->then_case);
      dedent();
      if (n->else_case.defined()) {
        line("} else {");
        indent();
        stmt(n->else_case);
        dedent();
      }
      line("}");
      return;
    }
    case NodeKind::BufferStore: {
      auto* n = s.as<BufferStoreNode>();
      if (n->buffer->dtype.is_sub_byte())
        return line(packed_store(n->buffer, flat_offset(n->buffer, n->indices), print_expr(n->value), n->span));
      line(element(n->buffer, flat_offset(n->buffer, n->indices), true, n->span) + " = " + print_expr(n->value) + ";");
      return;
    }
    case NodeKind::Evaluate: {
      auto* n = s.as<EvaluateNode>();
      if (auto* c = n->value.as<CallNode>(); c && c->op == Intrinsic::Print) {
        emit_print(c);
        return;
      }
      // A promise for the simplifier: nothing to run.
      if (auto* c = n->value.as<CallNode>(); c && c->op == Intrinsic::Assume) return;
      if (auto* c = n->value.as<CallNode>(); c && c->op == Intrinsic::DeviceAssert) {
        line("if (!(" + print_expr(c->args[0]) + ")) tl::device_assert_fail(" + print_expr(c->args[1]) + ");");
        return;
      }
      line(print_evaluated(n->value) + ";");
      return;
    }
    case NodeKind::LetStmt: {
      auto* n = s.as<LetStmtNode>();
      names_.erase(n->var.node());  // bound again (a copied body, its loop gone): a fresh name for this scope
      line("const " + type_name(n->var.dtype()) + " " + name_of(n->var.node()) + " = " + print_expr(n->value) + ";");
      stmt(n->body);
      return;
    }
    case NodeKind::Allocate:
      emit_allocate(s.as<AllocateNode>());
      return;
    case NodeKind::KernelLaunch:
      emit_kernel_launch(s.as<KernelLaunchNode>());
      return;
    case NodeKind::TileOp:
      TL_UNREACHABLE("tile op reached codegen; lower_tile_ops must run first");
    case NodeKind::Barrier:
      emit_barrier(s.as<BarrierNode>());
      return;
    case NodeKind::Attr:
      emit_attr(s.as<AttrNode>());
      return;
    case NodeKind::Break:
      line("break;");
      return;
    case NodeKind::Continue:
      line("continue;");
      return;
#define TL_EXPR(Name) case NodeKind::Name:
#include "ir/node_kinds.def"
      break;
  }
  TL_UNREACHABLE("expression in statement position");
}

}  // namespace tl
