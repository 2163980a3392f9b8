"""Differential fuzzer for tile programs: random small TileLang kernels, each run on the
cpu target, the emulated CUDA sm_80 and sm_90a targets and the emulated Metal target,
and compared with a numpy reference computed in float64.

Every case is fully determined by its seed (`random.Random(seed)` picks the family, the
shapes, dtypes, block sizes, thread counts and the program; numpy's generator seeded with
the same number draws the inputs). The generator writes the kernel as Python source, so a
failing case prints the seed, the target, the program as written and its first
mismatches, and re-runs alone.

Families:
  elementwise  T.Parallel over tiles with ragged extents and tails: random expression
               trees (+ - * max min abs, exp, tanh, sigmoid, sqrt, log), casts at the
               inputs and the output, int32 arithmetic with // and %
  reduce       T.reduce_sum / max / min / absmax / abssum over odd extents, dim 0 or 1,
               clear=True/False, from fragments or shared memory
  gemm         ragged M/N/K, all four transposes, float16 / bfloat16 / float32 operands
               with a float32 accumulator, T.Pipelined with num_stages 0..4
  pipeline     T.Pipelined(num_stages 0..4) loops of copies into shared tiles, an
               elementwise accumulation and optionally a gemm in the same loop
  dynamic      T.dynamic dims: one kernel run at several runtime sizes
  views        copies from and to sub-regions with offsets, T.reshape / T.view of shared
               and fragment buffers, dtype views of the same width

Tolerances follow the dtypes, never the failures: elementwise results are checked
against a running error bound of the expression (one rounding of the compute dtype per
operation, a few units for the transcendental functions); sums against n * u * sum |x|
of the accumulating dtype; gemms against K * u(float32) * (|A| @ |B|) plus the operand
rounding of the target (CUDA reads float32 operands as tf32); max / min / integer
results must match exactly.

Usage:
  python tests/fuzz/fuzz.py --seeds 0..99                 # seeds 0 to 99, every target
  python tests/fuzz/fuzz.py --time 3600 --seeds 1000..    # open-ended from seed 1000
  python tests/fuzz/fuzz.py --seed 17 --target sm80 -v    # one case, its program printed
  python tests/fuzz/fuzz.py --seeds 0..50 --family gemm --targets cpu,sm90a
Targets: cpu, sm80 ("cuda -arch=sm_80 -emulate"), sm90a ("cuda -arch=sm_90a -emulate"),
metal ("metal -emulate"). The exit status is 1 when any case failed.
"""

import argparse
import importlib.util
import os
import random
import sys
import tempfile
import time
import traceback

import ml_dtypes
import numpy as np

TARGETS = {
    "cpu": "cpu",
    "sm80": "cuda -arch=sm_80 -emulate",
    "sm90a": "cuda -arch=sm_90a -emulate",
    "metal": "metal -emulate",
}
FAMILIES = ["elementwise", "reduce", "gemm", "pipeline", "dynamic", "views"]

