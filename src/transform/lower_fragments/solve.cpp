// Phase 2 of lower_fragments (plan.h): union the tied fragments into classes; a class
// takes its seed (the gemm layout), else the rows of its parent class, else the
// default blocked layout. Conflicts demote the class; repeat until nothing changes.
// The shared operand tiles of the register gemms then get the swizzle their gemm reads.
#include <algorithm>

#include "ops/extent_util.h"
#include "transform/lower_fragments/plan.h"

namespace tl::fragments {
namespace {

// One round; returns false when it demoted something (the caller repeats), true when
// it solved the kernel or found a `conflict` that leaves it without a solution.
bool solve_round(Analysis& a, Solution& out, std::optional<LayoutConflict>& conflict) {
  auto alive = [&](BufKey k) { return a.candidates.count(k) && !a.demoted.count(k); };
  auto demote = [&](BufKey k, const std::string& why) { return a.demoted.emplace(k, why).second; };
  // A gemm whose accumulator lost its registers takes its register A with it.
  for (const GemmUse& g : a.gemms)
    if (g.a && !alive(g.c) && alive(g.a))
      return !demote(g.a, at(g.op->span, str_cat("A of T.gemm, whose accumulator '", g.c->name, "' is demoted")));
  UnionFind uf;
  for (auto& [x, y] : a.same)
    if (alive(x) && alive(y)) uf.unite(x, y);
  for (const Analysis::Loop& l : a.loops) {
    BufKey first = nullptr;
    for (BufKey f : l.full)
      if (alive(f)) first ? uf.unite(f, first) : void(first = f);
  }
  // Rows: a row class may be the rows of several parent classes (FlashAttention's
  // row max and scale vectors are rows of both the scores and the output, tiles of
  // different widths). The parents stay separate classes; the row class takes the
  // rows of the first, and the others must hold the same rows on every thread.
  std::vector<std::pair<BufKey, BufKey>> row_links;  // (row member, parent member), in IR order
  bool changed = false;
  for (const Analysis::Loop& l : a.loops) {
    BufKey driver = nullptr;
    for (BufKey f : l.full)
      if (alive(f)) driver = f;
    for (BufKey r : l.rows) {
      if (!alive(r)) continue;
      if (!driver) {
        changed |= demote(r, "indexed by the leading variables of a T.Parallel loop whose other fragments are demoted");
        continue;
      }
      row_links.emplace_back(r, driver);
    }
  }
  for (auto& [row, src] : a.row_of) {
    if (alive(row) != alive(src)) {
      BufKey dead = alive(row) ? src : row;
      std::string why =
          str_cat("a register T.reduce between it and '", dead->name, "', which is demoted (", a.demoted.at(dead), ")");
      changed |= demote(row, why) | demote(src, why);
      continue;
    }
    if (alive(row)) row_links.emplace_back(row, src);
  }
  // Columns: (column member, parent member) links as for rows; `whole` are the
  // parents whose columns one thread must hold whole (reduced over dim 0, or read
  // [e, j] in a loop over j).
  std::vector<std::pair<BufKey, BufKey>> col_links;
  std::set<BufKey> whole;
  for (const Analysis::Loop& l : a.loops) {
    BufKey driver = nullptr;
    for (BufKey f : l.full)
      if (alive(f)) driver = f;
    for (BufKey c : l.cols) {
      if (!alive(c)) continue;
      if (!driver) {
        changed |= demote(c, "indexed by the last variable of a T.Parallel loop whose other fragments are demoted");
        continue;
      }
      col_links.emplace_back(c, driver);
    }
    for (BufKey p : l.col_parents) {
      if (!alive(p)) continue;
      if (!driver) {
        changed |= demote(p, "indexed [e, j] in a T.Parallel loop over j whose other fragments are demoted");
        continue;
      }
      col_links.emplace_back(driver, p);
      whole.insert(p);
    }
  }
  for (auto& [col, src] : a.col_of) {
    if (alive(col) != alive(src)) {
      BufKey dead = alive(col) ? src : col;
      std::string why =
          str_cat("a register T.reduce between it and '", dead->name, "', which is demoted (", a.demoted.at(dead), ")");
      changed |= demote(col, why) | demote(src, why);
      continue;
    }
    if (alive(col)) {
      col_links.emplace_back(col, src);
      whole.insert(src);
    }
  }
  if (changed) return false;
  // Classes, with their members.
  std::map<BufKey, std::vector<BufKey>> members;
  for (auto& [k, b] : a.candidates)
    if (alive(k)) members[uf.find(k)].push_back(k);
  std::map<BufKey, std::vector<BufKey>> root_parents;  // row class -> its parent classes
  for (auto& [r, p] : row_links) {
    auto& ps = root_parents[uf.find(r)];
    if (std::find(ps.begin(), ps.end(), uf.find(p)) == ps.end()) ps.push_back(uf.find(p));
  }
  std::map<BufKey, std::vector<BufKey>> col_parents;  // column class -> its parent classes
  for (auto& [c, p] : col_links) {
    auto& ps = col_parents[uf.find(c)];
    if (std::find(ps.begin(), ps.end(), uf.find(p)) == ps.end()) ps.push_back(uf.find(p));
  }
  std::set<BufKey> whole_roots;
  for (BufKey p : whole) whole_roots.insert(uf.find(p));
  std::map<BufKey, FragmentLayoutPtr> class_layout;
  std::map<BufKey, std::string> class_why;  // why a class has no layout
  std::function<FragmentLayoutPtr(BufKey, int)> layout_of = [&](BufKey root, int depth) -> FragmentLayoutPtr {
    if (auto it = class_layout.find(root); it != class_layout.end()) return it->second;
    auto fail = [&](const std::string& why) -> FragmentLayoutPtr {
      class_why.emplace(root, why);
      return nullptr;
    };
    if (depth > 8) return fail("its per-row vectors nest too deep");
    const auto& ms = members[root];
    auto shape = *const_shape(a.candidates[ms[0]]);
    FragmentLayoutPtr seed;
    BufKey seeded = nullptr;
    int64_t bytes = 16;
    for (BufKey m : ms) {
      if (*const_shape(a.candidates[m]) != shape)
        return fail(str_cat("one T.Parallel loop or T.copy ties it to '", m->name, "' of another shape"));
      if (auto it = a.seeds.find(m); it != a.seeds.end()) {
        // Two gemms fix different register layouts for fragments that one T.Parallel
        // loop or T.copy ties together: no layout serves both.
        if (seed && !seed->equals(*it->second)) {
          conflict = LayoutConflict{
              a.seed_spans[m],
              str_cat("layout conflict: fragment '", m->name, "' gets the layout ", it->second->str(),
                      " from this T.gemm, but fragment '", seeded->name,
                      "', used with it in one "
                      "T.Parallel loop or T.copy, gets ",
                      seed->str(), " from the T.gemm at ", a.seed_spans[seeded].str(),
                      "; give both gemms the same tile shape and policy, or copy through shared memory")};
          return nullptr;
        }
        seed = it->second;
        seeded = m;
      }
      int64_t nb = a.narrowest.count(m) ? a.narrowest[m] : elem_bytes(a.candidates[m]->dtype);
      bytes = std::min(bytes, nb);
    }
    FragmentLayoutPtr l;
    auto cols_it = col_parents.find(root);
    if (cols_it != col_parents.end()) {
      if (seed) return fail("a T.gemm fixes its layout, but it is also a per-column vector");
      if (root_parents.count(root)) return fail("it is used both as per-row and as per-column values");
      if (whole_roots.count(root)) return fail("it is both a per-column vector and the tile of one");
      for (BufKey parent : cols_it->second) {
        FragmentLayoutPtr p = layout_of(parent, depth + 1);
        if (!p) return fail(str_cat("it holds the columns of '", parent->name, "', which is demoted"));
        FragmentLayoutPtr c = FragmentLayout::cols(p);
        if (!c || shape != c->shape())
          return fail(
              str_cat("it is used as the columns of '", parent->name, "' (", p->str(), "), which do not match"));
        if (l && !l->equals(*c))
          return fail(str_cat("it holds the columns of both ", l->parent()->str(), " and ", p->str(),
                              ", whose columns are split differently over the threads"));
        l = c;
      }
      // Loaded from global memory by T.copy, a per-column vector whose columns several
      // threads hold costs each of them its own loads. Narrow scattered elements (a
      // uint8 mask over the columns of a 64x128 wgmma tile: 32 byte loads per thread,
      // whose latency ptxas leaves after the gemm) are one shared copy instead, each
      // element loaded once before the barrier: flash_decoding on an H100 took 42.0 us
      // in registers against 29.4 us staged. A few vector loads per thread (LayerNorm's
      // gamma and beta: 3 x 16 bytes) stay in registers.
      const int64_t held = l->local_size() * a.threads_of(ms[0]);
      const int64_t per_load = std::max<int64_t>(
          1, std::min<int64_t>(l->run(), 16 / std::max<int64_t>(1, elem_bytes(a.candidates[ms[0]]->dtype))));
      const int64_t loads = (l->local_size() + per_load - 1) / per_load;
      for (BufKey m : ms)
        if (a.loaded_from_global.count(m) && held > shape[0] && loads > 4)
          return fail(str_cat("it is a per-column vector that T.copy loads from global memory in ", loads,
                              " loads per thread, and ", held / shape[0],
                              " threads hold each column: one shared copy loads each element once"));
    } else if (whole_roots.count(root)) {
      // Reduced over dim 0, or read [e, j] by a loop over its columns: every thread
      // holds whole columns (one thread row), so both stay in the thread's registers.
      if (seed) return fail("a T.gemm fixes its layout, but its columns are reduced or read whole by one thread");
      if (root_parents.count(root)) return fail("it is a per-row vector, but its columns are read whole");
      int64_t threads = a.threads_of(ms[0]);
      l = FragmentLayout::blocked_columns(shape, threads, bytes);
      if (!l)
        return fail(str_cat("its columns are reduced or read whole by one thread, but its ", shape.back(),
                            " columns do not divide over the ", threads, " threads"));
    } else if (auto it = root_parents.find(root); it != root_parents.end()) {
      if (seed) return fail(str_cat("a T.gemm fixes its layout, but it is also a per-row vector"));
      for (BufKey parent : it->second) {
        FragmentLayoutPtr p = layout_of(parent, depth + 1);
        if (!p) return fail(str_cat("it holds the rows of '", parent->name, "', which is demoted"));
        // The rows of a 2-d parent [R, C] are [R]; a 1-d parent [n] is one row.
        bool rows_match = p->shape().size() == 2 && shape == std::vector<int64_t>{p->shape()[0]};
        rows_match |=
            p->shape().size() == 1 && p->kind() == FragmentLayout::Kind::Blocked && shape == std::vector<int64_t>{1};
        if (p->kind() == FragmentLayout::Kind::Rows || !rows_match)
          return fail(str_cat("it is used as the rows of '", parent->name, "' (", p->str(), "), which do not match"));
        FragmentLayoutPtr r = FragmentLayout::rows(p);
        if (!l) {
          l = r;
          continue;
        }
        // Rows shared by tiles whose row ownership differs: no register vector serves
        // both (the gemms' warp splits along M differ; the same policy fixes it).
        if (!l->same_rows(*r)) {
          for (BufKey par : it->second)
            for (BufKey m : members[par]) a.row_split_conflicts.insert(m);
          return fail(str_cat("it holds the rows of both ", l->parent()->str(), " and ", p->str(), " ('", parent->name,
                              "'), whose rows are split differently over the threads"));
        }
      }
    } else if (seed) {
      l = seed;
    } else {
      l = FragmentLayout::blocked(shape, a.threads_of(ms[0]), bytes);
    }
    class_layout[root] = l;
    return l;
  };
  for (auto& [root, ms] : members) {
    FragmentLayoutPtr l = layout_of(root, 0);
    if (conflict) return true;
    if (!l) {
      for (BufKey m : ms) changed |= demote(m, class_why.count(root) ? class_why[root] : "no layout fits its uses");
      continue;
    }
    for (BufKey m : ms) out.layouts[m] = l;
  }
  return !changed;
}

}  // namespace

SolveResult try_solve(Analysis& a) {
  SolveResult r;
  for (size_t round = 0; round <= a.candidates.size() + 1; ++round) {
    r.solution = Solution{};
    if (solve_round(a, r.solution, r.conflict)) break;  // (every other round demotes one)
  }
  if (r.conflict) r.solution = Solution{};
  return r;
}

Solution solve(Analysis& a) {
  SolveResult r = try_solve(a);
  if (r.conflict) throw_user_error(r.conflict->span, r.conflict->message);
  return r.solution;
}

// The shared operand tiles of the register gemms, and the layout each gets.
std::map<BufKey, std::pair<Buffer, SharedTileLayout>> operand_layouts(const Analysis& a, const Solution& s) {
  std::map<BufKey, std::pair<Buffer, SharedTileLayout>> out;
  for (const GemmUse& g : a.gemms) {
    if (!s.layouts.count(g.c)) continue;
    for (int i : {0, 1}) {
      const Buffer& b = g.op->regions[i].buffer;
      if (s.layouts.count(b.get())) continue;
      auto sh = *const_shape(b);
      bool wgmma = s.layouts.at(g.c)->kind() == FragmentLayout::Kind::WgmmaAccum;
      out[b.get()] = {b, SharedTileLayout{wgmma ? Layout::wgmma_swizzle(sh.back(), elem_bytes(b->dtype))
                                                : Layout::swizzle(sh.back(), elem_bytes(b->dtype)),
                                          wgmma}};
    }
  }
  // Tiles only stored: threads write them by rows of a fragment, whose unswizzled
  // rows (256 bytes and more apart) would meet in the same banks; the 128-byte
  // swizzle of the TMA store spreads them.
  for (const auto& [k, b] : a.store_tiles) {
    if (out.count(k) || s.layouts.count(k)) continue;
    auto sh = *const_shape(b);
    if ((sh.back() * elem_bytes(b->dtype)) % 128 != 0) continue;
    out[k] = {b, SharedTileLayout{Layout::wgmma_swizzle(sh.back(), elem_bytes(b->dtype)), true}};
  }
  return out;
}

}  // namespace tl::fragments
