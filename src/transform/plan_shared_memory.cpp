// Shared memory by liveness: see plan_shared_memory.h and docs/design/cuda_lowering.md.
//
// Every leaf statement of a kernel gets a time; a loop stretches what it uses over
// all of its own times, so a tile used in a pipelined loop is live for the whole
// loop. T.ws regions side by side run at the same time: each starts its clock at
// the time the first of them starts. Buffers whose live times do not meet may share
// bytes when a block barrier separates them: the later one's first use comes in a
// statement at the top of its region (not inside a loop or branch) that starts
// after the earlier one's last use, and a barrier goes right before that statement.
#include "transform/plan_shared_memory.h"

#include <algorithm>
#include <functional>
#include <set>

#include "ir/visitor.h"
#include "layout/layout.h"
#include "support/logging.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/shared_writes.h"

namespace tl {

std::map<const BufferNode*, int64_t> tma_tile_alignment(const Stmt& body) {
  std::map<const BufferNode*, int64_t> out;
  for_each_expr(body, [&](const Expr& e) {
    Buffer b = tma_call_tile(e.as<CallNode>());
    if (!b.defined()) return;
    int64_t align = 128;
    if (b->layout) {
      auto cols = as_const_int(b->shape.back());
      int64_t span = cols ? *cols * b->dtype.bytes() : 128;
      align = std::max<int64_t>(128, b->layout->base_align() > 16 ? b->layout->base_align() : 8 * span);
    }
    out[b.get()] = std::max(out[b.get()], align);
  });
  return out;
}

namespace {

using BufKey = const BufferNode*;

bool carved(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn || b->scope == Scope::Fragment;
}

// The block-scope buffers in the pre-order of their Allocate statements (the order
// the code generator reads the offsets in).
std::vector<Buffer> allocations(const Stmt& body) {
  struct Collect : IRVisitor {
    std::vector<Buffer> buffers;
    using IRVisitor::visit;
    void visit(const AllocateNode* a) override {
      if (carved(a->buffer)) buffers.push_back(a->buffer);
      IRVisitor::visit(a);
    }
  } c;
  c.visit(body);
  return c.buffers;
}

struct Live {
  int64_t first = -1, last = -1;
  const StmtNode* first_top = nullptr;  // the top statement of its region with the first use
  int64_t first_top_start = 0;          // the time that statement starts
  std::set<int> regions;                // 0: outside T.ws regions; else 1 + the region's first thread
  int first_region = 0;
};

class Liveness {
 public:
  std::map<BufKey, Live> live;
  bool hand_written_regions = false;

  void walk(const Stmt& s, bool top) {
    if (!s.defined()) return;
    if (top) {
      top_ = s.get();
      top_start_ = now_ + 1;
    }
    switch (s.kind()) {
      case NodeKind::Seq: {
        bool prev_region = false;
        int64_t group_start = 0, group_end = 0;
        for (const Stmt& c : s.as<SeqNode>()->seq) {
          auto* a = c.as<AttrNode>();
          bool region = a && warp_group_range(a).second;
          if (region) {
            // Regions side by side run together: each from the same start.
            if (!prev_region) group_start = group_end = now_;
            now_ = group_start;
            walk_region(a, warp_group_range(a).first);
            group_end = std::max(group_end, now_);
            now_ = group_end;
          } else {
            walk(c, top);
          }
          prev_region = region;
        }
        return;
      }
      case NodeKind::Allocate:
        return walk(s.as<AllocateNode>()->body, top);
      case NodeKind::LetStmt:
        uses(s.as<LetStmtNode>()->value);
        return walk(s.as<LetStmtNode>()->body, top);
      case NodeKind::Attr: {
        auto* a = s.as<AttrNode>();
        if (warp_group_range(a).second) return walk_region(a, warp_group_range(a).first);
        // A block or thread op (one thread may run it): a barrier goes before it, not in it.
        return walk(a->body, false);
      }
      case NodeKind::For:
      case NodeKind::While: {
        int64_t start = now_ + 1;
        std::set<BufKey> before = touched_;
        touched_.clear();
        if (auto* f = s.as<ForNode>()) {
          uses(f->min), uses(f->extent);
          walk(f->body, false);
        } else {
          uses(s.as<WhileNode>()->cond);
          walk(s.as<WhileNode>()->body, false);
        }
        for (BufKey b : touched_) {  // every iteration uses them
          Live& l = live[b];
          l.first = std::min(l.first, start);
          l.last = std::max(l.last, now_);
        }
        touched_.insert(before.begin(), before.end());
        return;
      }
      case NodeKind::IfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        uses(n->cond);
        walk(n->then_case, false);
        walk(n->else_case, false);
        return;
      }
      default: {
        ++now_;
        for (BufKey b : buffers_in([&](IRVisitor& v) { v.visit(s); })) note(b);
        return;
      }
    }
  }