NP = {
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int32": np.int32,
}
# unit roundoff of each float dtype
UNIT = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8, "tf32": 2.0**-10}
# the smallest normal number: results below it may be flushed to zero
TINY = {"float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126, "int32": 0}
FLOATS = ["float32", "float16", "bfloat16"]


class Check:
    """One call of the kernel: its arguments (outputs pre-filled) and, for each output
    argument, the expected values and the allowed error per element (0: exact)."""

    def __init__(self, args, expected, dims=None):
        self.args = args
        self.expected = expected  # {arg index: (reference float64 array, tolerance array)}
        self.dims = dims or {}


class Case:
    def __init__(self, seed, family, source, checks, note=""):
        self.seed = seed
        self.family = family
        self.source = source
        self.checks = checks
        self.note = note
        self.family_forced = False  # the family came from --family, not from the seed


def cast_to(values, dtype):
    return np.asarray(values).astype(NP[dtype])


def rand_array(nrng, shape, dtype, scale=1.0):
    if dtype == "int32":
        return nrng.integers(-50, 51, size=shape).astype(np.int32)
    return cast_to(nrng.standard_normal(shape) * scale, dtype)


def sentinel(nrng, shape, dtype):
    """Random output contents: what the kernel must leave alone stays as it was."""
    return rand_array(nrng, shape, dtype, 3.0)


def f64(a):
    return np.asarray(a).astype(np.float64)


def src_block(lines, indent):
    return "\n".join((" " * indent + line) if line else "" for line in lines)


def header(params, kernel_line, body, prelude=()):
    lines = ["import tilelang.language as T", "", "", "def make():"]
    lines += ["    " + p for p in prelude]
    lines += ["    @T.prim_func", "    def main("]
    lines += [f"        {p}," for p in params]
    lines += ["    ):", f"        {kernel_line}"]
    lines += ["            " + b if b else "" for b in body]
    lines += ["", "    return main", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Expression trees with a running error bound


class Expr:
    """A random expression over leaves x0..xn: its source text (given the leaves' text), its
    float64 value and a first-order bound of its error when every operation rounds in the
    compute dtype."""

    def __init__(self, kind, kids=(), value=None):
        self.kind = kind
        self.kids = list(kids)
        self.value = value  # leaf index or constant

    def text(self, leaves, cdt):
        k = [c.text(leaves, cdt) for c in self.kids]
        kind = self.kind
        if kind == "leaf":
            return leaves[self.value]
        if kind == "const":
            return repr(self.value)
        if kind in ("+", "-", "*"):
            return f"({k[0]} {kind} {k[1]})"
        if kind in ("//", "%"):
            return f"({k[0]} {kind} {self.value})"
        if kind == "neg":
            return f"(-{k[0]})"
        if kind == "max":
            return f"T.max({k[0]}, {k[1]})"
        if kind == "min":
            return f"T.min({k[0]}, {k[1]})"
        if kind == "abs":
            return f"T.abs({k[0]})"
        if kind == "exp":
            return f"T.exp(T.min({k[0]}, 2.0))"
        if kind == "sqrt":
            return f"T.sqrt(T.abs({k[0]}) + 1.0)"
        if kind == "log":
            return f"T.log(T.abs({k[0]}) + 1.0)"
        if kind in ("tanh", "sigmoid"):
            return f"T.{kind}({k[0]})"
        raise AssertionError(kind)

    def evaluate(self, leaves, u):
        """(value, error bound) as float64 arrays; u is the compute dtype's unit roundoff
        (0 for integers)."""
        if self.kind == "leaf":
            v, e = leaves[self.value]
            return v, e
        if self.kind == "const":
            return np.float64(self.value), 0.0
        vals = [c.evaluate(leaves, u) for c in self.kids]
        (a, ea) = vals[0]
        (b, eb) = vals[1] if len(vals) > 1 else (None, None)
        kind = self.kind
        fn = 4 * u  # a transcendental function: a few units of its result
        if kind == "+":
            v = a + b
            return v, ea + eb + u * np.abs(v)
        if kind == "-":
            v = a - b
            return v, ea + eb + u * np.abs(v)
        if kind == "*":
            v = a * b
            return v, np.abs(a) * eb + np.abs(b) * ea + ea * eb + u * np.abs(v)
        if kind == "//":
            return np.floor_divide(a, self.value), 0.0
        if kind == "%":
            return np.mod(a, self.value), 0.0
        if kind == "neg":
            return -a, ea
        if kind == "max":
            return np.maximum(a, b), np.maximum(ea, eb)
        if kind == "min":
            return np.minimum(a, b), np.maximum(ea, eb)
        if kind == "abs":
            return np.abs(a), ea
        if kind == "exp":
            c = np.minimum(a, 2.0)
            v = np.exp(c)
            return v, v * np.expm1(ea) + fn * v
        if kind == "sqrt":
            s = np.abs(a) + 1.0
            es = ea + u * s
            v = np.sqrt(s)
            return v, es / (2 * v) + fn * v
        if kind == "log":
            s = np.abs(a) + 1.0
            es = ea + u * s
            v = np.log(s)
            return v, es / s + fn * v + fn
        if kind == "tanh":
            v = np.tanh(a)
            return v, ea + fn * np.abs(v) + fn * TINY_FN
        if kind == "sigmoid":
            v = 1.0 / (1.0 + np.exp(-a))
            return v, ea / 4 + fn * v
        raise AssertionError(kind)


TINY_FN = 2.0**-20


def random_expr(rng, n_leaves, depth, integer):
    if depth == 0 or rng.random() < 0.25:
        if not integer and rng.random() < 0.15:
            return Expr("const", value=rng.choice([0.5, 1.5, -2.0, 0.25, 3.0]))
        return Expr("leaf", value=rng.randrange(n_leaves))
    if integer:
        kind = rng.choice(["+", "-", "*", "max", "min", "abs", "neg", "//", "%"])
    else:
        kind = rng.choice(
            ["+", "-", "*", "max", "min", "abs", "neg", "exp", "tanh", "sigmoid", "sqrt", "log"]
        )
    if kind in ("//", "%"):
        return Expr(kind, [random_expr(rng, n_leaves, depth - 1, integer)], rng.choice([3, 7, 16]))
    if kind in ("+", "-", "*", "max", "min"):
        return Expr(kind, [random_expr(rng, n_leaves, depth - 1, integer) for _ in range(2)])
    return Expr(kind, [random_expr(rng, n_leaves, depth - 1, integer)])


def expr_uses_mul_chain(e):
    return e.kind == "*" or any(expr_uses_mul_chain(k) for k in e.kids)


def leaf_inputs(arrays, in_dts, cdt):
    """Leaves as (float64 value, error) after their conversion to the compute dtype."""
    out = []
    for a, dt in zip(arrays, in_dts):
        v = f64(a)
        if dt != cdt and cdt != "int32" and UNIT[cdt] > UNIT.get(dt, 0):
            out.append((v, UNIT[cdt] * np.abs(v)))
        else:
            out.append((v, np.zeros_like(v)))
    return out


def leaf_text(name, idx, dt, cdt):
    load = f"{name}[{idx}]"
    return load if dt == cdt else f"T.cast({load}, {cdt!r})"


def expected_of(expr, arrays, in_dts, cdt, out_dt):
    integer = cdt == "int32"
    u = 0.0 if integer else UNIT[cdt]
    v, e = expr.evaluate(leaf_inputs(arrays, in_dts, cdt), u)
    v = np.broadcast_to(np.asarray(v, np.float64), arrays[0].shape)
    e = np.broadcast_to(np.asarray(e, np.float64), arrays[0].shape)
    if integer:
        return v.copy(), np.zeros_like(v)
    # the output rounds once more; results near zero may be flushed
    tol = 2 * e + UNIT[out_dt] * np.abs(v) + 2 * max(TINY[out_dt], TINY[cdt])
    return v.copy(), tol


# ---------------------------------------------------------------------------------------
# Families


def gen_elementwise(rng, nrng, seed):
    integer = rng.random() < 0.15
    if integer:
        cdt = out_dt = "int32"
        in_dts = ["int32"] * rng.randint(1, 3)
    else:
        cdt = rng.choice(FLOATS)
        in_dts = [rng.choice(FLOATS) for _ in range(rng.randint(1, 3))]
        out_dt = rng.choice(FLOATS)
    expr = random_expr(rng, len(in_dts), rng.randint(1, 3), integer)
    two_d = rng.random() < 0.7
    threads = rng.choice([32, 64, 128, 96, 256])
    style = rng.choice(["global", "tiles", "shared"])
    names = [f"X{i}" for i in range(len(in_dts))]
    if two_d:
        M, N = rng.randint(1, 150), rng.randint(1, 150)
        bM, bN = rng.choice([1, 3, 4, 8, 16, 32]), rng.choice([5, 8, 16, 33, 64, 128])
        shape = (M, N)
        grid = f"T.ceildiv({N}, {bN}), T.ceildiv({M}, {bM})"
        kernel = f"with T.Kernel({grid}, threads={threads}) as (bx, by):"
        it, ext = "i, j", f"{bM}, {bN}"
        gidx = f"by * {bM} + i, bx * {bN} + j"
        guard = f"by * {bM} + i < {M} and bx * {bN} + j < {N}"
        tile, origin = (bM, bN), f"by * {bM}, bx * {bN}"
    else:
        N = rng.randint(1, 3000)
        bN = rng.choice([32, 64, 100, 128, 256, 512])
        shape = (N,)
        kernel = f"with T.Kernel(T.ceildiv({N}, {bN}), threads={threads}) as bx:"
        it, ext = "i", f"{bN}"
        gidx = f"bx * {bN} + i"
        guard = f"bx * {bN} + i < {N}"
        tile, origin = (bN,), f"bx * {bN}"
    params = [f"{n}: T.Tensor({shape}, {dt!r})" for n, dt in zip(names, in_dts)]
    params.append(f"Y: T.Tensor({shape}, {out_dt!r})")
    body = []
    if style == "global":
        leaves = [leaf_text(n, gidx, dt, cdt) for n, dt in zip(names, in_dts)]
        value = expr.text(leaves, cdt)
        if out_dt != cdt:
            value = f"T.cast({value}, {out_dt!r})"
        body += [f"for {it} in T.Parallel({ext}):", f"    if {guard}:"]
        body += [f"        Y[{gidx}] = {value}"]
    else:
        scope = "alloc_shared" if style == "shared" else "alloc_fragment"
        # T.copy converts: a tile may hold the compute dtype, the result tile may too
        tile_dts = [cdt if rng.random() < 0.4 else dt for dt in in_dts]
        y_dt = cdt if rng.random() < 0.4 else out_dt
        for n, dt in zip(names, tile_dts):
            body.append(f"{n}_t = T.{scope}({tile}, {dt!r})")
            body.append(f"T.copy({n}[{origin}], {n}_t)")
        body.append(f"Y_t = T.alloc_fragment({tile}, {y_dt!r})")
        leaves = [leaf_text(n + "_t", it, dt, cdt) for n, dt in zip(names, tile_dts)]
        value = expr.text(leaves, cdt)
        if y_dt != cdt:
            value = f"T.cast({value}, {y_dt!r})"
        body += [f"for {it} in T.Parallel({ext}):", f"    Y_t[{it}] = {value}"]
        body.append(f"T.copy(Y_t, Y[{origin}])")
    source = header(params, kernel, body)
    arrays = [rand_array(nrng, shape, dt) for dt in in_dts]
    out = sentinel(nrng, shape, out_dt)
    ref, tol = expected_of(expr, arrays, in_dts, cdt, out_dt)
    check = Check(arrays + [out], {len(arrays): (ref, tol)})
    return Case(seed, "elementwise", source, [check])


REDUCE_KINDS = ["sum", "max", "min", "absmax", "abssum"]


def reduce_reference(kind, a, axis, init, clear, acc_dt):
    a = f64(a)
    n = a.shape[axis]
    if kind in ("sum", "abssum"):
        x = np.abs(a) if kind == "abssum" else a
        s = x.sum(axis)
        mag = np.abs(x).sum(axis)
        if not clear:
            s = s + f64(init)
            mag = mag + np.abs(f64(init))
        u = UNIT[acc_dt]
        return s, (n + 1) * u * mag + UNIT[acc_dt] * np.abs(s) + 2 * TINY[acc_dt]
    x = np.abs(a) if kind == "absmax" else a
    r = {"max": np.max, "min": np.min, "absmax": np.max}[kind](x, axis)
    if not clear:
        combine = np.minimum if kind == "min" else np.maximum
        r = combine(r, f64(init))
    return r, np.zeros_like(r)


def gen_reduce(rng, nrng, seed):
    kind = rng.choice(REDUCE_KINDS)
    dt = rng.choice(FLOATS)
    out_dt = rng.choice(["float32", dt])
    clear = True if kind == "abssum" else rng.random() < 0.5
    dim = rng.choice([0, 1])
    written_dim = rng.choice([dim, dim - 2])  # 0 / -2, 1 / -1
    threads = rng.choice([32, 48, 64, 96, 128, 256])
    scope = rng.choice(["alloc_fragment", "alloc_shared"])
    out_scope = rng.choice(["alloc_fragment", "alloc_shared"])
    # The reduced extent is the whole tensor's, the kept one is tiled with a ragged tail.
    R = rng.choice([1, 3, 7, 13, 31, 33, 50, 64, 97, 128, 129, 200])
    K = rng.randint(1, 90)
    bK = rng.choice([1, 2, 4, 8, 16, 32])
    # a tile longer than the tensor along the reduced dim reads zeros past its end
    Rt = R + rng.choice([0, 0, 0, 1, 6])
    if dim == 1:
        shape, tile = (K, R), (bK, Rt)
        origin = f"bx * {bK}, 0"
    else:
        shape, tile = (R, K), (Rt, bK)
        origin = f"0, bx * {bK}"
    params = [f"A: T.Tensor({shape}, {dt!r})", f"Out: T.Tensor(({K},), {out_dt!r})"]
    kernel = f"with T.Kernel(T.ceildiv({K}, {bK}), threads={threads}) as bx:"
    body = [f"a = T.{scope}({tile}, {dt!r})", f"T.copy(A[{origin}], a)"]
    body.append(f"o = T.{out_scope}(({bK},), {out_dt!r})")
    if not clear:
        body.append(f"T.copy(Out[bx * {bK}], o)")
    args = f"a, o, dim={written_dim}"
    if kind != "abssum":
        args += f", clear={clear}"
    body.append(f"T.reduce_{kind}({args})")
    # softmax-like: the reduced values broadcast back over the tile
    post = rng.random() < 0.4
    if post:
        params.append(f"P: T.Tensor({shape}, 'float32')")
        o_at = "o[i]" if dim == 1 else "o[j]"
        body += [
            f"p = T.alloc_fragment({tile}, 'float32')",
            f"for i, j in T.Parallel({tile[0]}, {tile[1]}):",
            f"    p[i, j] = T.cast(a[i, j], 'float32') - T.cast({o_at}, 'float32')",
            f"T.copy(p, P[{origin}])",
        ]
    body.append(f"T.copy(o, Out[bx * {bK}])")
    source = header(params, kernel, body)
    a = rand_array(nrng, shape, dt)
    out = sentinel(nrng, (K,), out_dt)
    acc = out_dt if UNIT[out_dt] >= UNIT[dt] else dt
    padded = np.zeros((K, Rt) if dim == 1 else (Rt, K))
    padded[: shape[0], : shape[1]] = f64(a)
    ref, tol = reduce_reference(kind, padded, dim, out, clear, acc)
    tol = tol + UNIT[out_dt] * np.abs(ref)
    check = Check([a, out], {1: (ref, tol)})
    if post:
        bcast = (lambda v: v[:, None]) if dim == 1 else (lambda v: v[None, :])
        p_ref = f64(a) - bcast(ref)
        p_tol = bcast(tol) + UNIT["float32"] * (np.abs(f64(a)) + np.abs(bcast(ref)))
        check = Check(
            [a, out, sentinel(nrng, shape, "float32")], {1: (ref, tol), 2: (p_ref, p_tol)}
        )
    return Case(seed, "reduce", source, [check])


def gemm_tiles(rng, dt):
    """A block tile and thread count: mostly tiles of 16-multiples that split over the
    warps (the tensor-core paths), sometimes odd ones (the shared-memory paths)."""
    while True:
        if rng.random() < 0.25:
            bM = rng.choice([8, 16, 24, 40, 48])
            bN = rng.choice([8, 24, 40, 48, 80])
            bK = rng.choice([8, 24, 40])
            threads = rng.choice([32, 64, 96, 128])
            if bM * bN <= 64 * 80:
                return bM, bN, bK, threads
            continue
        bM = rng.choice([16, 32, 64, 128])
        bN = rng.choice([16, 32, 64, 128])
        bK = rng.choice([16, 32, 64]) if dt != "float32" else rng.choice([8, 16, 32])
        threads = rng.choice([32, 64, 128, 256])
        if bM * bN <= 128 * 64 and (bM * bN) // (threads // 32) >= 256:
            return bM, bN, bK, threads


class PerTarget:
    """A tolerance that depends on the target: CUDA's tensor cores read float32 operands
    as tf32 (10 bits of mantissa), the cpu and Metal targets multiply them in float32."""

    __array_ufunc__ = None  # numpy defers to the operators below

    def __init__(self, exact, tf32):
        self.exact, self.tf32 = exact, tf32

    def pick(self, target):
        return self.tf32 if target in ("sm80", "sm90a") else self.exact

    def _op(self, other, fn):
        if isinstance(other, PerTarget):
            return PerTarget(fn(self.exact, other.exact), fn(self.tf32, other.tf32))
        return PerTarget(fn(self.exact, other), fn(self.tf32, other))

    def __add__(self, other):
        return self._op(other, lambda a, b: a + b)

    __radd__ = __add__

    def __mul__(self, other):
        return self._op(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def map(self, fn):
        return PerTarget(fn(self.exact), fn(self.tf32))


def tmap(fn, tol):
    return tol.map(fn) if isinstance(tol, PerTarget) else fn(tol)


def gemm_tol(a, b, ta, tb, in_dt, K):
    """|A| @ |B| scaled by the float32 accumulation over K and the operand rounding."""
    am = np.abs(f64(a)).T if ta else np.abs(f64(a))
    bm = np.abs(f64(b)).T if tb else np.abs(f64(b))
    mag = am @ bm
    acc = mag * ((K + 2) * UNIT["float32"])
    if in_dt != "float32":
        return acc  # 16-bit products are exact in float32
    return PerTarget(acc + mag * 2 * UNIT["float32"], acc + mag * 2 * UNIT["tf32"])


def gemm_ref(a, b, ta, tb):
    am = f64(a).T if ta else f64(a)
    bm = f64(b).T if tb else f64(b)
    return am @ bm


def gemm_body(rng, ta, tb, bM, bN, bK, in_dt, stages, K_expr, extra=(), loop_extra=()):
    """The shared tiles, the accumulator and the pipelined K loop of a gemm; the warp
    policy and whether A goes through a register fragment (gemm_rs) are drawn here."""
    a_tile = (bK, bM) if ta else (bM, bK)
    b_tile = (bN, bK) if tb else (bK, bN)
    a_org = f"k * {bK}, by * {bM}" if ta else f"by * {bM}, k * {bK}"
    b_org = f"bx * {bN}, k * {bK}" if tb else f"k * {bK}, bx * {bN}"
    a_frag = not ta and rng.random() < 0.25
    policy = "FullRow" if a_frag else rng.choice(["Square", "FullRow", "FullCol", None])
    opts = f", transpose_A={ta}, transpose_B={tb}"
    if policy:
        opts += f", policy=T.GemmWarpPolicy.{policy}"
    body = [
        f"A_s = T.alloc_shared({a_tile}, {in_dt!r})",
        f"B_s = T.alloc_shared({b_tile}, {in_dt!r})",
        f"C_f = T.alloc_fragment(({bM}, {bN}), 'float32')",
        *extra,
        "T.clear(C_f)",
        f"for k in T.Pipelined(T.ceildiv({K_expr}, {bK}), num_stages={stages}):",
        f"    T.copy(A[{a_org}], A_s)",
        f"    T.copy(B[{b_org}], B_s)",
        *["    " + x for x in loop_extra],
    ]
    if a_frag:
        body[3:3] = [f"A_f = T.alloc_fragment({a_tile}, {in_dt!r})"]
        body += ["    T.copy(A_s, A_f)", f"    T.gemm(A_f, B_s, C_f{opts})"]
    else:
        body.append(f"    T.gemm(A_s, B_s, C_f{opts})")
    return body


def gen_gemm(rng, nrng, seed):
    in_dt = rng.choice(FLOATS)
    out_dt = rng.choice(["float32", in_dt])
    ta, tb = rng.random() < 0.5, rng.random() < 0.5
    bM, bN, bK, threads = gemm_tiles(rng, in_dt)
    M, N, K = rng.randint(1, 200), rng.randint(1, 200), rng.randint(1, 160)
    stages = rng.randint(0, 4)
    a_shape = (K, M) if ta else (M, K)
    b_shape = (N, K) if tb else (K, N)
    params = [
        f"A: T.Tensor({a_shape}, {in_dt!r})",
        f"B: T.Tensor({b_shape}, {in_dt!r})",
        f"C: T.Tensor(({M}, {N}), {out_dt!r})",
    ]
    kernel = (
        f"with T.Kernel(T.ceildiv({N}, {bN}), T.ceildiv({M}, {bM}), threads={threads}) as (bx, by):"
    )
    body = gemm_body(rng, ta, tb, bM, bN, bK, in_dt, stages, K)
    scale = rng.choice([None, None, 0.5, -1.5])
    if scale is not None:  # a scaled ReLU on the accumulator's registers
        body += [
            f"for i, j in T.Parallel({bM}, {bN}):",
            f"    C_f[i, j] = T.max(C_f[i, j] * {scale}, 0.0)",
        ]
    # the row maxima of each block's tile (its columns past N hold zeros)
    rowmax = rng.random() < 0.3
    nN = -(-N // bN)
    if rowmax:
        params.append(f"R: T.Tensor(({M}, {nN}), 'float32')")
        body += [
            f"m = T.alloc_fragment(({bM},), 'float32')",
            "T.reduce_max(C_f, m, dim=1)",
            f"T.copy(m, R[by * {bM} : by * {bM} + {bM}, bx])",
        ]
    body.append(f"T.copy(C_f, C[by * {bM}, bx * {bN}])")
    source = header(params, kernel, body)
    a, b = rand_array(nrng, a_shape, in_dt), rand_array(nrng, b_shape, in_dt)
    c = sentinel(nrng, (M, N), out_dt)
    ref = gemm_ref(a, b, ta, tb)
    tol = gemm_tol(a, b, ta, tb, in_dt, K)
    if scale is not None:
        ref, tol = np.maximum(ref * scale, 0.0), tol * abs(scale)
    out_tol = tol + UNIT[out_dt] * np.abs(ref) + 2 * TINY[out_dt]
    check = Check([a, b, c], {2: (ref, out_tol)})
    if rowmax:
        padded = np.zeros((M, nN * bN))
        padded[:, :N] = ref
        r_ref = padded.reshape(M, nN, bN).max(2)

        def tile_max(t):
            pt = np.zeros((M, nN * bN))
            pt[:, :N] = t
            return pt.reshape(M, nN, bN).max(2)

        r_tol = tmap(tile_max, tol) + UNIT["float32"] * np.abs(r_ref)
        check = Check(
            [a, b, c, sentinel(nrng, (M, nN), "float32")], {2: (ref, out_tol), 3: (r_ref, r_tol)}
        )
    return Case(seed, "gemm", source, [check])


def gen_pipeline(rng, nrng, seed):
    """Sum of the K-tiles of X (copied through shared memory, accumulated in a fragment)
    and, in the same pipelined loop, optionally a gemm."""
    stages = rng.randint(0, 4)
    with_gemm = rng.random() < 0.6
    in_dt = rng.choice(FLOATS)
    ta, tb = rng.random() < 0.5, rng.random() < 0.5
    bM, bN, bK, threads = gemm_tiles(rng, in_dt)
    M, N, K = rng.randint(1, 150), rng.randint(1, 150), rng.randint(1, 200)
    scale = rng.choice([1.0, 0.5, 2.0, -1.0])
    nk = -(-K // bK)
    x_shape = (M, K)
    params = [f"X: T.Tensor({x_shape}, {in_dt!r})", f"S: T.Tensor(({M}, {bK}), 'float32')"]
    extra = [
        f"X_s = T.alloc_shared(({bM}, {bK}), {in_dt!r})",
        f"S_f = T.alloc_fragment(({bM}, {bK}), 'float32')",
        "T.clear(S_f)",
    ]
    loop_extra = [
        f"T.copy(X[by * {bM}, k * {bK}], X_s)",
        f"for i, j in T.Parallel({bM}, {bK}):",
        f"    S_f[i, j] += T.cast(X_s[i, j], 'float32') * {scale}",
    ]
    x = rand_array(nrng, x_shape, in_dt)
    xp = np.zeros((M, nk * bK))
    xp[:, :K] = f64(x)
    s_ref = xp.reshape(M, nk, bK).sum(1) * scale
    s_tol = (nk + 1) * UNIT["float32"] * np.abs(xp.reshape(M, nk, bK)).sum(1) * abs(scale)
    s_out = sentinel(nrng, (M, bK), "float32")
    if with_gemm:
        a_shape = (K, M) if ta else (M, K)
        b_shape = (N, K) if tb else (K, N)
        params = [
            f"A: T.Tensor({a_shape}, {in_dt!r})",
            f"B: T.Tensor({b_shape}, {in_dt!r})",
            f"C: T.Tensor(({M}, {N}), 'float32')",
        ] + params
        grid = f"T.ceildiv({N}, {bN}), T.ceildiv({M}, {bM})"
        body = gemm_body(rng, ta, tb, bM, bN, bK, in_dt, stages, K, extra, loop_extra)
        body.append(f"T.copy(C_f, C[by * {bM}, bx * {bN}])")
        # every column of blocks writes the same sums: only the first one stores them
        body += ["if bx == 0:", f"    T.copy(S_f, S[by * {bM}, 0])"]
        a, b = rand_array(nrng, a_shape, in_dt), rand_array(nrng, b_shape, in_dt)
        c = sentinel(nrng, (M, N), "float32")
        ref = gemm_ref(a, b, ta, tb)
        tol = gemm_tol(a, b, ta, tb, in_dt, K) + UNIT["float32"] * np.abs(ref)
        args = [a, b, c, x, s_out]
        expected = {2: (ref, tol), 4: (s_ref, s_tol)}
    else:
        grid = f"1, T.ceildiv({M}, {bM})"
        body = extra + [
            f"for k in T.Pipelined(T.ceildiv({K}, {bK}), num_stages={stages}):",
            *["    " + x_ for x_ in loop_extra],
            f"T.copy(S_f, S[by * {bM}, 0])",
        ]
        args = [x, s_out]
        expected = {1: (s_ref, s_tol)}
    kernel = f"with T.Kernel({grid}, threads={threads}) as (bx, by):"
    source = header(params, kernel, body)
    return Case(seed, "pipeline", source, [Check(args, expected)])


def edge_or(rng, lo, hi):
    """A size in [lo, hi], or now and then 0 or 1 (an empty tensor, a single row)."""
    return rng.choice([0, 1]) if rng.random() < 0.15 else rng.randint(lo, hi)


def gen_dynamic(rng, nrng, seed):
    sub = rng.choice(["elementwise", "reduce", "gemm"])
    # runtime sizes, empty tensors and single rows among them
    sizes = sorted({edge_or(rng, 1, 300) for _ in range(3)})
    checks = []
    threads = rng.choice([32, 64, 128, 256])
    if sub == "elementwise":
        dt = rng.choice(FLOATS)
        expr = random_expr(rng, 2, rng.randint(1, 3), False)
        C = rng.randint(1, 40)
        bM = rng.choice([1, 2, 4, 8, 16])
        params = [f"X0: T.Tensor((m, {C}), {dt!r})", f"X1: T.Tensor((m, {C}), {dt!r})"]
        params.append(f"Y: T.Tensor((m, {C}), {dt!r})")
        kernel = f"with T.Kernel(T.ceildiv(m, {bM}), threads={threads}) as bx:"
        leaves = [f"X{n}[bx * {bM} + i, j]" for n in range(2)]
        body = [
            f"for i, j in T.Parallel({bM}, {C}):",
            f"    if bx * {bM} + i < m:",
            f"        Y[bx * {bM} + i, j] = {expr.text(leaves, dt)}",
        ]
        for m in sizes:
            xs = [rand_array(nrng, (m, C), dt) for _ in range(2)]
            ref, tol = expected_of(expr, xs, [dt, dt], dt, dt)
            checks.append(Check(xs + [sentinel(nrng, (m, C), dt)], {2: (ref, tol)}, {"m": m}))
    elif sub == "reduce":
        kind = rng.choice(REDUCE_KINDS)
        dt = rng.choice(FLOATS)
        R = rng.choice([1, 5, 16, 33, 64, 100])
        bK = rng.choice([1, 4, 8, 16])
        params = [f"A: T.Tensor((m, {R}), {dt!r})", "Out: T.Tensor((m,), 'float32')"]
        kernel = f"with T.Kernel(T.ceildiv(m, {bK}), threads={threads}) as bx:"
        body = [
            f"a = T.alloc_fragment(({bK}, {R}), {dt!r})",
            f"T.copy(A[bx * {bK}, 0], a)",
            f"o = T.alloc_fragment(({bK},), 'float32')",
            f"T.reduce_{kind}(a, o, dim=1)",
            f"T.copy(o, Out[bx * {bK}])",
        ]
        for m in sizes:
            a = rand_array(nrng, (m, R), dt)
            ref, tol = reduce_reference(kind, a, 1, None, True, "float32")
            checks.append(Check([a, sentinel(nrng, (m,), "float32")], {1: (ref, tol)}, {"m": m}))
    else:
        in_dt = rng.choice(FLOATS)
        ta, tb = rng.random() < 0.5, rng.random() < 0.5
        bM, bN, bK, threads = gemm_tiles(rng, in_dt)
        N = rng.randint(1, 100)
        stages = rng.randint(0, 3)
        dyn_k = rng.random() < 0.5
        kdim = "k_" if dyn_k else str(rng.randint(1, 100))
        a_shape = f"({kdim}, m)" if ta else f"(m, {kdim})"
        b_shape = f"({N}, {kdim})" if tb else f"({kdim}, {N})"
        params = [
            f"A: T.Tensor({a_shape}, {in_dt!r})",
            f"B: T.Tensor({b_shape}, {in_dt!r})",
            f"C: T.Tensor((m, {N}), 'float32')",
        ]
        kernel = f"with T.Kernel(T.ceildiv({N}, {bN}), T.ceildiv(m, {bM}), threads={threads}) as (bx, by):"
        body = gemm_body(rng, ta, tb, bM, bN, bK, in_dt, stages, kdim)
        body.append(f"T.copy(C_f, C[by * {bM}, bx * {bN}])")
        for m in sizes:
            K = edge_or(rng, 1, 130) if dyn_k else int(kdim)
            a = rand_array(nrng, (K, m) if ta else (m, K), in_dt)
            b = rand_array(nrng, (N, K) if tb else (K, N), in_dt)
            ref = gemm_ref(a, b, ta, tb)
            tol = gemm_tol(a, b, ta, tb, in_dt, K) + UNIT["float32"] * np.abs(ref)
            c = sentinel(nrng, (m, N), "float32")
            checks.append(Check([a, b, c], {2: (ref, tol)}, {"m": m, "k": K}))
    prelude = ["m = T.dynamic('m')"]
    if sub == "gemm" and "k_" in params[0]:
        prelude.append("k_ = T.dynamic('k_')")
    source = header(params, kernel, body, prelude)
    return Case(seed, "dynamic", source, checks, note=sub)


def gen_views(rng, nrng, seed):
    """A sub-region of X at an offset through shared memory, optionally reshaped or
    viewed, transformed elementwise in a fragment and stored into a sub-region of Y."""
    dt = rng.choice(FLOATS + ["int32"])
    R, C = rng.randint(2, 70), rng.randint(2, 70)
    h, w = rng.randint(1, R), rng.randint(1, C)
    r0, c0 = rng.randint(0, R - h), rng.randint(0, C - w)
    threads = rng.choice([32, 64, 128, 256])
    shape_choices = [(h, w)]
    n = h * w
    for d in range(1, n + 1):
        if n % d == 0 and d <= 128 and n // d <= 128:
            shape_choices.append((d, n // d))
    h2, w2 = rng.choice(shape_choices)
    mode = rng.choice(
        ["reshape", "view", "plain", "bits"]
        if dt in ("float32", "int32")
        else ["reshape", "view", "plain"]
    )
    src_scope = rng.choice(["alloc_shared", "alloc_fragment"])
    sub_slice = rng.random() < 0.5
    kernel = f"with T.Kernel(1, threads={threads}):"
    body = [f"S = T.{src_scope}(({h}, {w}), {dt!r})"]
    if rng.random() < 0.5:
        body.append(f"T.copy(X[{r0}:{r0 + h}, {c0}:{c0 + w}], S)")
    else:
        body.append(f"T.copy(X[{r0}, {c0}], S)")
    x = rand_array(nrng, (R, C), dt)
    tile = f64(x[r0 : r0 + h, c0 : c0 + w])
    if mode == "reshape":
        body.append(f"V = T.reshape(S, ({h2}, {w2}))")
    elif mode == "view":
        body.append(f"V = T.view(S, ({h2}, {w2}))")
    elif mode == "bits":
        other = "int32" if dt == "float32" else "float32"
        body.append(f"V = T.view(S, ({h2}, {w2}), dtype={other!r})")
    else:
        h2, w2 = h, w
        body.append("V = S")
    vals = tile.reshape(h2, w2)
    # a second slice: a window of the (reshaped) tile, at an offset inside it
    if sub_slice and h2 > 1 and w2 > 1:
        p, q = rng.randint(1, h2), rng.randint(1, w2)
        a0, b0 = rng.randint(0, h2 - p), rng.randint(0, w2 - q)
        body.append(f"W = T.alloc_shared(({p}, {q}), {dt!r})")
        if mode == "bits":
            body[-1] = f"W = T.alloc_shared(({p}, {q}), 'int32')"
            if dt == "int32":
                body[-1] = f"W = T.alloc_shared(({p}, {q}), 'float32')"
        body.append(f"T.copy(V[{a0}:{a0 + p}, {b0}:{b0 + q}], W)")
        vals = vals[a0 : a0 + p, b0 : b0 + q]
        x_sel = x[r0 : r0 + h, c0 : c0 + w].reshape(h2, w2)[a0 : a0 + p, b0 : b0 + q]
        h2, w2 = p, q
        body.append("V = W")
    else:
        x_sel = x[r0 : r0 + h, c0 : c0 + w].reshape(h2, w2)
    body.append(f"F = T.alloc_fragment(({h2}, {w2}), {dt!r})")
    if mode == "bits":
        # reinterpret, combine the bits, and reinterpret back
        if dt == "float32":
            body.append(f"for i, j in T.Parallel({h2}, {w2}):")
            body.append("    F[i, j] = T.reinterpret(V[i, j] ^ 1, 'float32')")
            bits = np.ascontiguousarray(x_sel).view(np.int32) ^ 1
            ref = f64(bits.view(np.float32))
        else:
            body.append(f"for i, j in T.Parallel({h2}, {w2}):")
            body.append("    F[i, j] = T.reinterpret(-V[i, j], 'int32')")
            fl = np.ascontiguousarray(x_sel).view(np.float32)
            ref = f64((-fl).view(np.int32))
        tol = np.zeros_like(ref)
    else:
        k = rng.choice([2, 3, -1])
        body.append(f"for i, j in T.Parallel({h2}, {w2}):")
        if dt == "int32":
            body.append(f"    F[i, j] = V[i, j] * {k} + i - j")
        else:
            body.append(f"    F[i, j] = V[i, j] * {float(k)} + T.cast(i - j, {dt!r})")
        ii, jj = np.meshgrid(np.arange(h2), np.arange(w2), indexing="ij")
        ref = vals * k + (ii - jj)
        if dt == "int32":
            tol = np.zeros_like(ref)
        else:
            u = UNIT[dt]
            tol = 3 * u * (np.abs(vals * k) + np.abs(ii - jj)) + 2 * TINY[dt]
    OR, OC = rng.randint(h2, h2 + 20), rng.randint(w2, w2 + 20)
    o0, o1 = rng.randint(0, OR - h2), rng.randint(0, OC - w2)
    params = [f"X: T.Tensor(({R}, {C}), {dt!r})", f"Y: T.Tensor(({OR}, {OC}), {dt!r})"]
    y = sentinel(nrng, (OR, OC), dt)
    full_ref, full_tol = f64(y), np.zeros((OR, OC))
    full_ref[o0 : o0 + h2, o1 : o1 + w2] = ref
    full_tol[o0 : o0 + h2, o1 : o1 + w2] = tol
    body.append(f"T.copy(F, Y[{o0}:{o0 + h2}, {o1}:{o1 + w2}])")
    source = header(params, kernel, body)
    return Case(seed, "views", source, [Check([x, y], {1: (full_ref, full_tol)})], note=mode)


GENERATORS = {
    "elementwise": gen_elementwise,
    "reduce": gen_reduce,
    "gemm": gen_gemm,
    "pipeline": gen_pipeline,
    "dynamic": gen_dynamic,
    "views": gen_views,
}


def generate(seed, family=None):
    """The case of a seed (of the given family, or one the seed picks)."""
    rng = random.Random(seed)
    fam = family or rng.choice(FAMILIES)
    if family:
        rng = random.Random(f"{family}:{seed}")
    nrng = np.random.default_rng(seed)
    case = GENERATORS[fam](rng, nrng, seed)
    case.family_forced = family is not None
    return case


# ---------------------------------------------------------------------------------------
# Running


class Failure(Exception):
    pass


def _module_dir():
    d = os.path.join(tempfile.gettempdir(), f"tilelang-fuzz-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    return d


def load_program(case):
    """The case's prim_func, built from its source written to a file (so that errors
    point at the generated lines)."""
    path = os.path.join(_module_dir(), f"fuzz_{case.family}_{case.seed}.py")
    with open(path, "w") as f:
        f.write(case.source)
    spec = importlib.util.spec_from_file_location(f"fuzz_{case.family}_{case.seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make(), path


def mismatches(got, ref, tol, limit=8):
    got = f64(got)
    err = np.abs(got - ref)
    bad = ~(err <= tol)  # NaN counts as bad
    bad &= ~((got == ref) | (np.isnan(got) & np.isnan(ref)))
    idx = np.argwhere(bad)
    lines = [f"{len(idx)} of {got.size} elements differ"]
    for i in idx[:limit]:
        t = tuple(int(v) for v in i)
        lines.append(f"  at {t}: got {got[t]!r}, expected {ref[t]!r} (tolerance {tol[t]:.3g})")
    return len(idx), "\n".join(lines)


def run_case(case, target):
    """Compiles the case for a target and checks every call; raises Failure with the
    report text."""
    import tilelang

    try:
        func, _ = load_program(case)
        kernel = tilelang.compile(func, target=TARGETS[target])
    except Exception:  # noqa: BLE001 - every error of the compiler is a finding
        raise Failure("compile error:\n" + traceback.format_exc(limit=-4)) from None
    for check in case.checks:
        args = [np.array(a, copy=True) for a in check.args]
        try:
            kernel(*args)
        except Exception:  # noqa: BLE001 - every error of a call is a finding
            raise Failure(f"run error {check.dims}:\n" + traceback.format_exc(limit=-4)) from None
        for i, (ref, tol) in check.expected.items():
            if isinstance(tol, PerTarget):
                tol = tol.pick(target)
            count, text = mismatches(args[i], ref, tol)
            if count:
                where = f" (sizes {check.dims})" if check.dims else ""
                raise Failure(f"output argument {i}{where}: {text}")
        # inputs must be left alone
        for i, a in enumerate(check.args):
            if i not in check.expected and not np.array_equal(
                np.asarray(a).view(np.uint8), args[i].view(np.uint8)
            ):
                raise Failure(f"input argument {i} was modified")


def report(case, target, message):
    return (
        f"FAIL seed={case.seed} family={case.family}{'/' + case.note if case.note else ''} "
        f"target={target} ({TARGETS[target]})\n"
        f"re-run: python tests/fuzz/fuzz.py --seed {case.seed} --target {target}"
        f"{' --family ' + case.family if case.family_forced else ''}\n"
        f"--- program ---\n{case.source}--- result ---\n{message}\n"
    )


def fuzz_one(seed, targets, family=None, verbose=False, out=sys.stdout):
    """Runs one seed on the targets; returns the list of (target, report) failures."""
    case = generate(seed, family)
    if verbose:
        print(f"seed {seed} ({case.family}{'/' + case.note if case.note else ''}):", file=out)
        print(case.source, file=out)
    failures = []
    for target in targets:
        t0 = time.time()
        try:
            run_case(case, target)
        except Failure as e:
            failures.append((target, report(case, target, str(e))))
            print(failures[-1][1], file=out, flush=True)
            continue
        if verbose:
            print(f"  {target}: ok ({time.time() - t0:.1f} s)", file=out, flush=True)
    return failures


def parse_seeds(text):
    if ".." in text:
        a, b = text.split("..")
        return int(a), (int(b) if b else None)
    return int(text), int(text)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seeds", default=None, help="A..B (inclusive) or A.. (open-ended)")
    p.add_argument("--seed", type=int, default=None, help="one seed")
    p.add_argument("--time", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--targets", "--target", default="cpu,sm80,sm90a,metal")
    p.add_argument("--family", default=None, choices=FAMILIES)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    targets = args.targets.split(",")
    for t in targets:
        if t not in TARGETS:
            p.error(f"unknown target {t!r}: expected one of {', '.join(TARGETS)}")
    if args.seed is not None:
        first, last = args.seed, args.seed
    elif args.seeds:
        first, last = parse_seeds(args.seeds)
    else:
        first, last = 0, None if args.time else 99
    start = time.time()
    failed, ran, seed = [], 0, first
    while last is None or seed <= last:
        if args.time is not None and time.time() - start > args.time:
            break
        failures = fuzz_one(seed, targets, args.family, args.verbose)
        failed += [(seed, t) for t, _ in failures]
        ran += 1
        if not args.verbose and ran % 10 == 0:
            print(
                f"{ran} seeds ({seed}), {len(failed)} failures, {time.time() - start:.0f} s",
                flush=True,
            )
        seed += 1
    print(
        f"ran {ran} seeds from {first} to {seed - 1} on {','.join(targets)}: {len(failed)} failures"
    )
    for s, t in failed:
        print(f"  seed {s} target {t}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
