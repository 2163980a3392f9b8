"""Structured-sparse operands for `T.gemm_sp`: `compress` splits a 2:4 sparse matrix (1:2
for float32) into its kept values and metadata, `decompress` undoes it, and
`randn_semi_sparse` / `randint_semi_sparse` / `arange_semi_sparse` make sparse test
matrices. numpy arrays and torch tensors both work (torch tensors stay on their device).

The metadata format is the one tilelang.language.sparse documents: one 4-bit code per
group of K, row-major, little end first; T.gemm_sp reads it so. Metadata in CUTLASS's
reordered storage (the sm_80 sparse GEMM's ColumnMajorInterleaved<2>, which torch's
semi-structured tensors use: `to_sparse_semi_structured(...).meta`; TileLang's sm_90
layout for arch 9.0) holds the same codes in other places: a kernel that annotates E
with `make_cutlass_metadata_layout(E, mma_dtype, arch, block_k=...)` reads that storage.
`metadata_from_cutlass` / `metadata_to_cutlass` convert, and `compress` / `decompress`
take `metadata_layout="cutlass"`."""

import numpy as np

from tilelang.language.sparse import META_BITS, e_factor, sparsity_of

__all__ = [
    "arange_semi_sparse",
    "compress",
    "compress_sm90",
    "decompress",
    "e_factor",
    "metadata_from_cutlass",
    "metadata_to_cutlass",
    "randint_semi_sparse",
    "randn_semi_sparse",
]


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _name(dtype):
    """A numpy or torch dtype's name ("float16", "float8_e4m3fn" ...); sparsity_of
    reads the float8 spellings of both."""
    return str(dtype).replace("torch.", "")


def _raw(x):
    """The same elements as unsigned (numpy) / signed (torch) integers of their width,
    so that gathers work for every element type (float8 and bfloat16 included)."""
    bits = x.element_size() * 8 if _is_torch(x) else x.dtype.itemsize * 8
    if _is_torch(x):
        import torch

        return x.view({8: torch.int8, 16: torch.int16, 32: torch.int32}[bits])
    return x.view({8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])


def _default_meta(a_dtype, arch):
    if str(a_dtype).startswith(("int8", "uint8", "float8")):
        return "int32"
    if arch is not None and str(arch).split(".")[0].isdigit() and int(str(arch).split(".")[0]) >= 9:
        return "uint8"
    return "int16"


def _meta_name(meta_dtype):
    if meta_dtype is None or isinstance(meta_dtype, str):
        return meta_dtype
    if _is_torch_dtype(meta_dtype):
        return str(meta_dtype).replace("torch.", "")
    return np.dtype(meta_dtype).name


def _cutlass_order(nonzero, where, stack):
    """The two positions CUTLASS's compressor (torch's semi-structured tensors) keeps of
    each group of four, from the group's nonzero mask: the nonzeros, and for a group with
    fewer than two its fixed choice of zeros (none: 2 and 3; only 0 or 1: that one and 2,
    or 3 where 3 is nonzero), so that compress(..., metadata_layout="cutlass") gives
    torch's values and metadata bit for bit."""
    m0, m1, m3 = nonzero[..., 0], nonzero[..., 1], nonzero[..., 3]
    first = where(m0, 0, where(m1, 1, 2))
    second = where(m0 & m1, 1, where(m0 | m1, 2 + m3 * 1, 3))
    return stack([first, second], -1)