 private:
  void walk_region(const AttrNode* a, int64_t first_thread) {
    int saved = region_;
    region_ = 1 + int(first_thread);
    // The region's statements are the body of its `if (rank in range)`.
    const Stmt* body = &a->body;
    if (auto* i = a->body.as<IfThenElseNode>(); i && !i->else_case.defined()) {
      uses(i->cond);
      body = &i->then_case;
    }
    walk(*body, true);
    region_ = saved;
  }

  void uses(const Expr& e) {
    std::set<BufKey> found = buffers_in([&](IRVisitor& v) { v.visit(e); });
    if (found.empty()) return;
    ++now_;
    for (BufKey b : found) note(b);
  }

  // The block-scope buffers that `walk` (given a visitor) reaches.
  static std::set<BufKey> buffers_in(const std::function<void(IRVisitor&)>& walk) {
    struct Uses : IRVisitor {
      std::set<BufKey> found;
      using IRVisitor::visit;
      void visit_buffer(const Buffer& b) override {
        if (carved(b)) found.insert(b.get());
      }
    } u;
    walk(u);
    return u.found;
  }

  void note(BufKey b) {
    Live& l = live[b];
    if (l.first < 0 || now_ < l.first) {
      l.first = now_;
      l.first_top = top_;
      l.first_top_start = top_start_;
      l.first_region = region_;
    }
    l.last = std::max(l.last, now_);
    l.regions.insert(region_);
    touched_.insert(b);
  }

  int64_t now_ = 0;
  const StmtNode* top_ = nullptr;
  int64_t top_start_ = 0;
  int region_ = 0;
  std::set<BufKey> touched_;
};

// Inserts a block barrier before each of the given statements (none where one
// already stands right before it), and before those of `fenced` a generic -> async
// proxy fence ahead of the barrier: the bytes the statement's buffer takes were
// written by thread stores under another buffer's name and are now written by TMA,
// whose writes must land after them (and which a wgmma may read without a fence of
// its own, shared_writes.h).
class BarrierBefore : public IRMutator {
 public:
  BarrierBefore(std::set<const StmtNode*> at, std::set<const StmtNode*> fenced)
      : at_(std::move(at)), fenced_(std::move(fenced)) {}
  using IRMutator::mutate;
  Stmt mutate(const Stmt& s) override {
    Stmt out = IRMutator::mutate(s);
    if (!s.defined() || !at_.count(s.get())) return out;
    if (fenced_.count(s.get())) return seq({fence(), barrier(BarrierKind::Threads), out});
    return seq({barrier(BarrierKind::Threads), out});
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const SeqNode* op, const Stmt& self) override {
    std::vector<Stmt> out;
    for (const Stmt& c : op->seq) {
      auto* prev = out.empty() ? nullptr : out.back().as<BarrierNode>();
      if (prev && prev->barrier == BarrierKind::Threads && at_.count(c.get())) {
        // The barrier before it is already there: the fence goes before that one.
        if (fenced_.count(c.get())) out.insert(out.end() - 1, fence());
        out.push_back(IRMutator::mutate(c));
      } else {
        out.push_back(mutate(c));
      }
    }
    return seq(out);
  }

 private:
  static Stmt fence() { return evaluate(call_extern(dtype::Void, "tl::fence_proxy_async", {})); }

