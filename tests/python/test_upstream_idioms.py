"""Idioms of TileLang's upstream examples that our package got wrong or lacked, found by
running those examples (docs/design/tilelang_examples.md; fixed in commit 786dc78, 2026-12-02,
unless named below):
- a `T.call_extern(...)` call on its own line is a statement (TVMScript's T.evaluate),
  and `T.call_extern(name, *args, dtype=...)` takes the result type as a keyword;
- `T.import_source(code)` and `T.Kernel(..., prelude=code)` on every target;
- a T.Parallel loop that writes only a thread's registers runs whole on every thread;
- a branch on a register every thread holds alike (`v = T.alloc_var(...); v = Flag[bx]`)
  gets its barriers; a tile op under a branch on a register that differs between
  threads is an error;
- `T.thread_binding(0, n, thread=...)`, `T.disable_warp_group_reg_alloc()`,
  `T.annotate_min_blocks_per_sm(n)`, TVM's `T.parallel(start, stop)`, a kernel's own `__nanosleep`
  in the CUDA emulator (2026-12-05);
- a kernel whose own code does not compile is the user's error, not an internal one;
- `T.access_ptr` and TVM's `Buffer.access_ptr` / `elem_offset_of` (commit 6ae6ec0, 2026-12-02);
- a shared per-row vector updated in a loop over a register row vector that several
  threads hold is written by one of them; per-thread stores at the kernel's top level
  get no barrier between them (commit d139523, 2026-12-02)."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

ALL = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
CUDA = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]

TWICE = """
#if defined(__CUDACC__) && !defined(TL_EMULATE)
__device__
#endif
inline void twice(float* x) { x[0] = 2.0f * x[0]; }
"""


def doubled_by_extern(how):
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8), prelude=TWICE if how == "prelude" else "") as _:
            if how == "import":
                T.import_source(TWICE)
                T.import_source(TWICE)  # once is enough: imported once
                T.import_source(None)
            tx = T.thread_binding(0, 16, thread="threadIdx.x")
            ty = T.thread_binding(0, 8, thread="threadIdx.y")
            buf = T.alloc_local((1,), "float32")
            buf[0] = A[ty, tx]
            if how == "keyword":
                T.evaluate(T.call_extern("twice", T.address_of(buf[0]), dtype="handle"))
            else:
                T.call_extern("handle", "twice", T.address_of(buf[0]))  # a statement
            A[ty, tx] = buf[0]

    return k


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("how", ["import", "prelude"])
def test_a_bare_extern_call_runs_with_imported_code(target, how):
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    kernel = tilelang.compile(doubled_by_extern(how), target=target)
    kernel(a)
    np.testing.assert_array_equal(a, 2 * np.arange(128, dtype=np.float32).reshape(8, 16))
    if target.startswith("cuda"):
        assert kernel.get_kernel_source().count("inline void twice") == 1


def test_call_extern_takes_the_dtype_as_a_keyword():
    a = np.ones((8, 16), np.float32)
    with pytest.raises(tilelang.TileLangError, match="calls of twice"):
        tilelang.compile(doubled_by_extern("keyword"), target="cpu")  # no code imported
    with pytest.raises(tilelang.TileLangError, match="the function name must be a string, got 3"):

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _:
                T.call_extern("handle", 3)

    del a


def test_code_of_its_own_that_does_not_compile_is_the_users_error():
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(doubled_by_extern("keyword"), target="cpu")
    text = str(err.value)
    assert (
        "test_upstream_idioms.py" in text and "does not compile; it brings code of its own" in text
    )
    assert "internal compiler error" not in text and "twice" in text


def thread_binding_errors(thread, stop):
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8)) as _:
            tx = T.thread_binding(0, stop, thread=thread)
            A[0, tx] = 1.0

    return k


@pytest.mark.parametrize(
    "thread, stop, message",
    [
        (
            "threadIdx.w",
            16,
            "thread must be one of threadIdx.x, threadIdx.y, threadIdx.z, got 'threadIdx.w'",
        ),
        (
            "threadIdx.x",
            32,
            r"the range must be \[0, 16\), the threads T.Kernel launched along threadIdx.x",
        ),
    ],
)
def test_thread_binding_names_the_launched_axis(thread, stop, message):
    with pytest.raises(tilelang.TileLangError, match=message):
        thread_binding_errors(thread, stop)


def register_rows():
    @T.prim_func
    def k(
        A: T.Tensor((128, 4), "float32"),
        F: T.Tensor((128,), "float32"),
        B: T.Tensor((128, 4), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            frag = T.alloc_fragment((4,), "float32")
            loc = T.alloc_local((4,), "float32")
            for i in T.Parallel(4):
                frag[i] = F[i] * 3
            for v in T.serial(4):
                loc[v] = A[tx, v]
            for v in T.Parallel(
                4
            ):  # writes only this thread's registers: every thread runs it whole
                loc[v] = loc[v] * 2 + frag[v]
            for v in T.serial(4):
                B[tx, v] = loc[v]

    return k


@pytest.mark.parametrize("target", ALL)
def test_a_parallel_loop_over_registers_runs_on_every_thread(target):
    a = np.random.default_rng(0).random((128, 4), dtype=np.float32)
    f = np.arange(128, dtype=np.float32)
    b = np.zeros_like(a)
    tilelang.compile(register_rows(), target=target)(a, f, b)
    np.testing.assert_allclose(b, a * 2 + f[:4] * 3, rtol=1e-6)


def normalize_unless_flagged(use_register):
    @T.prim_func
    def k(
        X: T.Tensor((4, 64), "float32"),
        Flag: T.Tensor((4,), "int32"),
        Y: T.Tensor((4, 64), "float32"),
    ):
        with T.Kernel(4, threads=128) as bx:
            f = T.alloc_var("int32")
            f = Flag[bx]
            if (f < 0) if use_register else (Flag[bx] < 0):
                for j in T.Parallel(64):
                    Y[bx, j] = 0.0
            else:
                t = T.alloc_fragment((1, 64), "float32")
                s = T.alloc_fragment((1,), "float32")
                for j in T.Parallel(64):
                    t[0, j] = X[bx, j] * X[bx, j]
                T.reduce_sum(t, s, dim=1)
                for j in T.Parallel(64):
                    Y[bx, j] = X[bx, j] / T.sqrt(s[0])

    return k


@pytest.mark.parametrize("target", ALL)
def test_a_branch_on_a_register_every_thread_holds_alike_gets_its_barriers(target):
    x = np.random.default_rng(1).random((4, 64), dtype=np.float32) + 0.1
    flag = np.array([1, -1, 2, 3], np.int32)
    want = x / np.sqrt((x * x).sum(1, keepdims=True))
    want[1] = 0
    for use_register in (False, True):
        y = np.zeros_like(x)
        tilelang.compile(normalize_unless_flagged(use_register), target=target)(x, flag, y)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    src = tilelang.compile(
        normalize_unless_flagged(True), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    assert src.count("__syncthreads();") >= 2


def copy_under_varying_register():
    @T.prim_func
    def k(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            v = T.alloc_var("int32")
            v = tx % 2
            S = T.alloc_shared((64,), "float32")
            if v == 0:
                T.copy(X, S)
            T.copy(S, Y)

    return k


@pytest.mark.parametrize("target", ["cpu", *CUDA])
def test_a_tile_op_under_a_branch_on_a_varying_register_is_refused(target):
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(copy_under_varying_register(), target=target)
    text = str(err.value)
    assert "test_upstream_idioms.py" in text, text
    assert "the condition reads 'v', a register that may differ between threads" in text, text


def test_disable_warp_group_reg_alloc_keeps_the_launch_registers():
    from test_wgmma_gemm import wgmma_gemm

    plain = wgmma_gemm(128, 128, 64, 64, 64, 32, "float16", False, False, 128, 0, 2)
    src = tilelang.compile(plain, target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::setmaxnreg_dec<24>();" in src  # warp specialized, registers moved

    kept = hinted_pipeline(T.disable_warp_group_reg_alloc)
    src = tilelang.compile(kept, target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::warp_leader_rank" in src and "setmaxnreg_" not in src, src
    rng = np.random.default_rng(2)
    a, b = rng.random((128, 64)).astype(np.float16), rng.random((64, 128)).astype(np.float16)
    for target in ("cpu", "cuda -arch=sm_90a -emulate", "metal -emulate"):
        c = np.zeros((128, 128), np.float32)
        tilelang.compile(kept, target=target)(a, b, c)
        np.testing.assert_allclose(
            c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3
        )


def hinted_pipeline(hints, threads=128):
    @T.prim_func
    def main(
        A: T.Tensor((128, 64), "float16"),
        B: T.Tensor((64, 128), "float16"),
        C: T.Tensor((128, 128), "float32"),
    ):
        with T.Kernel(2, 2, threads=threads) as (bx, by):
            hints()
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[by * 64, k * 32], a)
                T.copy(B[k * 32, bx * 64], b)
                T.gemm(a, b, acc)
            T.copy(acc, C[by * 64, bx * 64])

    return main


def test_register_hints_set_the_warp_specialized_counts():
    """T.annotate_producer_reg_dealloc / annotate_consumer_reg_alloc (TileLang's hints
    for its automatic warp specialization) give the setmaxnreg counts; the pipeline
    still computes the same on every target."""

    def hints():
        T.annotate_producer_reg_dealloc(40)
        T.annotate_consumer_reg_alloc(232)

    src = tilelang.compile(hinted_pipeline(hints), target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::setmaxnreg_dec<40>();" in src and "tl::setmaxnreg_inc<232>();" in src, src

    def defaults():
        T.annotate_producer_reg_dealloc()

    src = tilelang.compile(
        hinted_pipeline(defaults), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    assert "tl::setmaxnreg_dec<24>();" in src

    rng = np.random.default_rng(3)
    a, b = rng.random((128, 64)).astype(np.float16), rng.random((64, 128)).astype(np.float16)
    for target in (
        "cpu",
        "cuda -arch=sm_90a -emulate",
        "cuda -arch=sm_80 -emulate",
        "metal -emulate",
    ):
        c = np.zeros((128, 128), np.float32)
        tilelang.compile(hinted_pipeline(hints), target=target)(a, b, c)
        np.testing.assert_allclose(
            c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3
        )


def test_register_hints_that_overflow_the_pool_are_refused():
    def hints():
        T.annotate_producer_reg_dealloc(240)
        T.annotate_consumer_reg_alloc(240)

    with pytest.raises(tilelang.TileLangError, match="exceed the 65536 registers"):
        tilelang.compile(hinted_pipeline(hints, threads=256), target="cuda -arch=sm_90a")
    with pytest.raises(tilelang.TileLangError, match="a multiple of 8 from 24 to 240, got int 250"):
        tilelang.compile(hinted_pipeline(lambda: T.annotate_consumer_reg_alloc(250)))


def test_max_nreg_aliases():
    @T.prim_func
    def main(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx < 128:
                T.dec_max_nreg(40)
            else:
                T.inc_max_nreg(232)
            T.no_set_max_nreg()
            A[tx] = 1.0

    src = tilelang.compile(main, target="cuda -arch=sm_90a").get_kernel_source()
    assert "setmaxnreg_dec<40>" in src and "setmaxnreg_inc<232>" in src, src


def unpack(convert, dtype):
    from tilelang import quantize

    conv = getattr(quantize, convert)("uint", 8)

    @T.prim_func
    def k(Q: T.Tensor((4, 8), "uint8"), O: T.Tensor((4, 16), dtype)):
        with T.Kernel(1, threads=4) as _:
            tx = T.get_thread_binding()
            for i in T.serial(16):
                O[tx, i] = conv(4, Q[tx, i // 2], i % 2, dtype)

    return k


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a -emulate"])
def test_quantize_converters_unpack_nibbles(target):
    q = np.random.default_rng(3).integers(0, 256, (4, 8), dtype=np.uint8)
    nib = np.stack([q & 0xF, q >> 4], axis=-1).reshape(4, 16)
    u = tilelang.compile(
        unpack("_tir_packed_to_unsigned_convert", "float16"), out_idx=[1], target=target
    )(q)
    np.testing.assert_array_equal(u, nib.astype(np.float16))
    s = tilelang.compile(
        unpack("_tir_packed_int_to_int_convert", "int8"), out_idx=[1], target=target
    )(q)
    np.testing.assert_array_equal(
        s, np.where(nib >= 8, nib.astype(np.int16) - 16, nib).astype(np.int8)
    )
    from tilelang import quantize

    with pytest.raises(ValueError, match="nbit must divide the storage word of 8 bits, got 3"):
        quantize._tir_packed_to_unsigned_convert("uint", 8)(3, 0, 0, "int8")


def test_index_to_coordinates_is_row_major():
    @T.prim_func
    def k(A: T.Tensor((3, 4, 5), "float32"), B: T.Tensor((60,), "float32")):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            if tx < 60:
                i, j, l = T.index_to_coordinates(tx, A.shape)
                B[tx] = A[i, j, l]

    a = np.random.default_rng(4).random((3, 4, 5), dtype=np.float32)
    b = np.zeros(60, np.float32)
    tilelang.compile(k, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a.reshape(-1))
    assert T.index_to_coordinates(17, (3, 4, 5)) == (0, 3, 2)


def test_an_atomics_previous_value_differs_between_threads():
    @T.prim_func
    def ticket(
        C: T.Tensor((1,), "int32"), X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")
    ):
        with T.Kernel(1, threads=128) as _:
            S = T.alloc_shared((64,), "float32")
            v = T.alloc_var("int32")
            v = T.atomic_add(C[0], 1, return_prev=True)  # 0 for one thread only
            if v == 0:
                T.copy(X, S)
            T.copy(S, Y)

    with pytest.raises(
        tilelang.TileLangError, match="the condition reads 'v', a register that may differ"
    ):
        tilelang.compile(ticket, target="cpu")


SCALE4 = """
#if defined(__CUDACC__) && !defined(TL_EMULATE)
__device__
#endif
inline void scale4(const float* src, float* dst, int n) {
  for (int i = 0; i < 4; ++i) dst[i] = float(n) * src[i];
}
"""


@pytest.mark.parametrize("target", ALL)
def test_access_ptr_passes_buffers_elements_and_offsets(target):
    """T.access_ptr(buffer | element | slice, mask, extent=, offset=) and TVM's
    Buffer.access_ptr hand a callee the address of the right element."""

    @T.prim_func
    def k(
        A: T.Tensor((4, 8), "float32"),
        B: T.Tensor((4, 8), "float32"),
        C: T.Tensor((4, 8), "float32"),
    ):
        with T.Kernel(1, threads=4) as _:
            T.import_source(SCALE4)
            tx = T.get_thread_binding()
            src = T.alloc_local((8,), "float32")
            dst = T.alloc_local((8,), "float32")
            for i in T.serial(8):
                src[i] = A[tx, i]
            T.call_extern("handle", "scale4", T.access_ptr(src, "r"), T.access_ptr(dst, "w"), 2)
            T.call_extern(
                "handle",
                "scale4",
                src.access_ptr("r", offset=4),
                T.access_ptr(dst[4], "w", extent=4),
                3,
            )
            for i in T.serial(8):
                B[tx, i] = dst[i]
            S = T.alloc_shared((4, 8), "float32")
            for i in T.serial(8):
                S[tx, i] = A[tx, i]
            T.sync_threads()
            # rows 1..2 of S, from its slice and from a flat offset, scaled into C
            T.call_extern(
                "handle", "scale4", T.access_ptr(S[1, 0:4], "r"), T.access_ptr(C[tx, 0], "w"), 1
            )
            T.call_extern(
                "handle",
                "scale4",
                T.access_ptr(S, "r", offset=S.elem_offset_of([2, 4])),
                T.access_ptr(C, "w", offset=tx * 8 + 4),
                1,
            )

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros_like(a)
    c = np.zeros_like(a)
    tilelang.compile(k, target=target)(a, b, c)
    np.testing.assert_array_equal(b[:, :4], 2 * a[:, :4])
    np.testing.assert_array_equal(b[:, 4:], 3 * a[:, 4:])
    np.testing.assert_array_equal(c, np.tile(np.concatenate([a[1, :4], a[2, 4:]]), (4, 1)))


@pytest.mark.parametrize("target", ALL)
def test_access_ptr_masks_order_shared_accesses_as_reads_or_writes(target):
    """The barrier planner takes an "r" address as a read of the shared buffer: two
    callees reading the tile need no barrier between them, and a "w" address is a
    write the next reader waits for. The emulators' race detector checks the plan."""

    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=4) as _:
            T.import_source(SCALE4)
            tx = T.get_thread_binding()
            S = T.alloc_shared((4, 8), "float32")
            R = T.alloc_shared((4, 8), "float32")
            out = T.alloc_local((8,), "float32")
            T.copy(A, S)
            # every thread reads the row after its own: S must be written, then only read
            nxt = (tx + 1) % 4
            T.call_extern(
                "handle", "scale4", T.access_ptr(S[nxt, 0], "r"), T.access_ptr(out, "w"), 2
            )
            T.call_extern(
                "handle", "scale4", T.access_ptr(S[nxt, 4], "r"), T.access_ptr(out[4], "w"), 3
            )
            # R written through "w" addresses, then read by another thread
            T.call_extern(
                "handle", "scale4", T.access_ptr(out, "r"), T.access_ptr(R[tx, 0], "w"), 1
            )
            T.call_extern(
                "handle", "scale4", T.access_ptr(out[4], "r"), T.access_ptr(R[tx, 4], "w"), 1
            )
            for i in T.serial(8):
                B[tx, i] = R[nxt, i]

    kernel = tilelang.compile(k, target=target)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros_like(a)
    kernel(a, b)
    rolled = np.roll(np.roll(a, -1, axis=0), -1, axis=0)  # row tx + 2 of A
    np.testing.assert_array_equal(b[:, :4], 2 * rolled[:, :4])
    np.testing.assert_array_equal(b[:, 4:], 3 * rolled[:, 4:])
    if "cuda" in target:
        body = kernel.get_kernel_source()
        body = body[body.index("__global__") :]
        # after the copy into S, before R reuses S's bytes, after the writes into R;
        # none between the two reads of S
        reads = body[body.index("scale4((&S[") : body.rindex("scale4((&S[")]
        assert "__syncthreads" not in reads
        assert body.count("__syncthreads();") == 3


