// The phases of pipeline_loops (src/transform/pipeline_loops.cpp) and the plans they
// hand each other. For each T.Pipelined loop, in order:
//   1. schedule.cpp   which statements form units, in which stage and order (Schedule);
//   2. staging.cpp    the staged tiles, their versions, and the TMA copies grouped on
//                     mbarriers (Staging; tma_copy.h plans each copy);
//   3. ws_choice.cpp  whether a producer warpgroup takes the copies (WsPlan);
//   4. emit.cpp       the prologue, steady-state and tail steps with their waits;
//                     producer.cpp the producer warpgroup's loop of a warp-specialized
//                     pipeline.
// Each phase is a function of the plans before it and of the loop's LoopContext
// (plan_warp_specialization also completes the Staging's mbarrier groups); nothing
// is kept from one loop to the next.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ir/ir.h"
#include "transform/lower_fragments.h"
#include "transform/tma_copy.h"

namespace tl::pipeliner {

using BufKey = const BufferNode*;

// A condition (cond) or a binding (var = value) on the way from a persistent loop to
// the pipelined loop inside it, as written.
struct PathStep {
  Expr cond;
  Var var;
  Expr value;
};

// What the pass knows where it meets a pipelined loop.
struct LoopContext {
  const KernelLaunchNode* launch = nullptr;     // the enclosing T.Kernel, if any
  bool cp_async = false;                        // producer copies become cp.async (sm_80+)
  const std::set<BufKey>* wgmma_acc = nullptr;  // lower_fragments' wgmma accumulators (and register A)
  // Names bound around the loop (`loop_range = T.min(...)`), with their values.
  const std::map<const VarNode*, Expr>* outer_lets = nullptr;
  // TMA for eligible producers (null: none): the kernel's parameters and the layouts
  // lower_fragments will give the shared gemm operands.
  const std::vector<Param>* tma_params = nullptr;
  const std::map<BufKey, SharedTileLayout>* tma_layouts = nullptr;
  // Warp specialization: whether this loop is the kernel's candidate (ws_candidate),
  // the persistent loop around it, if any, and the conditions and bindings between
  // the two; whether tiles may be multicast in a cluster.
  bool ws_candidate = false;
  const ForNode* ws_outer = nullptr;
  const std::vector<PathStep>* ws_path = nullptr;
  bool multicast = true;
};

// ---------------------------------------------------------------- 1. schedule

// One unit of a pipelined loop's schedule: a statement, or a `group` of them.
struct Unit {
  std::vector<Stmt> stmts;
  int64_t stage = 0;
  int64_t order = 0;
  bool producer = false;  // only whole-tile global -> shared copies
  bool async = false;     // a wgmma gemm left in flight into the next step
  std::set<BufKey> writes, touches;
  SourceSpan span;
};

// Unit u of iteration k runs in step k + units[u].stage, at position pos[u] of the step.
struct Schedule {
  std::vector<Unit> units;
  std::vector<size_t> pos;  // producers first, right after the step's barrier; the rest by order
  int64_t max_stage = 0;
  bool any_async = false;  // some unit's wgmma stays in flight into the next step
};

// The schedule of the T.Pipelined loop `op` (num_stages=, or order=/stage=/group=
// given by hand), or nullopt when the loop stays as it is. Throws the user errors
// of a by-hand schedule that does not fit the body.
std::optional<Schedule> schedule_loop(const ForNode* op, const std::set<BufKey>& wgmma_acc);

// The buffers a statement writes (stores, and the region each tile op writes by the
// op table), and every buffer it reads or writes.
// The loop of `s` when it is a T.unroll loop of constant extent (at most 8) whose body is
// one gemm, K slices issued back to back (schedule.cpp mark_async, emit.cpp
// expand_sliced_gemms); else nullptr.
const ForNode* sliced_gemm_loop(const Stmt& s);
std::set<BufKey> written(const Stmt& s);
std::set<BufKey> touched(const Stmt& s);

// ---------------------------------------------------------------- 2. staging

// A staged tile: the buffer with a leading version dimension, and how many versions.
struct Staged {
  Buffer buffer;
  int64_t versions;
};

// The TMA copies of one producer stage whose tiles have the same number of versions
// and the same first reader: they complete on one mbarrier per version (`bars`), armed once per step.
struct TmaGroup {
  int64_t stage = 0, versions = 0;
  size_t reader = 0;  // the unit that first reads the group's tiles
  Buffer bars;
  Buffer empty;      // warp-specialized loops: the consumers' releases, one per version
  int64_t ctas = 1;  // blocks whose consumers release each version (a tile of the group is multicast)
  // Warp-specialized loops whose consumers read the group's tiles only through wgmma,
  // in whole warpgroups: one release per warpgroup (tl::mbarrier_arrive_warpgroup).
  bool per_warpgroup = false;
  int64_t bytes = 0;
  std::set<BufKey> tiles;  // the original (unstaged) tiles
};

struct Staging {
  std::map<BufKey, Staged> staged;
  std::map<const TileOpNode*, std::pair<TmaCopy, size_t>> tma;  // producer copy -> its TMA form and group
  std::vector<TmaGroup> groups;
  std::set<BufKey> tma_tiles;  // the staged tiles TMA fills
};

// The staged tiles of `schedule` (written by producers only, used nowhere in
// `outside_uses`), with the TMA copies among their producers; nullopt when a tile
// cannot be staged (the loop then stays as it is).
std::optional<Staging> stage_tiles(const Schedule& schedule, const std::set<BufKey>& outside_uses,
                                   const LoopContext& ctx);

// The schedule must keep every pair of statements that touch a common buffer (one of
// them writing it) in their original order; throws the user error when it does not.
void check_dependences(const Schedule& schedule, const std::map<BufKey, Staged>& staged);

// `s` with every use of a staged tile at the version of iteration `iter`.
Stmt at_version(const Stmt& s, const std::map<BufKey, Staged>& staged, const Expr& iter);

// ---------------------------------------------------------------- 3. warp specialization

struct WsPlan {
  bool on = false;      // a producer warpgroup issues the copies
  bool rounds = false;  // ... for each round of the persistent loop around the pipeline
  Expr min, extent;     // the loop's bounds, with the names bound around it substituted
  // Per group: the unit that releases its versions to the producer (units.size():
  // none), and whether consumers read its tiles other than through wgmma.
  std::vector<size_t> last_reader;
  std::vector<bool> generic;
};

// The pipelined loop a kernel's producer warpgroup may take over, and the persistent
// loop around it, if any (both null when none).
std::pair<const ForNode*, const ForNode*> ws_candidate(const KernelLaunchNode* launch);

// Whether the pipeline of `op` is warp-specialized; fills in the groups' releases
// (empty mbarriers, per_warpgroup) and plans multicast copies in `staging`.
WsPlan plan_warp_specialization(const ForNode* op, const Schedule& schedule, Staging& staging, const LoopContext& ctx);

// ---------------------------------------------------------------- 4. emission

// A persistent pipeline's parts, for its mark around the persistent loop.
struct RoundsPipeline {
  Stmt init, producer;
  std::vector<TmaGroup> groups;
  int64_t consumers;
  Buffer count;  // the consumers' iteration counter
};

struct EmittedLoop {
  Stmt stmt;
  std::optional<RoundsPipeline> rounds;  // for the persistent loop's mark (ws_region)
};

// The pipelined loop `op` as its schedule's steps; `lower_consumer` rewrites a
// consumer statement once it is placed (the pass's own visit, for nested loops).
EmittedLoop emit_pipeline(const ForNode* op, const Schedule& schedule, const Staging& staging, const WsPlan& ws,
                          const LoopContext& ctx, const std::function<Stmt(const Stmt&)>& lower_consumer);

// The statements TMA bookkeeping becomes are ordered by the mbarriers, not by block
// barriers: the attribute keeps plan_barriers away from them.
Stmt unplanned(Stmt s);
Expr address_of(const Buffer& b, std::vector<Expr> idx);

// The producer warpgroup's part of a warp-specialized pipeline whose consumers' steps
// are `consumer` (producer.cpp): the loop marked for warp_specialize, or, with
// `rounds_count` (the consumers' iteration counter), the consumers alone, the parts
// for the persistent loop's mark being returned in `rounds`.
Stmt warp_specialized(Stmt consumer, const ForNode* op, const Schedule& schedule, const Staging& staging,
                      const WsPlan& ws, const LoopContext& ctx, const Buffer& rounds_count,
                      std::optional<RoundsPipeline>& rounds);

// The mark warp_specialize splits: the mbarriers, their initialization, the
// producer's loop and the consumers' part.
Stmt ws_region(const Stmt& init, const Stmt& producer, const Stmt& consumer, const std::vector<TmaGroup>& groups,
               int64_t consumers);

}  // namespace tl::pipeliner
