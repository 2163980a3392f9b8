"""tilelang.quantize's decoder groups (`get_lop3_intrin_group`, `get_mxfp_intrin_group`)
and `interleave_weight`, as TileLang's dequantize examples use them: a kernel imports
each group's source and calls its function through `T.call_extern` on registers.

One kernel calls every supported decoder (also proving that many groups imported into
one module do not clash); its outputs must equal, bit for bit, the numpy decoders
below, which are written from the layouts and formulas of TileLang's decoders and
their reference functions, not from our C++. The same kernel compiles with NVRTC for
sm_80 and sm_90a (the PTX path); tests/gpu/test_quantize_intrin_gpu.py runs it there."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.quantize import get_lop3_intrin_group, get_mxfp_intrin_group, interleave_weight

THREADS = 64

# (source_bit, source_format, with_scaling, with_zeros, zeros_mode, storage_scope): every
# float16 combination TileLang has a decoder for
F16_CASES = (
    [
        (b, f, s, False, "original", "local")
        for b in (4, 2, 1)
        for f in ("uint", "int")
        for s in (False, True)
    ]
    + [(4, f, True, False, "original", "warp") for f in ("uint", "int")]
    + [
        (4, "uint", True, True, m, sc)
        for m in ("original", "rescale", "quantized")
        for sc in ("local", "warp")
    ]
    + [(2, "uint", True, True, m, "local") for m in ("original", "rescale", "quantized")]
    + [(1, "uint", True, True, m, "local") for m in ("original", "rescale")]
)
# (source_bit, out_dtype, source_format)
INT_CASES = [(b, "int8", f) for b in (4, 2, 1) for f in ("uint", "int")] + [
    (2, "int4", f) for f in ("uint", "int")
]
MXFP_CASES = [True, False]  # use_twiddling


def f16_group(case):
    bits, fmt, scaling, zeros, mode, scope = case
    return get_lop3_intrin_group(
        out_dtype="float16",
        source_format=fmt,
        source_bit=bits,
        storage_dtype="int8",
        with_scaling=scaling,
        with_zeros=zeros,
        zeros_mode=mode,
        storage_scope=scope,
    )


def every_decoder():
    """One kernel: each thread decodes its 8 packed bytes with every decoder."""
    f16 = [(c, f16_group(c)) for c in F16_CASES]
    ints = [
        (c, get_lop3_intrin_group(c[1], source_format=c[2], source_bit=c[0], storage_dtype="int8"))
        for c in INT_CASES
    ]
    mx = [
        get_mxfp_intrin_group(
            out_dtype="bfloat16",
            source_format="uint",
            source_bit=4,
            storage_dtype="uint8",
            use_twiddling=t,
        )
        for t in MXFP_CASES
    ]

    @T.prim_func
    def k(
        Q: T.Tensor((THREADS, 8), "int8"),
        S: T.Tensor((THREADS, 2), "float16"),
        Z: T.Tensor((THREADS, 2), "float16"),
        ZQ: T.Tensor((THREADS, 2), "float16"),
        QZ: T.Tensor((THREADS, 2), "int8"),
        O16: T.Tensor((len(f16), THREADS, 8), "float16"),
        O8: T.Tensor((len(ints), THREADS, 16), "int8"),
        OB: T.Tensor((len(mx), THREADS, 16), "bfloat16"),
    ):
        with T.Kernel(1, threads=THREADS) as _:
            tx = T.get_thread_binding()
            q = T.alloc_local((8,), "int8")
            qu = T.alloc_local((8,), "uint8")
            s = T.alloc_local((2,), "float16")
            z = T.alloc_local((2,), "float16")
            zq = T.alloc_local((2,), "float16")
            qz = T.alloc_local((2,), "int8")
            o16 = T.alloc_local((8,), "float16")
            o8 = T.alloc_local((16,), "int8")
            ob = T.alloc_local((16,), "bfloat16")
            for v in T.serial(8):
                q[v] = Q[tx, v]
                qu[v] = T.cast(Q[tx, v], "uint8")
            for v in T.serial(2):
                s[v] = S[tx, v]
                z[v] = Z[tx, v]
                zq[v] = ZQ[tx, v]
                qz[v] = QZ[tx, v]
            for c, (case, g) in enumerate(f16):
                T.import_source(g["c_source"])
                _, _, scaling, zeros, mode, scope = case
                args = [T.access_ptr(q, "r"), T.access_ptr(o16, "w")]
                warp = scope == "warp"
                if scaling:
                    args.append(T.access_ptr(s, "r"))
                if zeros and mode == "quantized" and warp:
                    args += [T.access_ptr(qz, "r"), 1, 1, 1]  # offsets of scale, zeros; nibble 1
                elif zeros:
                    args.append(T.access_ptr(zq if mode == "quantized" else z, "r"))
                if warp and not (zeros and mode == "quantized"):
                    args.append(1)
                T.call_extern(g["func_name"], *args, dtype="handle")
                for v in T.serial(8):
                    O16[c, tx, v] = o16[v]
            for c, (_case, g) in enumerate(ints):
                T.import_source(g["c_source"])
                for v in T.serial(16):
                    o8[v] = T.int8(0)
                T.call_extern("handle", g["func_name"], T.access_ptr(q, "r"), T.access_ptr(o8, "w"))
                for v in T.serial(16):
                    O8[c, tx, v] = o8[v]
            for c, g in enumerate(mx):
                T.import_source(g["c_source"])
                T.call_extern(
                    g["func_name"], T.address_of(qu[0]), T.address_of(ob[0]), 2, dtype="bfloat16"
                )
                for v in T.serial(16):
                    OB[c, tx, v] = ob[v]

    return k


# ---- numpy decoders, from TileLang's layouts and formulas ----


def f16_fields(bits, b):
    """The 8 unsigned fields a float16 decoder returns, in output order, from bytes b
    (uint8 array [..., 8]): 4 bits: output 2i is nibble i of the little-endian word,
    2i + 1 nibble 4 + i; 2 bits: outputs 2i, 2i + 1 are field i of byte 0, byte 1;
    1 bit: bit i and bit 4 + i of byte 0."""
    b = b.astype(np.int64)
    word = b[..., 0] | b[..., 1] << 8 | b[..., 2] << 16 | b[..., 3] << 24
    out = []
    for k in range(8):
        i, odd = divmod(k, 2)
        if bits == 4:
            out.append((word >> (16 * odd + 4 * i)) & 15)
        elif bits == 2:
            out.append((b[..., odd] >> (2 * i)) & 3)
        else:
            out.append((b[..., 0] >> (4 * odd + i)) & 1)
    return np.stack(out, -1)


def h(x):
    """float64 rounded to float16 and back (one rounding, as the f16x2 operations do);
    beyond 65520 that is infinity, as on the GPU."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def f16_reference(case, qbytes, S, Z, ZQ, QZ):
    bits, fmt, scaling, zeros, mode, scope = case
    x = f16_fields(bits, qbytes).astype(np.float64)
    if fmt == "int":
        x = {4: x - 8, 2: x - 2, 1: 2 * x - 1}[bits]
    side = np.arange(8) >= 4 if scope == "warp" else np.zeros(8, bool)  # second half: [1]
    s = np.where(side, S[:, 1:2], S[:, 0:1]).astype(np.float64)
    z = np.where(side, Z[:, 1:2], Z[:, 0:1]).astype(np.float64)
    if not scaling:
        return x.astype(np.float16)
    if not zeros:
        return h(x * s + 0.0).astype(np.float16)
    if mode == "original":
        return h(h(x - z) * s + 0.0).astype(np.float16)
    if mode == "rescale":
        if bits == 2:  # TileLang's 2-bit decoder rounds the product, then subtracts
            return h(h(x * s + 0.0) - z).astype(np.float16)
        return h(x * s - np.abs(z)).astype(np.float16)  # one fused rounding, zero negated
    # quantized: the integer zero, from the stored 16 bits or nibble 1 of the qzeros byte
    if scope == "warp":
        zint = np.where(side, QZ[:, 1:2] >> 4, QZ[:, 0:1] >> 4).astype(np.int64) & 15
    else:
        zint = ZQ.view(np.int16)[:, 0:1].astype(np.int64)
    return h(h(x - zint) * s + 0.0).astype(np.float16)


