"""wgmma gemms inside a pipeline step are issued without waiting for them (sm_90a):
each call waits only for the groups before its own (wgmma_wait<1>), and the step
waits for a gemm (wgmma_wait<0>) right before anything touches its accumulator or
its register A, or writes a shared operand that has no version per step, and by the
step's end. With TileLang's order/stage schedule of FlashAttention this lets P V of
one tile run during the softmax of the next. The emulator runs a wgmma group only
when a wait retires it, so a missing wait reads stale registers or tiles and the
numpy comparison fails."""

import importlib.util
import pathlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T

EMU = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(2026)

_spec = importlib.util.spec_from_file_location(
    "fa_overlap_example", pathlib.Path(__file__).parents[2] / "examples" / "flash_attention.py"
)
fa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fa)


def lines_between(src, start, stop):
    lines = src.splitlines()
    i = next(n for n, x in enumerate(lines) if start in x)
    j = next(n for n in range(i + 1, len(lines)) if stop in lines[n])
    return lines[i:j]


def fa_kernel(causal, target, S=200, D=64):
    func = fa.flash_attention.get_tir(1, 2, S, D, causal, 128, 64, 256, 2, "float16", True)
    return tilelang.compile(func, out_idx=[3], target=target)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("target", [EMU, "cuda -arch=sm_80 -emulate", "cpu"])
def test_flash_attention_overlap_schedule_matches_numpy(causal, target):
    S, D = 200, 64
    q, k, v = (rng.standard_normal((1, S, 2, D)).astype(np.float16) for _ in range(3))
    out = fa_kernel(causal, target, S, D)(q, k, v)
    np.testing.assert_allclose(
        out.astype(np.float64), fa.reference(q, k, v, causal), rtol=2e-3, atol=2e-3
    )


def test_p_v_stays_in_flight_until_the_next_cast():
    src = fa_kernel(False, EMU, S=512).get_kernel_source()
    # The steady loop: P V issued (its wait<1> retires Q K^T, whose K tile goes back
    # to the producer), the softmax, then one wait<0> before P is rewritten.
    text = "\n".join(
        lines_between(
            src,
            "tl::wgmma_gemm_rs<128, 64, 64, 2, 1, false, 1, false>",
            "tl::cast_pair<tl::__float22half2_rn>((&acc_s_cast[",
        )
    )
    assert text.index("K_shared_empty") < text.index("tl::exp2"), text
    assert text.count("tl::wgmma_wait<0>();") == 1, text
    assert text.index("tl::wgmma_wait<0>();") > text.rindex("tl::exp2"), text


def shared_operand_rewritten(n_tiles=4, bM=64, bN=64, bK=64):
    """acc += P_t @ V_t where P_t is computed into a shared tile by the threads. The
    hand schedule issues the gemm of tile t - 1 before P_t overwrites P_s, so the step
    has to wait for that gemm before the write."""

    @T.prim_func
    def main(
        P: T.Tensor((bM, n_tiles * bK), "float16"),
        V: T.Tensor((n_tiles * bK, bN), "float16"),
        C: T.Tensor((bM, bN), "float32"),
    ):
        with T.Kernel(1, threads=128):
            P_s = T.alloc_shared((bM, bK), "float16")
            V_s = T.alloc_shared((bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            T.clear(acc)
            for t in T.Pipelined(n_tiles, num_stages=2, order=[-1, 1, 0], stage=[-1, 0, 1]):
                T.copy(V[t * bK, 0], V_s)
                for i, j in T.Parallel(bM, bK):
                    P_s[i, j] = P[i, t * bK + j] * T.float16(2)
                T.gemm(P_s, V_s, acc)
            T.copy(acc, C)

    return main


def test_a_shared_operand_written_later_in_the_step_waits_for_the_gemm():
    kernel = tilelang.compile(shared_operand_rewritten(), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "wgmma_gemm_ss<64, 64, 64, 1, 1, false, false, 1>" in src, src
    p = rng.standard_normal((64, 256)).astype(np.float16)
    v = rng.standard_normal((256, 64)).astype(np.float16)
    ref = (p.astype(np.float64) * 2) @ v.astype(np.float64)
    np.testing.assert_allclose(kernel(p, v), ref, rtol=1e-3, atol=1e-2)


_mla_spec = importlib.util.spec_from_file_location(
    "mla_overlap_example", pathlib.Path(__file__).parents[2] / "examples" / "mla_decode.py"
)
mla = importlib.util.module_from_spec(_mla_spec)
_mla_spec.loader.exec_module(mla)


def mla_kernel(target, S=200, dv=128, dpe=32):
    func = mla.mla_decode.get_tir(1, 64, S, dv, dpe, 64, 64, 2, 256, "float16", True)
    return tilelang.compile(func, out_idx=[-1], target=target)


@pytest.mark.parametrize("target", [EMU, "cpu"])
def test_mla_overlap_schedule_matches_numpy(target):
    q, kv, k_pe = mla.inputs(1, 64, 200, 128, 32)
    out = mla_kernel(target)(q, kv, k_pe)
    np.testing.assert_allclose(
        out.astype(np.float64), mla.reference(q, kv, k_pe, 128), rtol=2e-3, atol=2e-3
    )


def test_p_tile_rewritten_only_after_every_warpgroup_is_done_with_it():
    # P V of the previous tile reads P_s (S_shared) until its wait: the barrier that
    # lets the warpgroups write the next P must come after that wait, not before.
    src = mla_kernel(EMU).get_kernel_source()
    lines = src.splitlines()
    loop = next(i for i, x in enumerate(lines) if "for (int32_t t = 0;" in x)
    store = next(
        i for i in range(loop, len(lines)) if "(&S_shared[" in lines[i] and "store" in lines[i]
    )
    wait = max(i for i in range(loop, store) if "tl::wgmma_wait<0>();" in lines[i])
    assert any("__sync_thread_partial" in x or "__syncthreads" in x for x in lines[wait:store]), src