def compress(
    A, transposed=False, block_k=None, arch=None, meta_dtype=None, metadata_layout="row_major"
):
    """(A_sparse, E) of a 2:4 sparse A (M, K), or of A stored (K, M) with transposed=True
    (then A_sparse is (K/2, M); E is (M, K / e_factor) either way). At most 2 of every 4
    consecutive elements along K may be nonzero (1 of 2 for float32); a group with fewer
    keeps zeros. meta_dtype (a dtype name, numpy or torch dtype) picks E's element type:
    int32 for 8-bit A, int16 otherwise, uint8 when `arch` is 9.0 or later (the choices of
    TileLang's examples). metadata_layout="cutlass" returns E in CUTLASS's reordered
    storage (metadata_to_cutlass), the one a kernel annotated with
    make_cutlass_metadata_layout(E, mma_dtype=A's dtype, arch, block_k=block_k) reads:
    torch's semi-structured tensors' for arch None or 8.x (int16 or int32 metadata),
    TileLang's sm_90 layout for 9.0 and later (uint8 metadata; block_k required). The
    row-major layout does not depend on block_k."""
    _check_layout(metadata_layout, "compress")
    if getattr(A, "ndim", None) != 2:
        raise ValueError(f"compress: A must be a 2-D numpy array or torch tensor, got {A!r:.80}")
    a_name = _name(A.dtype)
    kept, group = sparsity_of(a_name, "compress: A")
    meta = _meta_name(meta_dtype) or _default_meta(a_name, arch)
    if meta not in META_BITS:
        raise ValueError(
            f"compress: meta_dtype must be one of {', '.join(META_BITS)}, got {meta_dtype!r}"
        )
    factor = e_factor(a_name, meta)
    dense = A.T if transposed else A
    M, K = dense.shape
    if K % factor:
        raise ValueError(
            f"compress: K = {K} (A's {'first' if transposed else 'last'} dimension) must be a "
            f"multiple of {factor}: each {meta} metadata element describes {factor} elements"
        )
    torch_in = _is_torch(A)
    if torch_in:
        torch = _torch()
        groups = dense.contiguous().view(M, K // group, group)
        nonzero = groups.float() != 0
        key = (~nonzero).to(torch.int64) * group + torch.arange(group, device=A.device)
        order = torch.sort(torch.argsort(key, dim=-1, stable=True)[..., :kept], dim=-1).values
        if metadata_layout == "cutlass" and group == 4:
            order = _cutlass_order(nonzero, torch.where, torch.stack)
        values = torch.take_along_dim(_raw(groups), order, dim=-1).view(A.dtype)
    else:
        groups = np.ascontiguousarray(dense).reshape(M, K // group, group)
        nonzero = groups.astype(np.float32) != 0
        key = (~nonzero).astype(np.int64) * group + np.arange(group)
        order = np.sort(np.argsort(key, axis=-1, kind="stable")[..., :kept], axis=-1)
        if metadata_layout == "cutlass" and group == 4:
            order = _cutlass_order(nonzero, np.where, np.stack)
        values = np.take_along_axis(_raw(groups), order, axis=-1).view(A.dtype)
    counts = nonzero.sum(-1)
    if bool((counts > kept).any()):
        # The first offending group; [0][0] reads numpy's tuple and torch's (n, 1) alike.
        flat = int((counts > kept).reshape(-1).nonzero()[0][0])
        r, g = divmod(flat, K // group)
        span = f"{g * group}-{g * group + group - 1}"
        where = f"column {r}, rows {span}" if transposed else f"row {r}, columns {span}"
        raise ValueError(
            f"compress: A is not {kept}:{group} sparse along K: {where} hold "
            f"{int(counts.reshape(-1)[flat])} nonzeros, at most {kept} allowed"
        )
    values = values.reshape(M, K // group * kept)
    first = order[..., 0]
    codes = first | (order[..., 1] << 2) if kept == 2 else (2 * first) | ((2 * first + 1) << 2)
    per_word = factor // group
    codes = codes.reshape(M, K // factor, per_word)
    words = codes[..., 0]
    for i in range(1, per_word):
        words = words | (codes[..., i] << (4 * i))
    bits = META_BITS[meta]
    if meta.startswith("int"):  # two's complement of the word's bit pattern
        words = words - (words >= (1 << (bits - 1))) * (1 << bits)
    E = words.to(getattr(_torch(), meta)) if torch_in else words.astype(meta)
    if transposed:
        values = values.T.contiguous() if torch_in else np.ascontiguousarray(values.T)
    if metadata_layout == "cutlass":
        E = metadata_to_cutlass(E, arch or "8.0", a_name, block_k)
    return values, E


def compress_sm90(A, block_k=None, transposed=False):
    """TileLang's older name for the sm_90 compressor: compress with uint8 metadata
    (the format is the one above on every arch)."""
    return compress(A, transposed=transposed, block_k=block_k, arch="9.0")


def decompress(A_sparse, E, transposed=False, metadata_layout="row_major", arch=None, block_k=None):
    """The dense A of compress's (A_sparse, E): (M, K), or (K, M) with transposed=True;
    metadata_layout="cutlass" reads E in CUTLASS's reordered storage for `arch` (None:
    sm_8x, torch's; 9.0 and later: TileLang's sm_90 layout, block_k required)."""
    _check_layout(metadata_layout, "decompress")
    if metadata_layout == "cutlass":
        E = metadata_from_cutlass(E, arch or "8.0", _name(A_sparse.dtype), block_k)
    a_name = _name(A_sparse.dtype)
    kept, group = sparsity_of(a_name, "decompress: A_sparse")
    factor = e_factor(a_name, _name(E.dtype))
    torch_in = _is_torch(A_sparse)
    values = A_sparse.T if transposed else A_sparse
    M, k_kept = values.shape
    K = k_kept // kept * group
    if tuple(E.shape) != (M, K // factor):
        raise ValueError(f"decompress: E must have shape {(M, K // factor)}, got {tuple(E.shape)}")
    per_word = factor // group
    words = E.to(_torch().int64) if torch_in else E.astype(np.int64)
    codes = [(words >> (4 * i)) & 15 for i in range(per_word)]
    if torch_in:
        codes = _torch().stack(codes, -1).reshape(M, K // group)
        out = _torch().zeros((M, K // group, group), dtype=_torch().float32, device=A_sparse.device)
        vals = values.float().reshape(M, K // group, kept)
    else:
        codes = np.stack(codes, -1).reshape(M, K // group)
        out = np.zeros((M, K // group, group), np.float32)
        vals = values.astype(np.float32).reshape(M, K // group, kept)
    slots = [codes & 3, (codes >> 2) & 3] if kept == 2 else [(codes & 3) >> 1]
    for s, pos in enumerate(slots):
        for p in range(group):
            out[..., p] += (pos == p) * vals[..., s]
    out = out.reshape(M, K)
    out = out.to(A_sparse.dtype) if torch_in else out.astype(A_sparse.dtype)
    if transposed:
        out = out.T.contiguous() if torch_in else np.ascontiguousarray(out.T)
    return out


def _torch():
    import torch

    return torch


def _check_layout(layout, who):
    if layout not in ("row_major", "cutlass"):
        raise ValueError(f"{who}: metadata_layout must be 'row_major' or 'cutlass', got {layout!r}")


def _cutlass_offsets(E, who, arch="8.0", mma_dtype=None, block_k=None):
    """For each element (r, c) of an (M, C) metadata matrix, row-major, its flat index in
    CUTLASS's reordered storage of the same shape, as make_cutlass_metadata_layout maps
    it (tilelang.layout.gemm_sp, one definition for both): for arch 8.x the sm_80 sparse
    GEMM's (ColumnMajorInterleaved<2> over rows woven in groups of 32 for 16-bit
    metadata, 16 for 32-bit, 2 x 2 blocks transposed; torch's semi-structured
    tensors'), for 9.0 and later TileLang's sm_90 layout (uint8, by mma_dtype and
    block_k)."""
    from tilelang.layout.gemm_sp import arch_version, cutlass_offset_fn

    if getattr(E, "ndim", None) != 2:
        raise ValueError(f"{who}: E must be a 2-D numpy array or torch tensor, got {E!r:.80}")
    bits = E.element_size() * 8 if _is_torch(E) else E.dtype.itemsize * 8
    if mma_dtype is None:
        if arch_version(arch, who) >= (9, 0):
            raise ValueError(
                f"{who}: mma_dtype (A's element type) is required for arch {arch}: the sm_90 "
                f"metadata layout depends on it"
            )
        mma_dtype = {16: "float16", 32: "int8"}.get(bits)
        if mma_dtype is None:
            raise ValueError(
                f"{who}: CUTLASS's sm_8x metadata layout holds 16-bit (float16 / bfloat16 / "
                f"float32 A) or 32-bit (8-bit A) elements, got {_name(E.dtype)}"
            )
    offset, _ = cutlass_offset_fn(
        tuple(E.shape), _name(E.dtype), _name(mma_dtype), arch, block_k, who
    )
    m, cols = E.shape
    flat = offset(np.arange(m)[:, None], np.arange(cols)[None, :])
    return np.broadcast_to(flat, (m, cols)).reshape(-1).astype(np.int64)


def metadata_to_cutlass(E, arch="8.0", mma_dtype=None, block_k=None):
    """E (M, K / e_factor; row-major, compress's layout) in CUTLASS's reordered layout,
    the storage a kernel annotated with make_cutlass_metadata_layout(E, mma_dtype, arch,
    block_k=...) reads: for arch 8.x the places torch's semi-structured tensors (and
    CUTLASS's sm_80 sparse GEMM) keep the codes; for 9.0 and later TileLang's sm_90 layout
    (uint8 metadata; mma_dtype and block_k required). numpy or torch in, the same out
    (torch on its device)."""
    offsets = _cutlass_offsets(E, "metadata_to_cutlass", arch, mma_dtype, block_k)
    if _is_torch(E):
        torch = _torch()
        out = torch.empty_like(E).reshape(-1)
        out[torch.from_numpy(offsets).to(E.device)] = E.reshape(-1)
        return out.reshape(E.shape)
    out = np.empty(E.size, E.dtype)
    out[offsets] = E.reshape(-1)
    return out.reshape(E.shape)


def metadata_from_cutlass(E, arch="8.0", mma_dtype=None, block_k=None):
    """metadata_to_cutlass undone: CUTLASS-ordered metadata (torch's
    `to_sparse_semi_structured(A).meta`, for example) in the row-major layout compress
    writes by default."""
    offsets = _cutlass_offsets(E, "metadata_from_cutlass", arch, mma_dtype, block_k)
    if _is_torch(E):
        torch = _torch()
        return E.reshape(-1)[torch.from_numpy(offsets).to(E.device)].reshape(E.shape)
    return np.ascontiguousarray(E).reshape(-1)[offsets].reshape(E.shape)


def _is_torch_dtype(d):
    return type(d).__module__.startswith("torch")


def _semi_sparse(what, dense, dtype, transposed):
    """Zeros all but kept of every group along dim 1 (at random positions), then the
    dtype and layout asked for."""
    torch = _torch()
    M, K = dense.shape
    kept, group = sparsity_of(_name(dtype), f"{what}: dtype")
    if K % group:
        raise ValueError(f"{what}: K must be a multiple of the group size {group}, got {K}")
    scores = torch.rand((M, K // group, group), device=dense.device)
    drop = scores.topk(group - kept, dim=-1).indices
    dense = dense.reshape(M, K // group, group).scatter(-1, drop, 0).reshape(M, K)
    if transposed:
        dense = dense.t().contiguous()
    return dense.to(dtype)


def randn_semi_sparse(M, K, dtype=None, device="cuda", transposed=False):
    """A random (M, K) torch tensor, 2:4 sparse along K (1:2 for float32); (K, M) with
    transposed=True."""
    torch = _torch()
    dtype = dtype or torch.float16
    return _semi_sparse("randn_semi_sparse", torch.randn((M, K), device=device), dtype, transposed)


def randint_semi_sparse(M, K, low, high, dtype=None, device="cuda", transposed=False):
    """randn_semi_sparse with integers from [low, high)."""
    torch = _torch()
    dtype = dtype or torch.int32
    dense = torch.randint(low, high, (M, K), device=device, dtype=torch.int64)
    return _semi_sparse("randint_semi_sparse", dense, dtype, transposed)


def arange_semi_sparse(M, K, dtype=None, device="cuda", transposed=False):
    """randn_semi_sparse with the values 0 .. M * K - 1 in row-major order."""
    torch = _torch()
    dtype = dtype or torch.float16
    dense = torch.arange(M * K, device=device, dtype=torch.float32).reshape(M, K)
    return _semi_sparse("arange_semi_sparse", dense, dtype, transposed)