def test_access_ptr_checks_its_arguments():
    def build(mask="r", target=None, extent=None):
        @T.prim_func
        def k(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=4) as _:
                T.call_extern(
                    "handle", "f", T.access_ptr(A if target is None else 3, mask, extent=extent)
                )

        return k

    with pytest.raises(
        tilelang.TileLangError,
        match="access_type must be 'r', 'w', 'rw' or a mask 1, 2, 3; got 'x'",
    ):
        build(mask="x")
    with pytest.raises(
        tilelang.TileLangError,
        match="takes a buffer, a buffer element such as A\\[i, j\\] or a slice, got 3",
    ):
        build(target=3)
    with pytest.raises(tilelang.TileLangError, match="extent must be at least 1 element, got 0"):
        build(extent=0)


@pytest.mark.parametrize("target", ALL)
def test_a_row_vector_in_shared_memory_is_updated_once_per_row(target):
    """A per-row vector the compiler keeps in shared memory (a later T.Parallel reads
    it by its leading index), updated in place in a loop laid out by a register row
    vector that several threads hold alike: one of them writes (round four:
    flash_decoding's gqa_decode_varlen_logits, where 8 threads raced on `logsum`)."""
    M, K, NB = 64, 32, 4

    @T.prim_func
    def k(A: T.Tensor((M, K), "float32"), Out: T.Tensor((M, NB), "float32")):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment([M, K], "float32")
            s = T.alloc_fragment([M], "float32")
            total = T.alloc_fragment([M], "float32")
            S = T.alloc_shared([M, NB], "float32")
            T.copy(A, acc)
            T.fill(total, 1.0)
            for _ in T.serial(3):
                T.reduce_sum(acc, s, dim=1)
                for i in T.Parallel(M):
                    total[i] = total[i] * 2.0 + s[i]
            for h, j in T.Parallel(M, NB):
                S[h, j] = total[h] + j
            T.copy(S, Out)

    a = np.random.default_rng(5).integers(-3, 4, (M, K)).astype(np.float32)
    expect = np.ones(M, np.float32)
    for _ in range(3):
        expect = expect * 2 + a.sum(1)
    out = np.zeros((M, NB), np.float32)
    tilelang.compile(k, target=target)(a, out)
    np.testing.assert_array_equal(out, expect[:, None] + np.arange(NB, dtype=np.float32))