  std::set<const StmtNode*> at_, fenced_;
};

// The block-scope buffers some statement reads or writes. One that none does (a tile
// for a branch the kernel's parameters turned off, such as a bias tile without a bias)
// takes no bytes, as TileLang drops it.
std::set<BufKey> referenced(const Stmt& body) {
  struct Refs : IRVisitor {
    std::set<BufKey> found;
    using IRVisitor::visit;
    void visit(const AllocateNode* a) override { visit(a->body); }
    void visit_buffer(const Buffer& b) override { found.insert(b.get()); }
  } r;
  r.visit(body);
  return r.found;
}

bool has_regions(const Stmt& s) {
  return any_stmt(s, [](const Stmt& st) {
    auto* a = st.as<AttrNode>();
    return a && warp_group_range(a).second;
  });
}

class Planner : public IRMutator {
 public:
  Planner(const Target& target, bool reuse) : target_(target), reuse_(reuse) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Stmt body = op->body;
    auto* mark = body.as<AttrNode>();
    bool auto_ws = mark && mark->key == kAutoWarpSpecializedAttr;
    if (auto_ws) body = mark->body;
    // Hand-written T.ws regions synchronize on their own terms: no reuse there.
    bool reuse = reuse_ && (auto_ws || !has_regions(body));
    std::map<BufKey, Live> live;
    if (reuse) {
      Liveness l;
      l.walk(body, true);
      live = std::move(l.live);
    }
    std::vector<Buffer> bufs = allocations(body);
    std::map<BufKey, int64_t> align = tma_tile_alignment(body);
    const SharedWrites writes = shared_writes(body);
    struct Placed {
      BufKey b;
      int64_t at, end;
    };
    std::vector<Placed> placed;
    std::set<const StmtNode*> barriers, fenced;
    // Whether `later` may take bytes of `earlier` (earlier's uses all before it).
    auto separable = [&](BufKey earlier, BufKey later) {
      auto e = live.find(earlier), l = live.find(later);
      if (e == live.end() || l == live.end()) return false;
      const Live &x = e->second, &y = l->second;
      if (x.last < 0 || y.first < 0 || !y.first_top || x.last >= y.first_top_start) return false;
      // The barrier goes in the later buffer's region: the earlier one's other users
      // may only be the producer of an automatic warp specialization, whose copies the
      // consumers have all waited for.
      if (!x.regions.count(y.first_region)) return false;
      for (int r : x.regions)
        if (r != y.first_region && !(auto_ws && r > 1)) return false;
      return true;
    };
    int64_t total = 0;
    std::vector<int64_t> offsets;
    std::set<BufKey> used = referenced(body);
    std::vector<Buffer> sized;
    for (const Buffer& b : bufs) {
      if (!used.count(b.get())) {
        offsets.push_back(0);
        continue;
      }
      sized.push_back(b);
      auto count = as_const_int(b.num_elements());
      TL_ICHECK(count, "allocation of non-constant size reached codegen");
      int64_t bytes = (*count * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
      bytes = (bytes + 15) / 16 * 16;
      int64_t a = b->layout ? b->layout->base_align() : 16;
      if (auto it = align.find(b.get()); it != align.end()) a = std::max(a, it->second);
      a = std::max<int64_t>(a, 16);
      auto compatible = [&](const Placed& p) { return separable(p.b, b.get()) || separable(b.get(), p.b); };
      auto fits = [&](int64_t at) {
        for (const Placed& p : placed)
          if (!compatible(p) && at < p.end && p.at < at + bytes) return false;
        return true;
      };
      std::vector<int64_t> candidates{0};
      for (const Placed& p : placed) candidates.push_back((p.end + a - 1) / a * a);
      std::sort(candidates.begin(), candidates.end());
      int64_t at = -1;
      for (int64_t c : candidates)
        if (fits(c)) {
          at = c;
          break;
        }
      TL_ICHECK(at >= 0, "no place for shared buffer ", b->name);
      for (const Placed& p : placed) {
        if (!(at < p.end && p.at < at + bytes)) continue;  // shares no bytes
        BufKey later = separable(p.b, b.get()) ? b.get() : p.b, earlier = later == p.b ? b.get() : p.b;
        barriers.insert(live.at(later).first_top);
        if (writes.tma.count(later) && writes.generic.count(earlier)) fenced.insert(live.at(later).first_top);
        log(LogLevel::Debug, str_cat("shared memory: ", b->name, " reuses bytes ", at, "..", at + bytes, " of ",
                                     p.b->name, " (a barrier before the later one's first use)"));
      }
      placed.push_back({b.get(), at, at + bytes});
      offsets.push_back(at);
      total = std::max(total, at + bytes);
    }
    check_fits(op, sized, total);
    if (!barriers.empty()) body = BarrierBefore(barriers, fenced).mutate(body);
    if (auto_ws) body = attr_stmt(kAutoWarpSpecializedAttr, mark->value, body);
    offsets.push_back(total);
    return with_body(op, attr_stmt(kSharedOffsetsAttr, offsets, body));
  }

 private:
  // Stops a kernel that asks for more shared memory than a block may have: the
  // driver would refuse the launch with no word of which buffers are too big.
  void check_fits(const KernelLaunchNode* op, std::vector<Buffer> bufs, int64_t total) const {
    int64_t limit = target_.max_shared_memory_per_block();
    if (limit == 0 || total <= limit) return;
    auto bytes = [](const Buffer& b) {
      return (*as_const_int(b.num_elements()) * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
    };
    std::stable_sort(bufs.begin(), bufs.end(), [&](const Buffer& a, const Buffer& b) { return bytes(a) > bytes(b); });
    std::string biggest;
    for (size_t i = 0; i < bufs.size() && i < 4; ++i)
      biggest += str_cat(i ? ", " : "", "'", bufs[i]->name, "' ", bytes(bufs[i]), " (", shape_str(bufs[i]), " ",
                         bufs[i]->dtype.name(), ")");
    throw_user_error(op->span, str_cat("the kernel needs ", total, " bytes of shared memory, but a thread block on ",
                                       target_.arch, " may have at most ", limit, " (", limit / 1024,
                                       " KB); the biggest shared buffers (pipeline stages included): ", biggest,
                                       ". Use smaller tiles or fewer num_stages"));
  }

  static std::string shape_str(const Buffer& b) {
    std::string out;
    for (size_t d = 0; d < b->shape.size(); ++d) {
      auto n = as_const_int(b->shape[d]);
      out += str_cat(d ? "x" : "", n ? std::to_string(*n) : std::string("?"));
    }
    return out;
  }

  const Target& target_;
  bool reuse_;
};

}  // namespace

PrimFunc plan_shared_memory(const PrimFunc& f, const Target& target, bool reuse) {
  return f.with_body(Planner(target, reuse).mutate(f->body));
}

}  // namespace tl
