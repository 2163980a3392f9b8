"""TileLang's `tilelang.rocm.target`. tilelang has no ROCm (HIP) backend:
`check_hip_availability()` answers False (kernels are never compiled for HIP here, so
code choosing a warp size or a code path by it takes the CUDA/CPU one); TileLang's other
ROCm target helpers raise an error saying the backend is out of scope."""

from tilelang._compat import forwarding_getattr

__all__ = ["check_hip_availability"]


def check_hip_availability() -> bool:
    """Whether tilelang can compile and run kernels through HIP (ROCm): never, as it has
    no ROCm backend, whatever is installed on the machine."""
    return False


__getattr__ = forwarding_getattr(
    __name__, internal_all=True,
    instead="tilelang has no ROCm (HIP) backend; compile for target='cuda', 'metal' or 'cpu'",
)  # fmt: skip
