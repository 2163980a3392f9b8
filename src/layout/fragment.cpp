#include "layout/fragment.h"

#include <numeric>

namespace tl {
namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// The largest power of two that divides both a and b.
int64_t common_pow2(int64_t a, int64_t b) {
  int64_t p = 1;
  while (a % (p * 2) == 0 && b % (p * 2) == 0) p *= 2;
  return p;
}

// Row-major unflattening of `flat` over `dims`.
std::vector<Expr> unflatten(Expr flat, const std::vector<int64_t>& dims) {
  std::vector<Expr> out(dims.size());
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    out[d] = d == 0 ? flat : floormod(flat, int_imm(dims[d]));
    if (d > 0) flat = floordiv(flat, int_imm(dims[d]));
  }
  return out;
}

}  // namespace

FragmentLayoutPtr FragmentLayout::blocked(std::vector<int64_t> shape, int64_t threads, int64_t elem_bytes) {
  auto l = std::make_shared<FragmentLayout>();
  l->kind_ = Kind::Blocked;
  l->shape_ = std::move(shape);
  l->threads_ = threads;
  int64_t cols = l->shape_.back(), rows = product(l->shape_, 0, l->shape_.size() - 1);
  int64_t vec = std::max<int64_t>(1, 16 / std::max<int64_t>(1, elem_bytes));
  while (cols % vec != 0) vec /= 2;
  int64_t runs = cols / vec;
  l->vec_ = vec;
  l->tc_ = common_pow2(threads, runs);
  l->tr_ = threads / l->tc_;
  l->rows_per_thread_ = (rows + l->tr_ - 1) / l->tr_;
  l->runs_per_row_ = runs / l->tc_;
  l->local_size_ = l->rows_per_thread_ * l->runs_per_row_ * vec;
  return l;
}

FragmentLayoutPtr FragmentLayout::blocked_columns(const std::vector<int64_t>& shape, int64_t threads,
                                                  int64_t elem_bytes) {
  if (shape.size() != 2 || shape[1] % threads != 0) return nullptr;
  int64_t cols = shape[1];
  int64_t vec = std::max<int64_t>(1, 16 / std::max<int64_t>(1, elem_bytes));
  while (vec > 1 && cols % (vec * threads) != 0) vec /= 2;
  auto l = std::make_shared<FragmentLayout>();
  l->kind_ = Kind::Blocked;
  l->shape_ = shape;
  l->threads_ = threads;
  l->vec_ = vec;
  l->tc_ = threads;
  l->tr_ = 1;
  l->rows_per_thread_ = shape[0];
  l->runs_per_row_ = cols / (vec * threads);
  l->local_size_ = l->rows_per_thread_ * l->runs_per_row_ * vec;
  return l;
}

FragmentLayoutPtr FragmentLayout::cols(const FragmentLayoutPtr& parent) {
  if (parent->shape_.size() != 2 || parent->kind_ == Kind::Rows || parent->kind_ == Kind::Cols) return nullptr;
  auto l = std::make_shared<FragmentLayout>();
  l->kind_ = Kind::Cols;
  l->parent_ = parent;
  l->threads_ = parent->threads_;
  l->shape_ = {parent->shape_[1]};
  if (parent->is_accum())  // (n8 tiles of the group's columns) x (two columns per lane)
    l->local_size_ = parent->shape_[1] / parent->warps_n_ / 8 * 2;
  else
    l->local_size_ = parent->runs_per_row_ * parent->vec_;
  return l;
}

FragmentLayoutPtr FragmentLayout::accum(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n) {
  auto l = std::make_shared<FragmentLayout>();
  l->kind_ = Kind::Accum;
  l->shape_ = {m, n};
  l->threads_ = warps_m * warps_n * 32;
  l->warps_m_ = warps_m;
  l->warps_n_ = warps_n;
  l->local_size_ = m * n / l->threads_;
  return l;
}

FragmentLayoutPtr FragmentLayout::wgmma_accum(int64_t m, int64_t n, int64_t warpgroups_m, int64_t warpgroups_n) {
  auto l = std::make_shared<FragmentLayout>(*accum(m, n, warpgroups_m, warpgroups_n));
  l->kind_ = Kind::WgmmaAccum;
  l->group_warps_ = 4;
  l->threads_ *= 4;
  l->local_size_ = m * n / l->threads_;
  return l;
}

FragmentLayoutPtr FragmentLayout::rows(const FragmentLayoutPtr& parent) {
  auto l = std::make_shared<FragmentLayout>();
  l->kind_ = Kind::Rows;
  l->parent_ = parent;
  l->threads_ = parent->threads_;
  const auto& ps = parent->shape_;
  // A 1-d parent [n] is one row [1, n]: its row vector has one element.
  l->shape_ = ps.size() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>(ps.begin(), ps.end() - 1);
  if (parent->is_accum())  // (m16 tiles of the warp) x (two rows per lane)
    l->local_size_ = parent->shape_[0] / parent->warps_m_ / parent->group_warps_ / 8;
  else
    l->local_size_ = parent->rows_per_thread_;
  return l;
}