def test_per_thread_stores_at_the_kernel_top_level_need_no_barrier_between_them():
    """Two stores each thread makes to its own elements of a shared buffer are thread-
    level code at the kernel's top level as inside a loop: no barrier between them,
    one before the read of another thread's element."""

    @T.prim_func
    def k(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((256,), "float32")
            S[tx * 2] = A[tx]
            S[tx * 2 + 1] = A[tx] + 1.0
            B[tx] = S[(tx * 2 + 3) % 256]

    src = tilelang.compile(k, target="cuda -arch=sm_90a -emulate").get_kernel_source()
    body = src[src.index("__global__") : src.index("#ifdef TL_EMULATE")]
    tags = [m.start() for m in re.finditer(r'"S\|', body)]  # store, store, read
    assert len(tags) == 3 and body.count("__syncthreads()") == 1
    assert tags[1] < body.index("__syncthreads()") < tags[2]
    for target in ("cpu", "cuda -arch=sm_90a -emulate"):
        a = np.arange(128, dtype=np.float32)
        b = np.zeros_like(a)
        tilelang.compile(k, target=target)(a, b)
        np.testing.assert_array_equal(b, np.roll(a, -1) + 1)


def hopper_style_gemm(stages, stage):
    """Round four's idioms of Hopper kernels: T.Pipelined(num_stages=0, stage=[...])
    (the stages given by hand set the depth) and T.gemm(wg_wait=-1) + T.wait_wgmma(0)."""
    M = N = 64
    BK, KT = 32, 4

    @T.prim_func
    def k(
        A: T.Tensor((M, BK * KT), "float16"),
        B: T.Tensor((BK * KT, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((BK, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            for ko in T.Pipelined(KT, num_stages=stages, order=[0, 1, 2], stage=stage):
                T.copy(A[0, ko * BK], a)
                T.copy(B[ko * BK, 0], b)
                T.gemm(a, b, c, wg_wait=-1)
            T.wait_wgmma(0)
            T.copy(c, C)

    return k


@pytest.mark.parametrize("target", ALL)
def test_stages_by_hand_set_the_depth_and_wait_wgmma_waits_where_gemms_are_async(target):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    tilelang.compile(hopper_style_gemm(0, [0, 0, 1]), target=target)(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_a_stage_below_minus_one_is_refused():
    with pytest.raises(
        tilelang.TileLangError, match=r"stage=\[0, -2, 1\] has entries \[-2\] below -1"
    ):
        hopper_style_gemm(2, [0, -2, 1])


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a -emulate"])
def test_an_inner_loop_variable_leaves_the_outer_ones_name_after_it(target):
    """TVMScript scopes loop variables: after `for i in T.Parallel(...)` inside `for i in
    T.serial(...)`, `i` is the outer loop's again (round five: nsa_bwd's dqkv kernel)."""
    N, M = 4, 8

    @T.prim_func
    def k(A: T.Tensor((N, M), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as _:
            row = T.alloc_fragment((M,), "float32")
            for i in T.serial(N):
                for i in T.Parallel(M):  # shadows the outer i
                    row[i] = A[0, i] * 0 + 1.0
                B[i] = row[0] * i

    b = np.zeros(N, np.float32)
    tilelang.compile(k, target=target)(np.zeros((N, M), np.float32), b)
    np.testing.assert_array_equal(b, np.arange(N, dtype=np.float32))


def test_a_value_assigned_in_a_loop_still_has_none_after_it():
    with pytest.raises(tilelang.TileLangError, match="'x' is assigned inside the loop"):

        @T.prim_func
        def k(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4) as _:
                x = 0
                for j in T.serial(4):
                    x = j * 2
                A[0] = x


@pytest.mark.parametrize("target", ALL)
def test_round_five_names(target):
    """`with T.Kernel(n) as (bx,)`, T.atomic_addx2 / T.atomic_addx4 (each of the 2 or 4
    consecutive elements added atomically) and T.loop_break()."""
    N = 8

    @T.prim_func
    def k(
        A: T.Tensor((N, 8), "float32"), B: T.Tensor((N, 8), "float32"), C: T.Tensor((N,), "int32")
    ):
        with T.Kernel(N, threads=1) as (bx,):
            acc = T.alloc_local((8,), "float32")
            for j in T.serial(8):
                acc[j] = A[bx, j] * 2.0
            T.atomic_addx2(B[bx, 0], acc[0])
            T.atomic_addx4(B[bx, 4], acc[4:8])
            T.atomic_addx2(B[bx, 2:4], A[bx, 2])
            n = T.alloc_var("int32", init=0)
            for j in T.serial(8):
                if j == bx:
                    T.loop_break()
                n = n + 1
            C[bx] = n

    a = np.arange(N * 8, dtype=np.float32).reshape(N, 8)
    b = np.ones((N, 8), np.float32)
    c = np.zeros(N, np.int32)
    tilelang.compile(k, target=target)(a, b, c)
    want = 1 + 2 * a
    want[:, 2:4] = 1 + a[:, 2:4]
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(c, np.arange(N))


def test_atomic_add_runs_check_their_width():
    with pytest.raises(tilelang.TileLangError, match=r"T.atomic_addx4 value must cover 4 elements"):

        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1) as _:
                T.atomic_addx4(A[0], A[0:2])

    # return_prev=True on the vector forms is supported since 63e9084 (tests/python/
    # test_atomic.py checks the values it returns).


@pytest.mark.parametrize("target", ALL)
def test_atomic_addx4_in_a_parallel_loop(target):
    """Upstream's use (sparse_mla_bwd): each iteration of a T.Parallel adds its own run
    of 4 elements, gathered through an index tensor, so rows repeat."""
    M, N = 16, 32

    @T.prim_func
    def k(
        A: T.Tensor((M, N), "float32"), Idx: T.Tensor((M,), "int32"), B: T.Tensor((4, N), "float32")
    ):
        with T.Kernel(1, threads=64) as _:
            S = T.alloc_shared((M, N), "float32")
            T.copy(A, S)
            for i, j in T.Parallel(M, N // 4):
                T.atomic_addx4(B[Idx[i], j * 4], S[i, j * 4])

    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (M, N)).astype(np.float32)
    idx = rng.integers(0, 4, M).astype(np.int32)
    b = np.zeros((4, N), np.float32)
    tilelang.compile(k, target=target)(a, idx, b)
    want = np.zeros((4, N), np.float32)
    np.add.at(want, idx, a)
    np.testing.assert_array_equal(b, want)


def parallel_loaded_gemm(M, N, K, cast=False):
    """Tile loads written as T.Parallel element copies in a T.Pipelined loop, as
    TileLang's example_gemm_intrinsics and many others write them."""
    BM, BN, BK = 64, 64, 32

    @T.prim_func
    def k(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            As = T.alloc_shared((BM, BK), "float16")
            Bs = T.alloc_shared((BK, BN), "float32" if cast else "float16")
            acc = T.alloc_fragment((BM, BN), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=3):
                for i, kk in T.Parallel(BM, BK):
                    As[i, kk] = A[by * BM + i, ko * BK + kk]
                for kk, j in T.Parallel(BK, BN):
                    Bs[kk, j] = B[ko * BK + kk, bx * BN + j]
                T.gemm(As, Bs, acc)
            T.copy(acc, C[by * BM, bx * BN])

    return k


@pytest.mark.parametrize(
    "target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "cpu"]
)
def test_parallel_tile_loads_in_a_pipeline_become_its_producers(target):
    M, N, K = 96, 80, 100  # tails in every dimension: out-of-bounds elements read as zeros
    rng = np.random.default_rng(8)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel = tilelang.compile(parallel_loaded_gemm(M, N, K), target=target)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    if "sm_80" in target:  # issued ahead as cp.async, not loaded at the top of every step
        assert "cp_async" in kernel.get_kernel_source()


def test_a_parallel_loop_that_converts_stays_a_loop():
    src = tilelang.compile(
        parallel_loaded_gemm(64, 64, 64, cast=True), target="cuda -arch=sm_80"
    ).get_kernel_source()
    assert src.count("cp_async") > 0  # A's tile (float16 to float16) still becomes one
    assert "(float)" in src  # B's (float16 to float32) is a converting loop


@pytest.mark.parametrize("target", ALL)
def test_min_blocks_per_sm_sets_the_launch_bounds_and_changes_no_result(target):
    @T.prim_func
    def main(A: T.Tensor((8, 64), "float32"), B: T.Tensor((8, 64), "float32")):
        with T.Kernel(8, threads=64) as bx:
            T.annotate_min_blocks_per_sm(3)
            for i in T.Parallel(64):
                B[bx, i] = A[bx, i] * 2.0 + 1.0

    kernel = tilelang.compile(main, target=target)
    a = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2.0 + 1.0, rtol=1e-6)
    if target.startswith("cuda"):
        assert "__launch_bounds__(64, 3) tl_kernel_main(" in kernel.get_kernel_source()


@pytest.mark.parametrize(
    "n,message",
    [
        (0, "T.annotate_min_blocks_per_sm takes a positive integer constant, got 0"),
        ("twice", r"T.annotate_min_blocks_per_sm is given twice in this kernel \(2, then 4\)"),
    ],
)
def test_min_blocks_per_sm_errors(n, message):
    with pytest.raises(Exception, match=message):

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                if n == "twice":
                    T.annotate_min_blocks_per_sm(2)
                    T.annotate_min_blocks_per_sm(4)
                else:
                    T.annotate_min_blocks_per_sm(n)
                A[0] = 1.0


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_tvm_parallel_loop_with_and_without_a_start(target):
    @T.prim_func
    def main(
        A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((16,), "float32")
    ):
        with T.Kernel(1, threads=32):
            for i in T.parallel(64):
                B[i] = A[i] * 2.0
            for i in T.parallel(8, 24):
                C[i - 8] = A[i] + 1.0

    kernel = tilelang.compile(main, target=target)
    a = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    c = np.zeros(16, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(c, a[8:24].astype(np.float64) + 1.0, rtol=1e-6)


@pytest.mark.parametrize("target", CUDA)
def test_nanosleep_of_a_kernel_runs_in_the_emulator(target):
    @T.prim_func
    def main(A: T.Tensor((1,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            if tx == 0:
                T.call_extern("void", "__nanosleep", 100)
                A[0] = -7
            T.sync_warp()
            if tx == 1:
                B[0] = A[0]

    kernel = tilelang.compile(main, target=target)
    a = np.zeros(1, np.int32)
    b = np.zeros(1, np.int32)
    kernel(a, b)
    assert a[0] == -7 and b[0] == -7
    assert "__nanosleep(100);" in kernel.get_kernel_source()


def test_parallel_prefer_async_and_annotations_are_hints():
    """TileLang's `T.Parallel(..., prefer_async=True, annotations={...})` (its
    vertical-slash sparse attention example): recorded on the loop; the stores are plain
    stores ordered by the compiler's barriers, so the user's commit / wait around them
    wait for nothing and the result is the same."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            for i, j in T.Parallel(
                64,
                64,
                prefer_async=True,
                annotations={"parallel_async_without_async_commit_wait": True},
            ):
                S[i, j] = A[i, j]
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i, j in T.Parallel(64, 64):
                B[i, j] = S[63 - i, j]

    assert "parallel_prefer_async" in main.script()
    a = np.random.default_rng(4).random((64, 64)).astype(np.float16)
    for target in ("cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"):
        b = np.zeros_like(a)
        tilelang.compile(main, target=target)(a, b)
        np.testing.assert_array_equal(b, a[::-1])
    with pytest.raises(tilelang.TileLangError, match="prefer_async must be True or False"):
        T.Parallel(4, prefer_async=1)
    with pytest.raises(tilelang.TileLangError, match="annotations must be a dict with str keys"):
        T.Parallel(4, annotations={1: True})
