"""`tilelang.cuda.language`: TileLang's CUDA dialect of T, which `import tilelang.language
as T` is: every T name, listed alike (tilelang/_dialects.py). Its modules hold the
CUDA-only parts: `cluster` (cluster barriers), `pdl` (programmatic dependent launch),
`random` (cuRAND's generators), `warpgroup` (T.ws), `tcgen05` and `tir` (out of scope:
sm_100 and TVM's raw builtins), `intrinsics` (the warp-level emitters). Its names are
read when first asked for, as tilelang.language imports these modules."""

from tilelang._dialects import dialect_dir, dialect_getattr

__tilelang_dialect__ = "cuda"

# The warp-level emitters TileLang's CUDA dialect names (the wgmma / tcgen05 ones are out
# of scope: T.gemm emits those instructions).
_EMITTERS = (
    "TensorCoreIntrinEmitter", "WGMMATensorCoreIntrinEmitter", "TCGEN05TensorCoreIntrinEmitter",
    "SparseTensorCoreIntrinEmitter", "WGSparseTensorCoreIntrinEmitter", "get_swizzle_layout",
)  # fmt: skip
__getattr__ = dialect_getattr(
    "cuda", extra=dict.fromkeys(_EMITTERS, "tilelang.cuda.language.intrinsics")
)
__dir__ = dialect_dir("cuda")