int64_t FragmentLayout::run() const {
  switch (kind_) {
    case Kind::Blocked:
      return vec_;
    case Kind::Accum:
    case Kind::WgmmaAccum:
      return 2;
    case Kind::Rows:
      return 1;
    case Kind::Cols:
      return parent_->run();
  }
  return 1;
}

std::vector<Expr> FragmentLayout::logical(const Expr& t, const Expr& k) const {
  switch (kind_) {
    case Kind::Blocked: {
      int64_t per_row = runs_per_row_ * vec_;
      Expr i = floordiv(k, int_imm(per_row)), j = floormod(k, int_imm(per_row));
      Expr row = add(mul(i, int_imm(tr_)), floordiv(t, int_imm(tc_)));
      Expr col =
          add(add(mul(floordiv(j, int_imm(vec_)), int_imm(tc_ * vec_)), mul(floormod(t, int_imm(tc_)), int_imm(vec_))),
              floormod(j, int_imm(vec_)));
      std::vector<int64_t> lead(shape_.begin(), shape_.end() - 1);
      std::vector<Expr> out = lead.empty() ? std::vector<Expr>{} : unflatten(row, lead);
      out.push_back(col);
      return out;
    }
    case Kind::Accum:
    case Kind::WgmmaAccum: {
      // Group (warp or warpgroup) (gm, gn) owns a tm x tn tile; warp w of a group
      // takes rows 16w.. of each (16 * group_warps)-row block of it.
      int64_t g = group_warps_, tm = shape_[0] / warps_m_, tn = shape_[1] / warps_n_, nt = tn / 8;
      Expr warp = floordiv(t, int_imm(32)), lane = floormod(t, int_imm(32));
      Expr group = floordiv(warp, int_imm(g)), w = floormod(warp, int_imm(g));
      Expr tile = floordiv(k, int_imm(4)), e = floormod(k, int_imm(4));
      Expr row = add(add(mul(floordiv(group, int_imm(warps_n_)), int_imm(tm)),
                         add(mul(floordiv(tile, int_imm(nt)), int_imm(16 * g)), mul(w, int_imm(16)))),
                     add(floordiv(lane, int_imm(4)), mul(floordiv(e, int_imm(2)), int_imm(8))));
      Expr col =
          add(add(mul(floormod(group, int_imm(warps_n_)), int_imm(tn)), mul(floormod(tile, int_imm(nt)), int_imm(8))),
              add(mul(floormod(lane, int_imm(4)), int_imm(2)), floormod(e, int_imm(2))));
      return {row, col};
    }
    case Kind::Rows: {
      // Register k of a row vector is the row of parent register parent_k(k).
      if (parent_->is_accum()) {
        int64_t nt = parent_->shape_[1] / parent_->warps_n_ / 8;
        // k = mt * 2 + h  <->  parent register (mt * nt) * 4 + h * 2
        Expr pk =
            add(mul(mul(floordiv(k, int_imm(2)), int_imm(nt)), int_imm(4)), mul(floormod(k, int_imm(2)), int_imm(2)));
        auto idx = parent_->logical(t, pk);
        idx.pop_back();
        return idx;
      }
      Expr pk = mul(k, int_imm(parent_->runs_per_row_ * parent_->vec_));
      // Of a 1-d parent, the row of its [1, n] view (0 where valid()).
      if (parent_->shape_.size() == 1) return {add(mul(k, int_imm(parent_->tr_)), floordiv(t, int_imm(parent_->tc_)))};
      auto idx = parent_->logical(t, pk);
      idx.pop_back();
      return idx;
    }
    case Kind::Cols: {
      // Register k of a column vector is the column of parent register pk(k), in the
      // parent's first row of registers (for an accumulator: k = n * 2 + e <-> parent
      // register n * 4 + e).
      Expr pk = parent_->is_accum() ? add(mul(floordiv(k, int_imm(2)), int_imm(4)), floormod(k, int_imm(2))) : k;
      return {parent_->logical(t, pk).back()};
    }
  }
  return {};
}

Expr FragmentLayout::valid(const Expr& t, const Expr& k) const {
  // (Every column of a parent is held whole by some threads: a Cols layout is valid.)
  const FragmentLayout& base = kind_ == Kind::Rows ? *parent_ : *this;
  if (base.kind_ != Kind::Blocked) return bool_imm(true);
  int64_t rows = product(base.shape_, 0, base.shape_.size() - 1);
  if (rows % base.tr_ == 0) return bool_imm(true);
  Expr i = kind_ == Kind::Rows ? k : floordiv(k, int_imm(base.runs_per_row_ * base.vec_));
  return lt(add(mul(i, int_imm(base.tr_)), floordiv(t, int_imm(base.tc_))), int_imm(rows));
}

