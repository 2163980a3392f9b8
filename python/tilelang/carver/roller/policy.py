"""The search behind the roller templates: enumerate the tile configurations that fit
a device (shared memory per block, threads per block, registers, matrix-instruction
granularity), estimate each one's time on a roofline model of the device (multiprocessor
waves, per-warp operand reuse, pipeline depth, global and L2 traffic), and return the
fastest first. The model ranks configs; it does not promise times: tune the top few."""

import math
import re

from tilelang.tools.analyzer import _gemm_kind

from .hint import Hint
from .rasterization import NoRasterization, Rasterization2DColumn

__all__ = ["attention_hints", "dtype_bytes", "gemv_hints", "matmul_hints", "reduce_hints"]

# L2 serves the tiles blocks of one wave share at about this multiple of DRAM bandwidth.
_L2_SPEEDUP = 3.0
# How well a pipeline of n stages hides global-memory latency (1: no pipelining).
_STAGE_EFFICIENCY = {1: 0.6, 2: 0.85, 3: 1.0, 4: 1.0}
# A thread's 32-bit registers the accumulators may take without spilling (a Metal
# thread has about half of a CUDA thread's).
_ACCUM_REGISTERS = 128
_ACCUM_REGISTERS_METAL = 64
# Each step of a k loop costs a barrier and address arithmetic: about this many
# elements of k worth of math.
_K_STEP_OVERHEAD = 4
# The threads one CUDA multiprocessor (or Metal core, CDNA compute unit) keeps resident.
_THREADS_PER_SM = 2048
# The panel width of T.use_swizzle TileLang's examples use.
_PANEL = 10


def dtype_bytes(dtype):
    """Bytes of one element of `dtype` (a name or a T dtype; sub-byte types give a
    fraction)."""
    name = str(dtype)
    if name == "bool":
        return 1
    m = re.search(r"(\d+)", name)
    if not m:
        raise ValueError(f"cannot tell the width of dtype {name!r}")
    return int(m.group(1)) / 8


def _pow2_ceil(n):
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def _peak_flops(arch, kind):
    tflops = arch.peak_tflops
    peak = tflops.get(kind) or tflops.get("fp16") or tflops.get("fp32")
    return (peak or 0.05 * arch.sm_count) * 1e12  # the CPU: about 50 GFLOPS a core


def _bandwidth(arch):
    return (arch.bandwidth_gbps or 20) * 1e9