def int_reference(case, qbytes):
    """16 int8 outputs (int4: the 8 bytes written) of TileLang's integer decoders."""
    bits, out, fmt = case
    b = qbytes.astype(np.int64)
    vals = []
    if out == "int4":  # byte j of output word i: byte j of input word 0, shifted 2i, & 0x33
        res = np.stack([(b[..., j % 4] >> (2 * (j // 4))) & 0x33 for j in range(8)], -1)
        return res.astype(np.uint8).view(np.int8)
    for k in range(16):
        i, j = divmod(k, 4)  # output word i, byte j
        if bits == 4:  # words 0..1: nibble i of each byte of input word 0; 2..3: word 1
            wi, i = divmod(i, 2)
            vals.append((b[..., 4 * wi + j] >> (4 * i)) & 15)
        elif bits == 2:
            vals.append((b[..., j] >> (2 * i)) & 3)
        else:  # bytes 0, 1 then 0, 1 again: bit i, then bit 4 + i
            vals.append((b[..., j % 2] >> (i + 4 * (j // 2))) & 1)
    v = np.stack(vals, -1)
    if fmt == "int":
        v = {4: v - 7, 2: v - 2, 1: 2 * v - 1}[bits]
    return v.astype(np.int8)


FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def mxfp_reference(twiddling, qbytes):
    """16 bfloat16 bit patterns from 8 bytes (two words)."""
    b = qbytes.astype(np.int64)
    if not twiddling:  # word i: output 8i + j is the low nibble of byte 4i + j, 8i + 4 + j the high
        vals = [FP4[(b[..., 4 * (k // 8) + k % 4] >> (4 * ((k % 8) // 4))) & 15] for k in range(16)]
        return np.stack(vals, -1).astype(ml_dtypes.bfloat16).view(np.uint16)
    # TileLang's torch reference: byte pairs as 16 bits (first byte high), four positions
    # each, masked into bfloat16 bits and scaled by 2^126
    vals = []
    for k in range(16):
        pair, pos = divmod(k, 4)
        v = b[..., 2 * pair] << 8 | b[..., 2 * pair + 1]
        if pos < 3:
            bits = (v << (3 * pos)) & 0b1000000111000000
        else:
            bits = ((v << 1) & 0x8000) | ((v >> 3) & 0x0180) | ((v >> 7) & 0x0040)
        f = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64) * 2.0**126
        vals.append(f)
    return np.stack(vals, -1).astype(ml_dtypes.bfloat16).view(np.uint16)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.integers(-128, 128, (THREADS, 8)).astype(np.int8)
    # scales: ordinary, tiny (subnormal products) and large (overflow to infinity)
    S = np.concatenate(
        [
            rng.uniform(-3, 3, (THREADS - 16, 2)),
            rng.uniform(-1, 1, (8, 2)) * 2.0**-18,
            rng.choice([-5000.0, 4999.0, 3.0e4], (8, 2)),
        ]
    ).astype(np.float16)
    Z = rng.uniform(-2, 14, (THREADS, 2)).astype(np.float16)
    Z[:4] = np.float16(0)
    ZQ = rng.integers(0, 16, (THREADS, 2)).astype(np.uint16).view(np.float16)
    QZ = rng.integers(-128, 128, (THREADS, 2)).astype(np.int8)
    return Q, S, Z, ZQ, QZ


def run(target):
    Q, S, Z, ZQ, QZ = inputs()
    O16 = np.zeros((len(F16_CASES), THREADS, 8), np.float16)
    O8 = np.zeros((len(INT_CASES), THREADS, 16), np.int8)
    OB = np.zeros((len(MXFP_CASES), THREADS, 16), ml_dtypes.bfloat16)
    tilelang.compile(every_decoder(), target=target)(Q, S, Z, ZQ, QZ, O16, O8, OB)
    return (Q, S, Z, ZQ, QZ), (O16, O8, OB)


def check_all(ins, outs):
    Q, S, Z, ZQ, QZ = ins
    O16, O8, OB = outs
    qb = Q.view(np.uint8)
    bad = []
    for c, case in enumerate(F16_CASES):
        want = f16_reference(case, qb, S, Z, ZQ, QZ).view(np.uint16)
        got = O16[c].view(np.uint16)
        if not np.array_equal(got, want):
            t, e = np.argwhere(got != want)[0]
            bad.append(
                f"{f16_group(case)['func_name']}: thread {t} output {e}: {got[t, e]:#06x} != {want[t, e]:#06x}"
            )
    for c, case in enumerate(INT_CASES):
        want = int_reference(case, qb)
        got = O8[c, :, : want.shape[-1]]
        if not np.array_equal(got, want):
            bad.append(f"int case {case}: {got[0]} != {want[0]}")
    for c, tw in enumerate(MXFP_CASES):
        want = mxfp_reference(tw, qb)
        got = OB[c].view(np.uint16)
        if not np.array_equal(got, want):
            bad.append(f"mxfp twiddling={tw}: {got[0]} != {want[0]}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
)
def test_every_decoder_matches_numpy_bit_for_bit(target):
    check_all(*run(target))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_ptx_path_compiles_with_nvrtc(arch):
    src = tilelang.compile(every_decoder(), target=f"cuda -arch={arch}").get_kernel_source()
    for instr in ("lop3.b32", "fma.rn.f16x2", "sub.rn.f16x2", "prmt.b32", "fma.rn.bf16x2"):
        assert instr in src
    for name in ("decode_i4u_to_f16_scale_zeros_quantized_offset", "decode_fp4_to_bf16_twiddling"):
        assert f"{name}(" in src


# ---- interleave_weight ----


# where the decoder reads field k of chunk c (the fields one call decodes), as a bit of
# the 32-bit word: the decoders' read order, stated per layout
def read_position(nbits, target, c, k):
    if target == "float16":
        if nbits == 4:  # one chunk per word
            return 16 * (k % 2) + 4 * (k // 2)
        if nbits == 2:  # chunk c: bytes 2c, 2c + 1
            return 8 * (2 * c + k % 2) + 2 * (k // 2)
        return 8 * c + 4 * (k % 2) + k // 2  # 1 bit, chunk c: byte c
    if nbits == 4:  # 8 fields per word (the decoder takes two words)
        return 8 * (k % 4) + 4 * (k // 4)
    if nbits == 2:
        return 8 * (k % 4) + 2 * (k // 4)
    i, j = divmod(k, 4)  # 1 bit, chunk c: bytes 2c, 2c + 1
    return 16 * c + 8 * (j % 2) + 4 * (j // 2) + i


CHUNK = {
    ("float16", 4): 8,
    ("float16", 2): 8,
    ("float16", 1): 8,
    ("int8", 4): 8,
    ("int8", 2): 16,
    ("int8", 1): 16,
}


@pytest.mark.parametrize("target", ["float16", "int8"])
@pytest.mark.parametrize("nbits", [4, 2, 1])
def test_interleave_weight_puts_each_field_where_the_decoder_reads_it(nbits, target):
    rng = np.random.default_rng(nbits)
    natural = rng.integers(-128, 128, (3, 16)).astype(np.int8)  # 4 words a row
    words = natural.view(np.uint32).astype(np.int64)
    want = np.zeros_like(words)
    per = CHUNK[(target, nbits)]
    for e in range(32 // nbits):
        field = (words >> (nbits * e)) & ((1 << nbits) - 1)
        want |= field << read_position(nbits, target, e // per, e % per)
    got = interleave_weight(natural, nbits, target)
    assert got.dtype == np.int8 and got.shape == natural.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.astype(np.uint32))
    # int32 storage: the same bytes, returned as int8 (TileLang's view)
    as_i32 = interleave_weight(natural.view(np.int32), nbits, target)
    assert as_i32.shape == (3, 16) and np.array_equal(as_i32, got)


def test_interleaved_weights_decode_to_their_original_order():
    """The gemv example's use: interleave on the host, decode in the kernel; the kernel's
    outputs (its decoders checked above) are the original fields, in order."""
    rng = np.random.default_rng(7)
    natural = rng.integers(-128, 128, (THREADS, 8)).astype(np.int8)
    Q, S, Z, ZQ, QZ = inputs()
    Q = interleave_weight(natural, 4, "float16")
    O16 = np.zeros((len(F16_CASES), THREADS, 8), np.float16)
    O8 = np.zeros((len(INT_CASES), THREADS, 16), np.int8)
    OB = np.zeros((len(MXFP_CASES), THREADS, 16), ml_dtypes.bfloat16)
    tilelang.compile(every_decoder(), target="cpu")(Q, S, Z, ZQ, QZ, O16, O8, OB)
    nb = natural.view(np.uint8).astype(np.int64)
    first8 = np.stack([(nb[:, j // 2] >> (4 * (j % 2))) & 15 for j in range(8)], -1)
    assert np.array_equal(
        O16[F16_CASES.index((4, "uint", False, False, "original", "local"))], first8
    )
    Q8 = interleave_weight(natural, 4, "int8")
    O8[:] = 0
    tilelang.compile(every_decoder(), target="cpu")(Q8, S, Z, ZQ, QZ, O16, O8, OB)
    first16 = np.stack([(nb[:, j // 2] >> (4 * (j % 2))) & 15 for j in range(16)], -1)
    assert np.array_equal(O8[INT_CASES.index((4, "int8", "uint"))], first16)


# ---- errors ----


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"out_dtype": "float32"},
            r"out_dtype must be one of 'float16', 'int8', 'int4', got 'float32'",
        ),
        (
            {"out_dtype": "float16", "source_format": "float"},
            r"source_format must be 'int' or 'uint', got 'float'",
        ),
        (
            {"out_dtype": "float16", "source_bit": 3},
            r"source_bit must be one of 1, 2, 4 for out_dtype 'float16', got 3",
        ),
        (
            {"out_dtype": "int4", "source_bit": 4},
            r"source_bit must be one of 2 for out_dtype 'int4', got 4",
        ),
        (
            {"out_dtype": "float16", "storage_dtype": "float16"},
            r"storage_dtype must be one of .*got 'float16'",
        ),
        (
            {"out_dtype": "float16", "zeros_mode": "shifted"},
            r"zeros_mode must be 'original', 'rescale' or 'quantized', got 'shifted'",
        ),
        (
            {"out_dtype": "float16", "storage_scope": "shared"},
            r"storage_scope must be 'local' or 'warp', got 'shared'",
        ),
        (
            {"out_dtype": "int8", "with_scaling": True},
            r"need out_dtype 'float16', got out_dtype 'int8'",
        ),
        ({"out_dtype": "float16", "with_zeros": True}, r"with_zeros=True needs with_scaling=True"),
        (
            {
                "out_dtype": "float16",
                "source_format": "int",
                "with_scaling": True,
                "with_zeros": True,
            },
            r"with_zeros=True needs source_format 'uint'.*got 'int'",
        ),
        (
            {
                "out_dtype": "float16",
                "source_bit": 1,
                "with_scaling": True,
                "with_zeros": True,
                "zeros_mode": "quantized",
            },
            r"zeros_mode 'quantized' needs source_bit 4 or 2, got source_bit 1",
        ),
        (
            {
                "out_dtype": "float16",
                "source_bit": 2,
                "with_scaling": True,
                "storage_scope": "warp",
            },
            r"storage_scope 'warp' with scaling .* needs source_bit 4, got source_bit 2",
        ),
        ({"out_dtype": "float16", "with_scaling": 1}, r"with_scaling must be True or False, got 1"),
    ],
)
def test_lop3_group_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        get_lop3_intrin_group(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"out_dtype": "float16"}, r"out_dtype must be 'bfloat16' .*got 'float16'"),
        (
            {"out_dtype": "float8_e4m3"},
            r"out_dtype must be one of 'float16', 'bfloat16', got 'float8_e4m3'",
        ),
        ({"source_format": "fp"}, r"source_format must be 'int' or 'uint', got 'fp'"),
        ({"source_bit": 8}, r"source_bit must be 4 \(FP4\), got 8"),
        (
            {"storage_dtype": "int16"},
            r"storage_dtype must be one of 'int32', 'int8', 'uint8', got 'int16'",
        ),
        ({"use_twiddling": "yes"}, r"use_twiddling must be True or False, got 'yes'"),
    ],
)
def test_mxfp_group_errors_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        get_mxfp_intrin_group(**kwargs)


def test_interleave_weight_errors_name_the_argument():
    w = np.zeros((2, 8), np.int8)
    with pytest.raises(
        ValueError, match=r"target_dtype must be one of 'float16', 'int8', got 'bfloat16'"
    ):
        interleave_weight(w, 4, "bfloat16")
    with pytest.raises(ValueError, match=r"nbits must be 1, 2 or 4, got 3"):
        interleave_weight(w, 3)
    with pytest.raises(
        ValueError, match=r"qweight must be a numpy array or a torch tensor, got list"
    ):
        interleave_weight([[1, 2, 3, 4]])
    with pytest.raises(ValueError, match=r"qweight must hold packed integers, got dtype float32"):
        interleave_weight(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"whole 32-bit words, got 6 elements of int8 \(6 bytes\)"):
        interleave_weight(np.zeros((2, 6), np.int8))


def test_groups_take_tilelang_dtype_objects_and_name_upstreams_functions():
    g = get_lop3_intrin_group(T.float16, T.int, 4, T.int8, with_scaling=True)
    assert g["func_name"] == "decode_i4s_to_f16_scale"
    assert get_lop3_intrin_group("int8", "uint", 2)["func_name"] == "decode_i2u_to_i8s"
    m = get_mxfp_intrin_group(T.bfloat16, T.uint, 4, T.uint8, use_twiddling=True)
    assert m["func_name"] == "decode_fp4_to_bf16_twiddling" and "asm(" in m["c_source"]


def test_tir_u8_to_f4_to_bf16_builds_the_exponent_scaled_bfloat16():
    """TileLang's elementwise FP4 converter (the grouped MXFP4 example imports it): sign,
    exponent + 126 + scale (at most 255), mantissa bit; a zero exponent is not subnormal."""
    from tilelang.quantize import _tir_u8_to_f4_to_bf16

    @T.prim_func
    def k(
        Q: T.Tensor((256,), "uint8"),
        Sc: T.Tensor((256,), "uint8"),
        O: T.Tensor((256, 2), "bfloat16"),
    ):
        with T.Kernel(1, threads=256) as _:
            tx = T.get_thread_binding()
            for p in T.serial(2):
                O[tx, p] = _tir_u8_to_f4_to_bf16(4, Q[tx], p, Sc[tx], "bfloat16")

    q = np.arange(256, dtype=np.uint8)
    sc = np.random.default_rng(1).integers(0, 256, 256).astype(np.uint8)
    o = np.zeros((256, 2), ml_dtypes.bfloat16)
    tilelang.compile(k, target="cpu")(q, sc, o)
    for p in range(2):
        f = (q.astype(np.int64) >> (4 * p)) & 15
        e = np.minimum(((f >> 1) & 3) + 126 + sc, 255)
        want = ((f >> 3) << 15) | (e << 7) | ((f & 1) << 6)
        np.testing.assert_array_equal(o[:, p].view(np.uint16), want.astype(np.uint16))
    with pytest.raises(ValueError, match=r"nbit must be 4, got 8"):
        _tir_u8_to_f4_to_bf16(8, None, 0, 0, "bfloat16")
