"""`SwizzleMode`: the shared-memory swizzle of a TMA box or a WGMMA / tcgen05 operand,
as TileLang names it, with the hardware's encoding of each mode."""

from __future__ import annotations

import enum
import operator

__all__ = ["SwizzleMode"]

# Per mode: the swizzle width in bytes (1 for none), WGMMA's descriptor `layout_type`,
# tcgen05's descriptor swizzle field and the shared-memory base alignment it needs.
_FACTS = {
    "NONE": (1, 0, 0, 128),
    "SWIZZLE_32B": (32, 3, 6, 256),
    "SWIZZLE_64B": (64, 2, 4, 512),
    "SWIZZLE_128B": (128, 1, 2, 1024),
}


class SwizzleMode(enum.Enum):
    """None, 32-, 64- or 128-byte swizzle; ordinals 0..3 in that order."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def wgmma_layout_type(self) -> int:
        """WGMMA descriptor `layout_type` field: none 0, 128B 1, 64B 2, 32B 3."""
        return _FACTS[self.name][1]

    def tcgen05_layout_type(self) -> int:
        """tcgen05 descriptor swizzle field: none 0, 128B 2, 64B 4, 32B 6."""
        return _FACTS[self.name][2]

    def swizzle_byte_size(self) -> int:
        """Swizzle width in bytes: none 1, else 32, 64 or 128."""
        return _FACTS[self.name][0]

    def swizzle_atom_size(self) -> int:
        """Swizzle width in 16-byte vectors: none 1, else 2, 4 or 8."""
        return 1 if self.is_none() else self.swizzle_byte_size() // 16

    def smem_alignment(self) -> int:
        """Shared-memory base alignment in bytes: none 128, else 256, 512 or 1024."""
        return _FACTS[self.name][3]

    @staticmethod
    def from_ordinal(ordinal: int) -> SwizzleMode:
        try:
            index = None if isinstance(ordinal, bool) else operator.index(ordinal)
        except TypeError:
            index = None
        if index is None or not 0 <= index <= 3:
            raise ValueError(
                f"SwizzleMode.from_ordinal: ordinal must be an int in 0..3 (NONE, SWIZZLE_32B, "
                f"SWIZZLE_64B, SWIZZLE_128B), got {ordinal!r}"
            )
        return SwizzleMode(index)
