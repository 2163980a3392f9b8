"""`tilelang.metal.target`: which Metal GPU is present."""

from tilelang.utils.target import has_mps_device

__all__ = ["check_metal4_availability", "is_metal_available"]


def is_metal_available():
    """True on macOS with torch's MPS device."""
    return has_mps_device()


def check_metal4_availability():
    """True when a Metal GPU answers and it has Metal 4's cooperative tensors (Apple M5
    and later), the `metal -keys=metal4` target."""
    if not has_mps_device():
        return False
    import subprocess

    try:
        brand = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                               text=True, timeout=5, check=False).stdout  # fmt: skip
    except OSError:
        return False
    digits = [int(w[1:]) for w in brand.split() if w[:1] == "M" and w[1:].isdigit()]
    return bool(digits) and digits[0] >= 5
