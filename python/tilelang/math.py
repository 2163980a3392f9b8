"""Integer helpers TileLang exports at the top level (`tilelang.cdiv`,
`tilelang.next_power_of_2`), for the Python code that sizes kernels."""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2"]


def cdiv(a: int, b: int) -> int:
    """a / b rounded up, for integers."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