Expr FragmentLayout::row_local(const Expr& parent_k) const {
  TL_ICHECK(kind_ == Kind::Rows, "row_local of a non-row layout");
  if (parent_->is_accum()) {
    int64_t nt = parent_->shape_[1] / parent_->warps_n_ / 8;
    // parent register (mt * nt + n) * 4 + e holds row (mt, e / 2)
    return add(mul(floordiv(parent_k, int_imm(nt * 4)), int_imm(2)),
               floordiv(floormod(parent_k, int_imm(4)), int_imm(2)));
  }
  return floordiv(parent_k, int_imm(parent_->runs_per_row_ * parent_->vec_));
}

Expr FragmentLayout::col_local(const Expr& parent_k) const {
  TL_ICHECK(kind_ == Kind::Cols, "col_local of a non-column layout");
  if (parent_->is_accum()) {
    int64_t nt = parent_->shape_[1] / parent_->warps_n_ / 8;
    // parent register (mt * nt + n) * 4 + e holds column (n, e % 2)
    return add(mul(floormod(floordiv(parent_k, int_imm(4)), int_imm(nt)), int_imm(2)), floormod(parent_k, int_imm(2)));
  }
  return floormod(parent_k, int_imm(parent_->runs_per_row_ * parent_->vec_));
}

Expr FragmentLayout::col_leader(const Expr& t) const {
  TL_ICHECK(kind_ == Kind::Cols, "col_leader of a non-column layout");
  const FragmentLayout& p = *parent_;
  if (!p.is_accum()) return p.tr_ == 1 ? bool_imm(true) : lt(t, int_imm(p.tc_));  // thread row 0
  // Lane group 0 of warp 0 of the groups along M.
  Expr warp = floordiv(t, int_imm(32)), lane = floormod(t, int_imm(32));
  Expr group = floordiv(warp, int_imm(p.group_warps_));
  Expr first = logical_and(lt(lane, int_imm(4)), eq(floormod(warp, int_imm(p.group_warps_)), int_imm(0)));
  return logical_and(first, lt(group, int_imm(p.warps_n_)));
}

Expr FragmentLayout::parent_register(const Expr& row, const Expr& k) const {
  TL_ICHECK(kind_ == Kind::Cols && parent_->holds_whole_columns(), "parent_register needs whole columns");
  return add(mul(row, int_imm(parent_->runs_per_row_ * parent_->vec_)), k);
}

int64_t FragmentLayout::row_lanes() const {
  if (is_accum()) return 4;
  return std::min<int64_t>(tc_, 32);
}

int64_t FragmentLayout::row_warps() const {
  if (is_accum()) return warps_n_;  // one warp of each group along N
  return tc_ > 32 ? tc_ / 32 : 1;
}

Expr FragmentLayout::row_warp_index(const Expr& t) const {
  Expr warp = floordiv(t, int_imm(32));
  if (is_accum()) return floormod(floordiv(warp, int_imm(group_warps_)), int_imm(warps_n_));
  return floormod(warp, int_imm(row_warps()));
}

bool FragmentLayout::equals(const FragmentLayout& o) const {
  if (kind_ != o.kind_ || shape_ != o.shape_ || threads_ != o.threads_) return false;
  switch (kind_) {
    case Kind::Blocked:
      return tr_ == o.tr_ && tc_ == o.tc_ && vec_ == o.vec_;
    case Kind::Accum:
    case Kind::WgmmaAccum:
      return warps_m_ == o.warps_m_ && warps_n_ == o.warps_n_;
    case Kind::Rows:
    case Kind::Cols:
      return parent_->equals(*o.parent_);
  }
  return false;
}

bool FragmentLayout::same_rows(const FragmentLayout& o) const {
  TL_ICHECK(kind_ == Kind::Rows && o.kind_ == Kind::Rows, "same_rows of a non-row layout");
  const FragmentLayout &p = *parent_, &q = *o.parent_;
  if (p.kind_ != q.kind_ || p.threads_ != q.threads_ || shape_ != o.shape_) return false;
  switch (p.kind_) {
    case Kind::Blocked:  // rows k * tr + t / tc
      return p.tr_ == q.tr_ && p.tc_ == q.tc_;
    case Kind::Accum:
    case Kind::WgmmaAccum:  // the row of a register depends on the group split, not on N
      return p.warps_m_ == q.warps_m_ && p.warps_n_ == q.warps_n_;
    case Kind::Rows:
    case Kind::Cols:
      return false;
  }
  return false;
}

std::string FragmentLayout::str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? ", " : "") + std::to_string(shape_[i]);
  s += "]";
  switch (kind_) {
    case Kind::Blocked:
      return str_cat("blocked", s, " threads ", tr_, "x", tc_, " vec ", vec_);
    case Kind::Accum:
      return str_cat("mma accumulator", s, " warps ", warps_m_, "x", warps_n_);
    case Kind::WgmmaAccum:
      return str_cat("wgmma accumulator", s, " warpgroups ", warps_m_, "x", warps_n_);
    case Kind::Rows:
      return "rows" + s + " of " + parent_->str();
    case Kind::Cols:
      return "cols" + s + " of " + parent_->str();
  }
  return s;
}

}  // namespace tl
