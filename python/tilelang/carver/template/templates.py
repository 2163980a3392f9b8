"""The operator templates of TileLang's carver: each names an operator by its shapes
and dtypes, and turns a device into ranked tile configs (tilelang.carver.roller.policy).
equivalent_function() gives the operator as a kernel of this package (a T.prim_func)."""

# No `from __future__ import annotations` here: equivalent_function traces a T.prim_func
# whose parameter annotations (T.Tensor(a_shape, ...)) must be evaluated where it is defined.
# ruff: noqa: FA100

from dataclasses import dataclass
from typing import Any, Optional

from tilelang.carver.roller import policy

__all__ = ["BaseTemplate", "FlashAttentionTemplate", "GEMVTemplate", "GeneralReductionTemplate",
           "MatmulTemplate"]  # fmt: skip


@dataclass
class BaseTemplate:
    """with_arch(arch) sets the device; recommend_hints(topk) ranks configs for it
    (the current machine's device when none was set)."""

    def __post_init__(self):
        self._arch = None

    def with_arch(self, arch: Any) -> "BaseTemplate":
        self._arch = arch
        return self

    def has_arch(self) -> bool:
        return self._arch is not None

    @property
    def arch(self) -> Any:
        return self._arch

    def recommend_hints(self, topk: int = 10) -> list:
        """The topk tile configs for the device, best first (a list of roller Hints)."""
        if topk < 1:
            raise ValueError(f"recommend_hints: topk must be at least 1, got {topk}")
        if self._arch is None:
            from tilelang.carver.arch import auto_infer_current_arch

            self._arch = auto_infer_current_arch()
        return self.get_hardware_aware_configs(self._arch, topk)

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list:
        raise NotImplementedError(f"{type(self).__name__} ranks no configs")

    def equivalent_function(self) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} has no equivalent kernel here; its hints size the tiles "
            "of a kernel you write"
        )

    def _check_positive(self, **dims):
        for name, value in dims.items():
            if not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"{type(self).__name__}: {name} must be a positive int, got {value!r}"
                )


@dataclass
class MatmulTemplate(BaseTemplate):
    """C[M, N] = A @ B (A is [M, K], or [K, M] with trans_A; B is [N, K] with trans_B,
    TileLang's default, else [K, N])."""

    M: Optional[int] = None
    N: Optional[int] = None
    K: Optional[int] = None
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list:
        self._check_positive(M=self.M, N=self.N, K=self.K)
        return policy.matmul_hints(arch or self._arch, self.M, self.N, self.K, self.in_dtype,
                                   self.out_dtype, self.accum_dtype, topk)  # fmt: skip

    def equivalent_function(self) -> Any:
        """The GEMM as a T.prim_func (64 x 64 x 32 tiles, 128 threads)."""
        import tilelang.language as T

        self._check_positive(M=self.M, N=self.N, K=self.K)
        M, N, K, bm, bn, bk = self.M, self.N, self.K, 64, 64, 32
        a_shape = (K, M) if self.trans_A else (M, K)
        b_shape = (N, K) if self.trans_B else (K, N)
        a_tile = (bk, bm) if self.trans_A else (bm, bk)
        b_tile = (bn, bk) if self.trans_B else (bk, bn)
        in_dtype, out_dtype, accum = str(self.in_dtype), str(self.out_dtype), str(self.accum_dtype)
        trans_A, trans_B = self.trans_A, self.trans_B

        @T.prim_func
        def main(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype),
                 C: T.Tensor((M, N), out_dtype)):  # fmt: skip
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
                A_s = T.alloc_shared(a_tile, in_dtype)
                B_s = T.alloc_shared(b_tile, in_dtype)
                C_l = T.alloc_fragment((bm, bn), accum)
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                    if trans_A:
                        T.copy(A[k * bk, by * bm], A_s)
                    else:
                        T.copy(A[by * bm, k * bk], A_s)
                    if trans_B:
                        T.copy(B[bx * bn, k * bk], B_s)
                    else:
                        T.copy(B[k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_l, transpose_A=trans_A, transpose_B=trans_B)
                T.copy(C_l, C[by * bm, bx * bn])

        return main


@dataclass
class GEMVTemplate(BaseTemplate):
    """y[N] = B[N, K] @ x[K] (trans_B, TileLang's default)."""

    N: Optional[int] = None
    K: Optional[int] = None
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list:
        self._check_positive(N=self.N, K=self.K)
        return policy.gemv_hints(arch or self._arch, self.N, self.K, self.in_dtype, self.out_dtype,
                                 self.accum_dtype, topk)  # fmt: skip


@dataclass
class GeneralReductionTemplate(BaseTemplate):
    """A reduction over the R axes of `shape` (structure "SSR", "SR", "RS", ...)."""

    structure: Optional[str] = None
    shape: Optional[list] = None
    dtype: str = "float16"

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list:
        if not isinstance(self.structure, str) or self.shape is None:
            raise ValueError(
                "GeneralReductionTemplate needs structure (a string such as 'SSR') and shape; "
                f"got structure={self.structure!r}, shape={self.shape!r}"
            )
        for i, d in enumerate(self.shape):
            self._check_positive(**{f"shape[{i}]": d})
        return policy.reduce_hints(arch or self._arch, self.structure, list(self.shape),
                                   self.dtype, topk)  # fmt: skip


@dataclass
class FlashAttentionTemplate(BaseTemplate):
    """Attention of [batch_size, num_heads, seq_length, head_dim] queries over
    seq_kv_length keys and values."""

    batch_size: int = 1
    num_heads: int = 1
    head_dim: int = 1
    seq_length: int = 1
    seq_kv_length: int = 1
    is_causal: bool = False
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list:
        self._check_positive(batch_size=self.batch_size, num_heads=self.num_heads,
                             head_dim=self.head_dim, seq_length=self.seq_length,
                             seq_kv_length=self.seq_kv_length)  # fmt: skip
        return policy.attention_hints(arch or self._arch, self.batch_size, self.num_heads,
                                      self.head_dim, self.seq_length, self.seq_kv_length,
                                      self.is_causal, self.in_dtype, "float32", topk)  # fmt: skip
