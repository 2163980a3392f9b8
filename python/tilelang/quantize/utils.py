"""Host-side weight preparation for the decoders of `get_lop3_intrin_group`.

`interleave_weight(qweight, nbits=4, target_dtype="float16")` reorders the packed
fields of each 32-bit word so that the fast decoders, which pull two (float16) or four
(int8) fields out of a word with one mask, return them in their original order: it is
the inverse of the decoders' read order. Field e (bits nbits*e .. of the little-endian
word, e < 32 / nbits) moves to

- float16: 16-bit lane e % 2, slot e // 2 of that lane; then, for 2 bits, the word's
  bytes 1 and 2 swap (so each byte pair holds the next 8 fields); for 1 bit, the
  nibbles are regrouped so that byte k holds fields 8k .. 8k + 7 (even ones in the low
  nibble);
- int8: byte e % 4, slot e // 4 of that byte; then, for 1 bit, the middle nibbles are
  regrouped so that each 16-bit half holds 16 consecutive fields.

It takes a numpy array or a torch tensor (on any device) whose last dimension covers
whole 32-bit words, and returns the same kind of object as int8, its last dimension
counted in bytes (TileLang's behaviour)."""

import numpy as np

__all__ = ["interleave_weight"]


def _nibble_moves(word, moves, keep):
    """`word` with the nibbles not in `keep` moved: moves is [(from_nibble, to_nibble)]."""
    out = word & np.uint32(keep)
    for src, dst in moves:
        out |= ((word >> np.uint32(4 * src)) & np.uint32(0xF)) << np.uint32(4 * dst)
    return out


def _interleave_words(words, nbits, target):
    """The interleaving on a uint32 numpy array of words."""
    stride = 8 if target == "int8" else 16  # bits per lane the decoder masks at once
    lanes = 32 // stride
    mask = np.uint32((1 << nbits) - 1)
    out = np.zeros_like(words)
    for e in range(32 // nbits):
        dest = (e % lanes) * stride + (e // lanes) * nbits
        out |= ((words >> np.uint32(nbits * e)) & mask) << np.uint32(dest)
    if target == "float16" and nbits == 2:  # swap bytes 1 and 2
        out = (
            (out & np.uint32(0xFF0000FF))
            | ((out >> np.uint32(8)) & np.uint32(0xFF)) << np.uint32(16)
            | ((out >> np.uint32(16)) & np.uint32(0xFF)) << np.uint32(8)
        )
    elif target == "float16" and nbits == 1:
        out = _nibble_moves(out, [(1, 2), (2, 4), (3, 6), (4, 1), (5, 3), (6, 5)], 0xF000000F)
    elif target == "int8" and nbits == 1:
        out = _nibble_moves(out, [(1, 4), (3, 6), (4, 1), (6, 3)], 0xF0F00F0F)
    return out


def _as_name(value, arg, allowed):
    name = value if isinstance(value, str) else str(value)
    if name not in allowed:
        raise ValueError(
            f"interleave_weight: {arg} must be one of {', '.join(repr(a) for a in allowed)}, "
            f"got {value!r}"
        )
    return name


def interleave_weight(qweight, nbits=4, target_dtype="float16"):
    """`qweight` (packed fields, numpy or torch) reordered for the decoders of
    `get_lop3_intrin_group(out_dtype=target_dtype, source_bit=nbits)`; returns int8
    of the same kind and device. See the module docstring for the layout."""
    target = _as_name(target_dtype, "target_dtype", ("float16", "int8"))
    if isinstance(nbits, bool) or nbits not in (1, 2, 4):
        raise ValueError(f"interleave_weight: nbits must be 1, 2 or 4, got {nbits!r}")
    is_torch = type(qweight).__module__.split(".")[0] == "torch"
    if is_torch:
        device = qweight.device
        arr = qweight.detach().cpu().contiguous().numpy()
    elif isinstance(qweight, np.ndarray):
        arr = np.ascontiguousarray(qweight)
    else:
        raise ValueError(
            "interleave_weight: qweight must be a numpy array or a torch tensor, "
            f"got {type(qweight).__name__}"
        )
    if arr.dtype.kind not in "iu" or arr.ndim == 0:
        raise ValueError(
            f"interleave_weight: qweight must hold packed integers, got dtype {arr.dtype} "
            f"of shape {arr.shape}"
        )
    row_bytes = arr.shape[-1] * arr.dtype.itemsize
    if row_bytes % 4:
        raise ValueError(
            "interleave_weight: the last dimension of qweight must cover whole 32-bit words, "
            f"got {arr.shape[-1]} elements of {arr.dtype} ({row_bytes} bytes)"
        )
    out = _interleave_words(arr.view(np.uint32), nbits, target).view(np.int8)
    if is_torch:
        import torch

        return torch.from_numpy(np.ascontiguousarray(out)).to(device)
    return out
