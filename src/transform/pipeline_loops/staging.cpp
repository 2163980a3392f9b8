// Phase 2 of pipeline_loops (plan.h): the shared tiles the producers fill get one
// version per step between the copy and its last reader; the producer copies TMA can
// do are grouped on one mbarrier per version.
#include "ir/visitor.h"
#include "transform/pipeline_loops/plan.h"

namespace tl::pipeliner {
namespace {

// Every use of a staged tile gets the version of iteration `iter` in front.
class AddStage : public IRMutator {
 public:
  AddStage(const std::map<BufKey, Staged>& staged, Expr iter) : staged_(staged), iter_(std::move(iter)) {}
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = staged_.find(b.get());
    return it == staged_.end() ? b : it->second.buffer;
  }

 protected:
  using IRMutator::visit;
  Expr version(const Staged& st) const { return floormod(iter_, int_imm(st.versions)); }
  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{version(it->second)};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_load(it->second.buffer, idx, op->span);
  }
  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{version(it->second)};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_store(it->second.buffer, mutate(op->value), idx, op->span);
  }
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    std::vector<BufferRegion> regions;
    for (const BufferRegion& r : op->regions) {
      auto it = staged_.find(r.buffer.get());
      if (it == staged_.end()) {
        regions.push_back(mutate_region(r));
        continue;
      }
      BufferRegion nr{it->second.buffer, {Range{version(it->second), int_imm(1)}}};
      for (const Range& rg : r.ranges) nr.ranges.push_back(Range{mutate(rg.min), mutate(rg.extent)});
      regions.push_back(nr);
    }
    std::vector<Expr> args;
    for (const Expr& a : op->args) args.push_back(mutate(a));
    return tile_op(op->op, regions, args, op->attrs, op->span);
  }

 private:
  const std::map<BufKey, Staged>& staged_;
  Expr iter_;
};

}  // namespace

Stmt at_version(const Stmt& s, const std::map<BufKey, Staged>& staged, const Expr& iter) {
  return AddStage(staged, iter).mutate(s);
}

std::optional<Staging> stage_tiles(const Schedule& schedule, const std::set<BufKey>& outside_uses,
                                   const LoopContext& ctx) {
  // The staged tiles: written by producers only, used nowhere outside the loop.
  // A tile written in stage sp and read in stage sc needs sc - sp + 1 versions.
  const std::vector<Unit>& units = schedule.units;
  const std::vector<size_t>& pos = schedule.pos;
  Staging out;
  std::map<BufKey, Staged>& staged = out.staged;
  std::map<const TileOpNode*, std::pair<TmaCopy, size_t>>& tma = out.tma;
  std::vector<TmaGroup>& groups = out.groups;
  for (const Unit& p : units) {
    if (!p.producer) continue;
    for (const Stmt& s : p.stmts) {
      auto* copy = s.as<TileOpNode>();
      const Buffer& b = copy->regions[1].buffer;
      if (staged.count(b.get()) || outside_uses.count(b.get())) return std::nullopt;
      int64_t versions = 1;
      for (const Unit& c : units) {
        if (&c == &p || !c.touches.count(b.get())) continue;
        if (c.writes.count(b.get()) || c.stage < p.stage) return std::nullopt;
        versions = std::max(versions, c.stage - p.stage + 1 + (c.async ? 1 : 0));
      }
      std::vector<Expr> shape{int_imm(versions)};
      for (const Expr& e : b->shape) shape.push_back(e);
      Buffer tile = Buffer::make(b->name, b->dtype, shape, b->scope, {}, b->span);
      if (b->layout) tile = with_layout(tile, b->layout);  // T.annotate_layout's (apply_shared_layouts)
      std::optional<TmaCopy> t;
      if (ctx.tma_params && ctx.launch) t = plan_tma_copy(copy, *ctx.tma_params, *ctx.tma_layouts);
      if (t) {
        if (t->layout) tile = with_layout(tile, t->layout);  // the swizzle TMA writes
        // Tiles share an mbarrier when their first reader is the same: a reader
        // then waits for its own tiles only (FlashAttention's Q K^T does not wait
        // for V).
        size_t reader = units.size();
        for (size_t c = 0; c < units.size(); ++c)
          if (!units[c].producer && units[c].touches.count(b.get()) &&
              (reader == units.size() ||
               std::make_pair(units[c].stage, pos[c]) < std::make_pair(units[reader].stage, pos[reader])))
            reader = c;
        size_t g = 0;
        while (g < groups.size() &&
               !(groups[g].stage == p.stage && groups[g].versions == versions && groups[g].reader == reader))
          ++g;
        if (g == groups.size()) {
          TmaGroup fresh;
          fresh.stage = p.stage;
          fresh.versions = versions;
          fresh.reader = reader;
          fresh.bars = Buffer::make(str_cat(b->name, "_full"), dtype::UInt64, {int_imm(versions)}, Scope::Shared);
          groups.push_back(fresh);
        }
        groups[g].bytes += t->bytes;
        groups[g].tiles.insert(b.get());
        tma[copy] = {*t, g};
      }
      staged[b.get()] = Staged{tile, versions};
    }
  }
  // (A group's bytes stay within an mbarrier's tx-count range, 2^20 - 1: they fit
  // in shared memory.)
  for (const auto& [copy, tg] : tma) out.tma_tiles.insert(copy->regions[1].buffer.get());
  return out;
}

}  // namespace tl::pipeliner