def _blocks_per_sm(arch, threads, smem, registers_per_thread):
    limit = max(1, _THREADS_PER_SM // threads)
    if smem:
        limit = min(limit, arch.shared_memory_per_sm // smem)
    if arch.registers_per_sm:
        limit = min(limit, arch.registers_per_sm // (threads * registers_per_thread))
    return max(0, min(limit, 32))


def _wave_time(arch, blocks, per_sm, compute_s, memory_s):
    """The estimated time of `blocks` blocks, `per_sm` resident per multiprocessor, whose
    math at full machine occupancy takes compute_s and whose traffic takes memory_s."""
    concurrent = arch.sm_count * per_sm
    waves = math.ceil(blocks / concurrent)
    occupancy = blocks / (waves * concurrent)  # idle multiprocessors neither compute nor load
    return max(compute_s, memory_s) / occupancy


def _stages(arch):
    if arch.platform in ("CUDA", "CDNA"):
        return [2, 3, 4]
    if arch.platform == "Metal":
        return [1, 2]
    return [1]


def _tensor_core(arch, in_dtype):
    if not arch.available_tensor_instructions:
        return None
    name = str(in_dtype)
    if arch.platform == "Metal" and name not in ("float16", "bfloat16", "float32"):
        return None
    if arch.platform in ("CUDA", "CDNA") and not (
        name in ("float16", "bfloat16", "float32", "int8", "uint8") or name.startswith("float8")
    ):
        return None
    return arch.available_tensor_instructions[0].shape


def _finish(hints, topk):
    hints.sort(key=lambda h: (h.est_time, h.smem_bytes, -h.threads))
    return hints[:topk]


def matmul_hints(arch, M, N, K, in_dtype="float16", out_dtype="float16", accum_dtype="float32",
                 topk=10):  # fmt: skip
    """The topk block tiles of C[M, N] = A[M, K] @ B[K, N] on `arch`."""
    in_b, out_b, acc_b = dtype_bytes(in_dtype), dtype_bytes(out_dtype), dtype_bytes(accum_dtype)
    mma = _tensor_core(arch, in_dtype)
    kind = _gemm_kind(str(in_dtype)) if mma else "fp32"
    peak, bw = _peak_flops(arch, kind), _bandwidth(arch)
    tiles = [16, 32, 64, 128, 256]
    block_ms = [b for b in tiles if b <= max(16, _pow2_ceil(M))]
    block_ns = [b for b in tiles if b <= max(16, _pow2_ceil(N))]
    k_min = 8 if arch.platform == "Metal" else max(16, int(32 / in_b)) if mma else 8
    block_ks = sorted({int(n / in_b) for n in (32, 64, 128)} | {k_min})
    block_ks = [k for k in block_ks if k_min <= k <= max(k_min, _pow2_ceil(K))]
    accum_limit = _ACCUM_REGISTERS_METAL if arch.platform == "Metal" else _ACCUM_REGISTERS
    hints = []
    for bm in block_ms:
        for bn in block_ns:
            if bm * bn * out_b > arch.smem_cap:
                continue
            for wm, wn, threads in _matmul_workers(arch, bm, bn, mma):
                accum_regs = bm * bn * acc_b / 4 / threads
                if accum_regs > accum_limit:
                    continue
                if (
                    mma
                ):  # per-warp operand reuse: a warp tile of 4 x 4 instructions keeps the units fed
                    reuse = min(1.0, wm * wn / (wm + wn) / (2 * mma[0]))
                else:
                    tm, tn = wm, wn
                    reuse = min(1.0, tm * tn / (tm + tn) / 2)
                for bk in block_ks:
                    for stages in _stages(arch):
                        # the pipelined A and B tiles, and C staged through shared memory
                        # on its way out (as TileLang's GEMM examples write it)
                        smem = stages * (bm + bn) * bk * in_b + bm * bn * out_b
                        if smem > arch.smem_cap:
                            continue
                        per_sm = _blocks_per_sm(arch, threads, smem, int(accum_regs) + 64)
                        if per_sm == 0:
                            continue
                        grid_m, grid_n = math.ceil(M / bm), math.ceil(N / bn)
                        blocks = grid_m * grid_n
                        kk = math.ceil(K / bk) * bk
                        flops = 2 * blocks * bm * bn * kk
                        compute = flops / (peak * reuse * _STAGE_EFFICIENCY[stages])
                        compute *= 1 + _K_STEP_OVERHEAD / bk
                        traffic = blocks * (bm + bn) * kk * in_b / _L2_SPEEDUP + M * N * out_b
                        h = Hint()
                        h.arch = arch
                        h.use_tc = bool(mma)
                        h.block = [bm, bn]
                        if mma:
                            h.warp = [wm, wn]
                        else:
                            h.thread = [wm, wn]
                        h.rstep = [bk]
                        h.pipeline_stage = stages
                        h.use_async = stages > 1 and arch.platform in ("CUDA", "CDNA")
                        h.threads = threads
                        h.smem_bytes = int(smem)
                        if blocks > arch.sm_count * per_sm:
                            h.rasterization_plan = Rasterization2DColumn(_PANEL)
                        else:
                            h.rasterization_plan = NoRasterization()
                        h.est_time = _wave_time(arch, blocks, per_sm, compute, traffic / bw)
                        hints.append(h)
    return _finish(hints, topk)


def _matmul_workers(arch, bm, bn, mma):
    """(warp_m, warp_n, threads) splits of a bm x bn block: warp tiles of matrix
    instructions with mma, else per-thread tiles (tm, tn)."""
    out = []
    if mma:
        for wm in (16, 32, 64, 128):
            for wn in (16, 32, 64, 128):
                if wm > bm or wn > bn or bm % wm or bn % wn or wm % mma[0] or wn % mma[1]:
                    continue
                threads = (bm // wm) * (bn // wn) * arch.warp_size
                if threads <= arch.max_threads_per_block and (bm // wm) * (bn // wn) <= 16:
                    out.append((wm, wn, threads))
        return out
    for tm in (1, 2, 4, 8):
        for tn in (1, 2, 4, 8):
            if bm % tm or bn % tn:
                continue
            threads = (bm // tm) * (bn // tn)
            if 32 <= threads <= min(arch.max_threads_per_block, 256):
                out.append((tm, tn, threads))
    return out


def gemv_hints(arch, N, K, in_dtype="float16", out_dtype="float16", accum_dtype="float32", topk=10):
    """The topk tiles of y[N] = B[N, K] @ x[K]: block = [1, outputs per block], thread =
    [1, outputs per thread group], reduce_thread = [threads along K], rstep = [K per step]."""
    in_b = dtype_bytes(in_dtype)
    vec = max(1, int(16 / in_b))  # 16-byte loads
    bw = _bandwidth(arch)
    hints = []
    for bn in (1, 2, 4, 8, 16, 32, 64, 128):
        if bn > max(1, _pow2_ceil(N)):
            continue
        for rt in (4, 8, 16, 32, 64, 128, 256):
            threads = bn * rt
            if threads > arch.max_threads_per_block or threads < min(32, _pow2_ceil(N * K)):
                continue
            for unroll in (1, 2, 4):
                bk = rt * vec * unroll
                if bk > max(vec, _pow2_ceil(K)) and unroll > 1:
                    continue
                per_sm = _blocks_per_sm(arch, threads, bn * rt * 4, 32)
                if per_sm == 0:
                    continue
                blocks = math.ceil(N / bn)
                kk = math.ceil(K / bk) * bk
                traffic = blocks * bn * kk * in_b + K * in_b * blocks / _L2_SPEEDUP
                # a reduction across more than a warp goes through shared memory
                combine = 1.0 + (0.05 if rt > arch.warp_size else 0.0)
                h = Hint()
                h.arch = arch
                h.block = [1, bn]
                h.thread = [1, bn]
                h.reduce_thread = [rt]
                h.rstep = [bk]
                h.vectorize = {"B": vec}
                h.threads = threads
                h.smem_bytes = bn * rt * 4 if rt > arch.warp_size else 0
                h.est_time = _wave_time(arch, blocks, per_sm, 0.0, traffic * combine / bw)
                hints.append(h)
    return _finish(hints, topk)


def reduce_hints(arch, structure, shape, dtype="float16", topk=10):
    """The topk tiles of a reduction over the R axes of `shape` (structure such as
    "SSR": S a kept axis, R a reduced one): block = the kept tile (one entry per S
    axis, the innermost S axis tiled), rstep = the reduced extent per step (one per R
    axis, the innermost tiled), reduce_thread = threads along the reduction."""
    structure = structure.upper()
    if len(structure) != len(shape) or set(structure) - {"S", "R"}:
        raise ValueError(
            f"reduce structure must be a string of S and R, one per axis of shape {list(shape)}; "
            f"got {structure!r}"
        )
    if "S" not in structure:
        raise ValueError(f"reduce structure needs an S (kept) axis; got {structure!r}")
    elem = dtype_bytes(dtype)
    s_axes = [d for d, c in zip(shape, structure) if c == "S"]
    r_axes = [d for d, c in zip(shape, structure) if c == "R"] or [1]  # "SS": a copy
    spatial, reduced = math.prod(s_axes), math.prod(r_axes)
    inner_reduce = structure[-1] == "R"
    bw = _bandwidth(arch)
    hints = []
    for bs in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        if bs > max(1, _pow2_ceil(s_axes[-1])):
            continue
        for rt in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            threads = bs * rt
            if threads > arch.max_threads_per_block or threads < min(
                32, _pow2_ceil(spatial * reduced)
            ):
                continue
            if rt > 1 and "R" not in structure:
                continue
            for rs in (rt, 2 * rt, 4 * rt, 8 * rt):
                if rs > max(rt, _pow2_ceil(r_axes[-1])):
                    continue
                per_sm = _blocks_per_sm(arch, threads, bs * rt * 4, 32)
                if per_sm == 0:
                    continue
                blocks = math.ceil(s_axes[-1] / bs) * (spatial // s_axes[-1])
                padded = math.ceil(r_axes[-1] / rs) * rs * (reduced // r_axes[-1])
                # contiguous bytes one warp reads at a time along the innermost axis
                run = (min(rt, arch.warp_size) if inner_reduce else min(bs, arch.warp_size)) * elem
                coalescing = min(1.0, max(run, 4) / 128)
                traffic = blocks * bs * padded * elem / coalescing
                h = Hint()
                h.arch = arch
                h.block = [1] * (len(s_axes) - 1) + [bs]
                h.thread = [1] * (len(s_axes) - 1) + [bs]
                if "R" in structure:
                    h.rstep = [r_axes[i] for i in range(len(r_axes) - 1)] + [rs]
                    h.reduce_thread = [1] * (len(r_axes) - 1) + [rt]
                h.threads = threads
                h.smem_bytes = bs * rt * 4 if rt > arch.warp_size else 0
                h.est_time = _wave_time(arch, blocks, per_sm, 0.0, traffic / bw)
                hints.append(h)
    return _finish(hints, topk)


def attention_hints(arch, batch, heads, head_dim, seq_len, seq_kv_len, is_causal=False,
                    in_dtype="float16", accum_dtype="float32", topk=10):  # fmt: skip
    """The topk tiles of attention O = softmax(Q K^T) V: block = [query rows per block,
    key/value rows per step], warp = [query rows per warp, key/value rows], rstep =
    [head_dim], pipeline_stage for the K/V copies."""
    in_b, acc_b = dtype_bytes(in_dtype), dtype_bytes(accum_dtype)
    mma = _tensor_core(arch, in_dtype)
    kind = _gemm_kind(str(in_dtype)) if mma else "fp32"
    peak, bw = _peak_flops(arch, kind), _bandwidth(arch)
    granule = mma[0] if mma else 1
    hints = []
    for bm in (16, 32, 64, 128, 256):
        if bm > max(16, _pow2_ceil(seq_len)):
            continue
        for bn in (16, 32, 64, 128, 256):
            if bn > max(16, _pow2_ceil(seq_kv_len)):
                continue
            for warps in (1, 2, 4, 8):
                wm = bm // warps
                threads = warps * arch.warp_size
                if wm < granule or bm % warps or threads > arch.max_threads_per_block:
                    continue
                regs = (bm * head_dim + bm * bn) * acc_b / 4 / threads
                if regs > 2 * _ACCUM_REGISTERS:
                    continue
                for stages in _stages(arch):
                    smem = (bm * head_dim + stages * 2 * bn * head_dim) * in_b
                    if smem > arch.smem_cap:
                        continue
                    per_sm = _blocks_per_sm(arch, threads, smem, int(regs) + 64)
                    if per_sm == 0:
                        continue
                    blocks = batch * heads * math.ceil(seq_len / bm)
                    steps = math.ceil(seq_kv_len / bn)
                    if is_causal:
                        steps = max(1, (steps + 1) // 2)
                    flops = 4 * blocks * bm * steps * bn * head_dim
                    reuse = min(1.0, wm * bn / (wm + bn) / (2 * granule)) if mma else 0.25
                    compute = flops / (peak * reuse * _STAGE_EFFICIENCY[stages])
                    traffic = blocks * steps * 2 * bn * head_dim * in_b / _L2_SPEEDUP
                    traffic += 2 * batch * heads * seq_len * head_dim * in_b
                    h = Hint()
                    h.arch = arch
                    h.use_tc = bool(mma)
                    h.block = [bm, bn]
                    h.warp = [wm, bn]
                    h.rstep = [head_dim]
                    h.pipeline_stage = stages
                    h.use_async = stages > 1 and arch.platform in ("CUDA", "CDNA")
                    h.threads = threads
                    h.smem_bytes = int(smem)
                    h.est_time = _wave_time(arch, blocks, per_sm, compute, traffic / bw)
                    hints.append(h)
    return _finish(hints, topk)
