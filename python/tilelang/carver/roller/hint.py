"""TileLang's roller Hint: one tile configuration a template recommends, with the
fields TileLang's examples read (block, warp, thread, rstep, reduce_thread,
pipeline_stage, use_async, use_tc, rasterization_plan, ...) and what the ranking
estimated for it (threads, smem_bytes, est_time in seconds)."""

from .rasterization import NoRasterization

__all__ = ["Hint"]


class Hint:
    """One recommended tile configuration. block: the output tile of one block; warp:
    the part one warp (simdgroup) computes with matrix instructions (use_tc); thread:
    the part one thread computes (without them); rstep: the reduction tile;
    reduce_thread: threads that share one reduction."""

    def __init__(self):
        self.arch = None
        self.use_tc = False
        self.block = []
        self.warp = []
        self.thread = []
        self.rstep = []
        self.reduce_thread = []
        self.rasterization_plan = NoRasterization()
        self.pipeline_stage = 1
        self.use_async = False
        self.block_reduction_depth = None
        self.split_k_factor = 1
        self.vectorize = {}
        self.threads = 0
        self.smem_bytes = 0
        self.est_time = 0.0

    def to_dict(self):
        d = {"block": self.block, "rstep": self.rstep, "threads": self.threads}
        if self.use_tc:
            d["warp"] = self.warp
            d["use_tc"] = True
        else:
            d["thread"] = self.thread
        if any(r > 1 for r in self.reduce_thread):
            d["reduce_thread"] = self.reduce_thread
        if self.pipeline_stage != 1:
            d["pipeline_stage"] = self.pipeline_stage
        return d

    @classmethod
    def from_dict(cls, d):
        hint = cls()
        for k, v in d.items():
            setattr(hint, k, v)
        return hint

    def __repr__(self):
        return str(self.to_dict())
