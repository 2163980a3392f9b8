"""TensorCoreIntrinEmitter: TileLang's warp-level mma.sync building blocks.

A kernel that drives the tensor cores by hand allocates per-thread register arrays
(`T.alloc_local`) for the A, B and C fragments of its warp's tile and calls the
emitter's methods while it is traced:

- `ldmatrix_a(A_local, A_shared, ki)` / `ldmatrix_b(B_local, B_shared, ki)` fill the
  lane's operand registers for k step `ki` of the block's shared tiles;
- `mma(A_local, B_local, C_local)` adds their products into the accumulators, one
  mma.sync m16n8k16 (16-bit operands) or m16n8k32 (8-bit) per 16 x 8 piece;
- `stmatrix(C_local, C_buf)` writes the accumulators to a shared or global tile.

The warps of the block split its tile as TileLang's emitter does: thread `tid` is
lane `tid % 32` of warp (`warp_m`, `warp_n`), with `warp_m = (tid // 32) %
block_row_warps` and `warp_n = (tid // (32 * block_row_warps)) % block_col_warps`
(or the other way round with is_m_first=True); each warp owns `warp_row_tiles x
warp_col_tiles` of the block tile. The registers hold the PTX fragment layouts
(tilelang/intrinsics/mma_layout.py), so code that reads them directly sees what it
would see on TileLang.

All of it unrolls while tracing: register arrays are indexed with constants and stay
registers. Operands are gathered with per-lane loads from shared memory (any layout
annotated on the tile applies), or with ldmatrix (`tl::ldmatrix_frag`) where the tile's
layout keeps 16-byte row runs together; the product is `tl::mma_sync_frag`
(device/cuda/gemm_mma.cuh) through T.call_extern, which the CUDA emulator runs
through its mma.sync twin. The code needs a CUDA target (sm_80 or later) or its
emulator; compiling it for the cpu or Metal targets stops with an error that says so.
"""

from typing import ClassVar

import tilelang.language as T
from tilelang.language import builder_ctx
from tilelang.language.buffer import Buffer, Region, const_int
from tilelang.language.dtypes import dtype as _dtype
from tilelang.layout import Layout as _Layout

from .mma_layout import (
    mma_load_a_32x8_to_shared_16x16_layout,
    mma_load_a_32x16_to_shared_16x32_layout,
    mma_load_b_32x8_to_shared_16x16_layout,
    mma_load_b_32x16_to_shared_16x32_layout,
    shared_16x16_to_mma_32x8_layout_sr_a,
    shared_16x16_to_mma_32x8_layout_sr_b,
    shared_16x32_to_mma_32x16_layout_sr_a,
    shared_16x32_to_mma_32x16_layout_sr_b,
)
from .utils import mma_store_index_map


def _keeps_runs(layout, dims, run):
    """Whether `layout` maps every aligned run of `run` elements along a row of the
    last two dimensions (leading indices 0) to `run` consecutive, run-aligned
    physical elements (row-major over the layout's output shape)."""
    try:
        out = layout.get_output_shape()
    except Exception:  # noqa: BLE001 - a layout we cannot evaluate takes the general path
        return False

    def flat(point):
        index = 0
        for p, extent in zip(point, out):
            index = index * extent + p
        return index

    lead = [0] * (len(dims) - 2)
    for r in range(dims[-2]):
        for c0 in range(0, dims[-1], run):
            start = flat(layout.map_forward_index([*lead, r, c0]))
            if start % run:
                return False
            for c in range(1, run):
                if flat(layout.map_forward_index([*lead, r, c0 + c])) != start + c:
                    return False
    return True


# The operand / accumulator dtypes of mma.sync that the emitter drives, and the
# accumulators each operand type takes.
_ACCUMULATORS = {
    "float16": ("float32", "float16"),
    "bfloat16": ("float32",),
    "int8": ("int32",),
    "uint8": ("int32",),
    "float8_e4m3fn": ("float32",),
    "float8_e5m2": ("float32",),
}

# Only CUDA targets define this (gemm_mma.cuh); elsewhere the kernel stops here.
_TARGET_GUARD = """#ifndef TL_MMA_SYNC_FRAG
#error "tilelang.intrinsics.TensorCoreIntrinEmitter emits warp-level mma.sync code: compile this kernel for a CUDA target (\\"cuda\\", sm_80 or later, or \\"cuda -arch=sm_80 -emulate\\"); the cpu and metal targets have no warps or tensor-core instructions"
#endif
"""


def _arg_error(method, message):
    return builder_ctx.frontend_error(f"TensorCoreIntrinEmitter.{method}: {message}")


def _dtype_name(value, what):
    try:
        return str(_dtype(value))
    except Exception as err:
        raise ValueError(f"TensorCoreIntrinEmitter: {what} must be a dtype, got {value!r}") from err


def _positive_int(value, what, multiple_of=1):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"TensorCoreIntrinEmitter: {what} must be a positive int, got {value!r}")
    if value % multiple_of != 0:
        raise ValueError(
            f"TensorCoreIntrinEmitter: {what} must be a multiple of {multiple_of}, got {value}"
        )
    return value


class TensorCoreIntrinEmitter:
    """Emits the per-lane code of warp-level mma.sync GEMM steps (see the module text).

    Arguments, as TileLang's: `a_dtype`, `b_dtype` (float16, bfloat16, int8, uint8,
    float8_e4m3, float8_e5m2), `accum_dtype` (float32; float16 for float16 operands;
    int32 for 8-bit integers), `a_transposed` (A tile stored (k, m)), `b_transposed`
    (B tile stored (n, k)), `block_row_warps` / `block_col_warps` (warps along M / N),
    `warp_row_tiles` / `warp_col_tiles` (each warp's tile; multiples of 16 and of 8),
    `chunk` (the block's k extent per step), `reduce_k` (warp groups that split k;
    they count in `threads`), `is_m_first` and `thread_var` (the thread index to use;
    threadIdx.x by default)."""

    M_DIM = 16
    n_dim = 16
    WARP_SIZE = 32
    dtype_abbrv: ClassVar[dict] = {
        "float16": "fp16",
        "bfloat16": "bf16",
        "float32": "fp32",
        "int8": "int8",
        "uint8": "uint8",
        "int32": "int32",
        "float8_e4m3fn": "e4m3",
        "float8_e5m2": "e5m2",
    }
    is_m_first = False

    def __init__(
        self,
        a_dtype="float16",
        b_dtype="float16",
        accum_dtype="float16",
        a_transposed=False,
        b_transposed=False,
        block_row_warps=2,
        block_col_warps=2,
        warp_row_tiles=8,
        warp_col_tiles=8,
        chunk=16,
        reduce_k=1,
        num_elems_per_byte=1,
        is_m_first=False,
        thread_var=None,
    ):
        self.a_dtype = _dtype_name(a_dtype, "a_dtype")
        self.b_dtype = _dtype_name(b_dtype, "b_dtype")
        self.accum_dtype = _dtype_name(accum_dtype, "accum_dtype")
        for name, value in (("a_dtype", self.a_dtype), ("b_dtype", self.b_dtype)):
            if value not in _ACCUMULATORS:
                raise ValueError(
                    f"TensorCoreIntrinEmitter: {name} must be one of "
                    f"{', '.join(_ACCUMULATORS)}; got {value}"
                )
        a_bits, b_bits = _dtype(self.a_dtype).bits, _dtype(self.b_dtype).bits
        if a_bits != b_bits or (a_bits == 16 and self.a_dtype != self.b_dtype):
            raise ValueError(
                "TensorCoreIntrinEmitter: a_dtype and b_dtype must be one mma.sync operand "
                f"pair (the same 16-bit type, or two 8-bit types); got a_dtype={self.a_dtype}, "
                f"b_dtype={self.b_dtype}"
            )
        if {self.a_dtype, self.b_dtype} == {"int8", "uint8"}:
            raise ValueError(
                "TensorCoreIntrinEmitter: a_dtype and b_dtype must both be int8 or both uint8; "
                f"got a_dtype={self.a_dtype}, b_dtype={self.b_dtype}"
            )
        if (self.a_dtype in ("int8", "uint8")) != (self.b_dtype in ("int8", "uint8")):
            raise ValueError(
                "TensorCoreIntrinEmitter: a_dtype and b_dtype must both be integers or both "
                f"fp8; got a_dtype={self.a_dtype}, b_dtype={self.b_dtype}"
            )
        allowed = _ACCUMULATORS[self.a_dtype]
        if self.accum_dtype not in allowed:
            raise ValueError(
                f"TensorCoreIntrinEmitter: accum_dtype for {self.a_dtype} operands must be "
                f"{' or '.join(allowed)}; got {self.accum_dtype}"
            )
        self.a_transposed = bool(a_transposed)
        self.b_transposed = bool(b_transposed)
        if a_bits == 8 and self.a_transposed:
            raise ValueError(
                "TensorCoreIntrinEmitter: 8-bit A tiles must be stored (m, k): a_transposed "
                "must be False for a_dtype " + self.a_dtype + ", got True"
            )
        if b_bits == 8 and not self.b_transposed:
            raise ValueError(
                "TensorCoreIntrinEmitter: 8-bit B tiles must be stored (n, k): b_transposed "
                "must be True for b_dtype " + self.b_dtype + ", got False"
            )
        self.block_row_warps = _positive_int(block_row_warps, "block_row_warps")
        self.block_col_warps = _positive_int(block_col_warps, "block_col_warps")
        self.warp_row_tiles = _positive_int(warp_row_tiles, "warp_row_tiles", 16)
        self.warp_col_tiles = _positive_int(warp_col_tiles, "warp_col_tiles", 8)
        self.k_dim = 256 // a_bits
        self.chunk = _positive_int(chunk, "chunk", self.k_dim)
        self.reduce_k = _positive_int(reduce_k, "reduce_k")
        self.num_elems_per_byte = num_elems_per_byte
        if is_m_first is not None:
            self.is_m_first = bool(is_m_first)
        self.thread_var = thread_var

        self.a_dtype_abbrv = self.dtype_abbrv[self.a_dtype]
        self.b_dtype_abbrv = self.dtype_abbrv[self.b_dtype]
        self.accum_dtype_abbrv = self.dtype_abbrv[self.accum_dtype]
        self.warp_rows = self.warp_row_tiles // self.M_DIM
        # 16 columns per B fragment pair when the warp tile allows, else single n8 ones.
        self.n_dim = 16 if self.warp_col_tiles % 16 == 0 else 8
        self.warp_cols = self.warp_col_tiles // self.n_dim
        self.micro_size_x = self.M_DIM
        self.micro_size_y = self.n_dim
        self.micro_size_k = self.k_dim
        self.local_size_a = self.M_DIM * self.k_dim // self.WARP_SIZE
        self.local_size_b = self.n_dim * self.k_dim // self.WARP_SIZE
        self.local_size_out = self.M_DIM * self.n_dim // self.WARP_SIZE
        self.mma_prefix = f"m16n8k{self.k_dim}"
        self.threads = self.WARP_SIZE * self.block_row_warps * self.block_col_warps * self.reduce_k

    # ------------------------------------------------------------------ threads

    def get_thread_binding(self):
        """The thread index the emitted code splits the tile by: `thread_var` if given,
        else the kernel's threadIdx.x."""
        if self.thread_var is not None:
            return self.thread_var
        return T.get_thread_binding()

    def extract_thread_binding(self, thread_id, is_m_first=None):
        """(lane, warp_n, warp_m) of thread `thread_id`."""
        if is_m_first is None:
            is_m_first = self.is_m_first
        ws, rows, cols = self.WARP_SIZE, self.block_row_warps, self.block_col_warps
        lane = thread_id % ws
        if is_m_first:
            warp_n = (thread_id // ws) % cols
            warp_m = (thread_id // (ws * cols)) % rows
        else:
            warp_m = (thread_id // ws) % rows
            warp_n = (thread_id // (ws * rows)) % cols
        return lane, warp_n, warp_m

    def _thread(self, thread_binding):
        return self.get_thread_binding() if thread_binding is None else thread_binding

    # ------------------------------------------------------------------ checks

    def _local(self, method, what, buf, dtype, size):
        if isinstance(buf, Region):
            raise _arg_error(
                method, f"{what} must be a whole T.alloc_local buffer, got the slice {buf!r}"
            )
        if not isinstance(buf, Buffer):
            raise _arg_error(method, f"{what} must be a T.alloc_local buffer, got {buf!r}")
        if buf.scope != "local":
            hint = (
                " (fragment buffers: allocate the registers with T.alloc_local)"
                if buf.scope == "local.fragment"
                else ""
            )
            raise _arg_error(
                method,
                f"{what} must be a T.alloc_local (scope 'local') buffer, got '{buf.name}' "
                f"of scope '{buf.scope}'{hint}",
            )
        if str(buf.dtype) != dtype:
            raise _arg_error(
                method, f"{what} '{buf.name}' must have dtype {dtype}, got {buf.dtype}"
            )
        count = 1
        for extent in buf.shape:
            n = const_int(extent)
            if n is None:
                raise _arg_error(method, f"{what} '{buf.name}' must have a constant shape")
            count *= n
        if count < size:
            raise _arg_error(
                method,
                f"{what} '{buf.name}' must hold at least {size} elements per thread, got "
                f"{count} (shape {list(buf.shape)})",
            )
        return buf

    def _flat(self, buf, index):
        """Element `index` of a local buffer counted in row-major order."""
        coords = []
        for extent in reversed(buf.shape[1:]):
            coords.append(index % extent)
            index //= extent
        coords.append(index)
        return tuple(reversed(coords))

    def _tile(self, method, what, buf, dtype, scopes=("shared", "shared.dyn")):
        """(buffer, leading indices, row base, column base) of a shared tile or slice."""
        if isinstance(buf, Region):
            buffer, mins = buf.buffer, list(buf.mins)
        elif isinstance(buf, Buffer):
            buffer, mins = buf, [0] * buf.ndim
        else:
            raise _arg_error(
                method, f"{what} must be a shared buffer or a slice of one, got {buf!r}"
            )
        if buffer.scope not in scopes:
            raise _arg_error(
                method,
                f"{what} '{buffer.name}' must be in {' or '.join(repr(s) for s in scopes)} "
                f"memory, got scope '{buffer.scope}'",
            )
        if str(buffer.dtype) != dtype:
            raise _arg_error(
                method, f"{what} '{buffer.name}' must have dtype {dtype}, got {buffer.dtype}"
            )
        if buffer.ndim < 2:
            raise _arg_error(
                method,
                f"{what} '{buffer.name}' must have at least 2 dimensions, got shape "
                f"{list(buffer.shape)}",
            )
        return buffer, mins[:-2], mins[-2], mins[-1]

    def _import_guard(self):
        T.import_source(_TARGET_GUARD)

    def _ldmatrix(self, local, first, buf, lead, row, col, count, trans):
        """`count` 8 x 8 matrices into registers from element `first` of `local`, this
        lane handing over the address of element (row, col) of the tile."""
        self._import_guard()
        T.evaluate(
            T.call_extern(
                "handle",
                f"tl::ldmatrix_frag<{count}, {'true' if trans else 'false'}>",
                T.address_of(local[self._flat(local, first)]),
                T.access_ptr(buf[(*lead, row, col)], "r"),  # read only: exact barriers
            )
        )

    def _ldmatrix_ok(self, buf, lead, base0, base1):
        """Whether ldmatrix can read the tile: its rows start on 16 bytes, the slice's
        corner is constant and on 16 bytes, and its layout (if one is annotated) keeps
        every aligned 16-byte run of a row together and aligned. Otherwise the operands
        are gathered element by element, which any layout allows."""
        elem = _dtype(buf.dtype).bits // 8
        run = 16 // elem
        dims = [const_int(d) for d in buf.shape]
        corner = [const_int(b) for b in (base0, base1)]
        if None in dims or None in corner or (dims[-1] * elem) % 16 or corner[1] % run:
            return False
        table = getattr(builder_ctx.current("TensorCoreIntrinEmitter"), "layout_map", {})
        entry = table.get(buf.handle)  # T.annotate_layout's (buffer, layout)
        if entry is None:
            return True
        layout = entry[1]
        if type(layout) is not _Layout:
            return False  # a T.Fragment or something else: the general path
        checked = layout.__dict__.setdefault("_keeps_16_byte_runs", {})
        if run not in checked:
            checked[run] = _keeps_runs(layout, dims, run)
        return checked[run]

    # ------------------------------------------------------------------ operands

    def _a_element(self, lane, e):
        """(m, k) within a 16 x k_dim tile of element e of the lane's A registers."""
        if self.k_dim == 16:
            return mma_load_a_32x8_to_shared_16x16_layout(lane, e)
        return mma_load_a_32x16_to_shared_16x32_layout(lane, e)

    def _b_element(self, lane, e):
        """(n, k) within an n_dim x k_dim tile of element e of the lane's B registers."""
        if self.k_dim == 16:
            return mma_load_b_32x8_to_shared_16x16_layout(lane, e)
        return mma_load_b_32x16_to_shared_16x32_layout(lane, e)

    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0, thread_binding=None):
        """Loads the lane's A registers for k step `ki` (and k group `rk`): warp_rows
        fragments of local_size_a elements, from the block's A tile in shared memory
        ((m, k), or (k, m) with a_transposed; a buffer or a slice of one)."""
        method = "ldmatrix_a"
        self._local(
            method, "A_local_buf", A_local_buf, self.a_dtype, self.warp_rows * self.local_size_a
        )
        buf, lead, base0, base1 = self._tile(method, "A_shared_buf", A_shared_buf, self.a_dtype)
        lane, _, warp_m = self.extract_thread_binding(self._thread(thread_binding))
        k0 = rk * self.chunk + ki * self.micro_size_k
        fast = self._ldmatrix_ok(buf, lead, base0, base1)
        run = 16 // (_dtype(self.a_dtype).bits // 8)  # elements of a 16-byte matrix row
        for i in range(self.warp_rows):
            m0 = warp_m * self.warp_row_tiles + i * self.micro_size_x
            if fast:  # matrices (m 0-7, k 0), (m 8-15, k 0), (m 0-7, k run), (m 8-15, k run)
                if self.a_transposed:  # stored (k, m): ldmatrix.trans of k rows
                    row, col = k0 + lane % 8 + 8 * (lane // 16), m0 + 8 * ((lane // 8) % 2)
                else:
                    row, col = m0 + lane % 16, k0 + run * (lane // 16)
                self._ldmatrix(
                    A_local_buf,
                    i * self.local_size_a,
                    buf,
                    lead,
                    base0 + row,
                    base1 + col,
                    4,
                    self.a_transposed,
                )
                continue
            for e in range(self.local_size_a):
                m, k = self._a_element(lane, e)
                if self.a_transposed:
                    value = buf[(*lead, base0 + k0 + k, base1 + m0 + m)]
                else:
                    value = buf[(*lead, base0 + m0 + m, base1 + k0 + k)]
                A_local_buf[self._flat(A_local_buf, i * self.local_size_a + e)] = value

    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0, thread_binding=None):
        """Loads the lane's B registers for k step `ki`: warp_cols fragments of
        local_size_b elements (two n8 fragments each when n_dim is 16), from the
        block's B tile ((k, n), or (n, k) with b_transposed)."""
        method = "ldmatrix_b"
        self._local(
            method, "B_local_buf", B_local_buf, self.b_dtype, self.warp_cols * self.local_size_b
        )
        buf, lead, base0, base1 = self._tile(method, "B_shared_buf", B_shared_buf, self.b_dtype)
        lane, warp_n, _ = self.extract_thread_binding(self._thread(thread_binding))
        k0 = rk * self.chunk + ki * self.micro_size_k
        fast = self._ldmatrix_ok(buf, lead, base0, base1)
        run = 16 // (_dtype(self.b_dtype).bits // 8)
        pieces = (
            self.n_dim // 8
        )  # n8 fragments: matrices (n 0-7, k 0), (n 0-7, k run)[, n 8-15 ...]
        for j in range(self.warp_cols):
            n0 = warp_n * self.warp_col_tiles + j * self.micro_size_y
            if fast:
                if self.b_transposed:  # stored (n, k): plain ldmatrix of n rows
                    row, col = (
                        n0 + 8 * ((lane // 16) % pieces) + lane % 8,
                        k0 + run * ((lane // 8) % 2),
                    )
                else:  # stored (k, n): ldmatrix.trans of k rows
                    row, col = (
                        k0 + lane % 8 + 8 * ((lane // 8) % 2),
                        n0 + 8 * ((lane // 16) % pieces),
                    )
                trans = not self.b_transposed
                self._ldmatrix(
                    B_local_buf,
                    j * self.local_size_b,
                    buf,
                    lead,
                    base0 + row,
                    base1 + col,
                    2 * pieces,
                    trans,
                )
                continue
            for e in range(self.local_size_b):
                n, k = self._b_element(lane, e)
                if self.b_transposed:
                    value = buf[(*lead, base0 + n0 + n, base1 + k0 + k)]
                else:
                    value = buf[(*lead, base0 + k0 + k, base1 + n0 + n)]
                B_local_buf[self._flat(B_local_buf, j * self.local_size_b + e)] = value

    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):
        """C_local += A_local * B_local for the warp's tile: warp_rows x warp_cols
        fragments, one mma.sync per 16 x 8 piece. `k_inner` is TileLang's offset into
        fragment operands; the T.alloc_local operands here hold one k step, which is read
        whatever it is (as TileLang reads local operands)."""
        self._check_mma("mma", A_local_buf, B_local_buf, C_local_buf)
        for i in range(self.warp_rows):
            for j in range(self.warp_cols):
                self._atom(A_local_buf, B_local_buf, C_local_buf, i, j)

    @property
    def mma_num_inst_m(self) -> int:
        """The mma atoms of the warp's tile along M (its warp_rows)."""
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        """The mma atoms of the warp's tile along N (its warp_cols)."""
        return self.warp_cols

    def mma_atom(
        self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx, k_inner=0
    ) -> None:
        """One atom of mma(): C_local's (inst_m_idx, inst_n_idx) fragment += A's row
        fragment inst_m_idx times B's column fragment inst_n_idx; the indices may be loop
        variables (`for i, j in T.grid(mma_num_inst_m, mma_num_inst_n)` gives what mma()
        does). `k_inner` as in mma()."""
        method = "mma_atom"
        self._check_mma(method, A_local_buf, B_local_buf, C_local_buf)
        for what, idx, count in (("inst_m_idx", inst_m_idx, self.warp_rows),
                                 ("inst_n_idx", inst_n_idx, self.warp_cols)):  # fmt: skip
            c = const_int(idx)
            if c is not None and not 0 <= c < count:
                raise _arg_error(method, f"{what} must be in [0, {count}), got {c}")
        self._atom(A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx)

    def _check_mma(self, method, A_local_buf, B_local_buf, C_local_buf):
        self._local(
            method, "A_local_buf", A_local_buf, self.a_dtype, self.warp_rows * self.local_size_a
        )
        self._local(
            method, "B_local_buf", B_local_buf, self.b_dtype, self.warp_cols * self.local_size_b
        )
        out = self.warp_rows * self.warp_cols * self.local_size_out
        self._local(method, "C_local_buf", C_local_buf, self.accum_dtype, out)
        self._import_guard()

    def _atom(self, A_local_buf, B_local_buf, C_local_buf, i, j):
        pieces = self.n_dim // 8
        half_b, half_c = self.local_size_b // pieces, self.local_size_out // pieces
        for h in range(pieces):
            c = (i * self.warp_cols + j) * self.local_size_out + h * half_c
            a = i * self.local_size_a
            b = j * self.local_size_b + h * half_b
            T.evaluate(
                T.call_extern(
                    "handle",
                    "tl::mma_sync_frag",
                    T.address_of(C_local_buf[self._flat(C_local_buf, c)]),
                    T.address_of(A_local_buf[self._flat(A_local_buf, a)]),
                    T.address_of(B_local_buf[self._flat(B_local_buf, b)]),
                )
            )

    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None, thread_binding=None):
        """Writes the lane's accumulators to C_buf: a shared tile of the block indexed
        (row, col) or (row tile, col tile, 16, n_dim), or, with `pid_m` and `pid_n`
        (the block's position), a 2-D global tensor."""
        method = "stmatrix"
        out = self.warp_rows * self.warp_cols * self.local_size_out
        self._local(method, "C_local_buf", C_local_buf, self.accum_dtype, out)
        if (pid_m is None) != (pid_n is None):
            raise _arg_error(
                method,
                f"pid_m and pid_n go together (a global C); got pid_m={pid_m!r}, pid_n={pid_n!r}",
            )
        is_global = pid_m is not None
        if not isinstance(C_buf, Buffer):
            raise _arg_error(method, f"C_buf must be a buffer, got {C_buf!r}")
        dims = C_buf.ndim
        if is_global and dims != 2:
            raise _arg_error(
                method, f"a global C_buf must have 2 dimensions, got shape {list(C_buf.shape)}"
            )
        if dims not in (2, 4):
            raise _arg_error(
                method, f"C_buf must have 2 or 4 dimensions, got shape {list(C_buf.shape)}"
            )
        lane, warp_n, warp_m = self.extract_thread_binding(self._thread(thread_binding))
        out_dtype = str(C_buf.dtype) if str(C_buf.dtype) != self.accum_dtype else None
        block_m_tiles = self.block_row_warps * self.warp_rows
        block_n_tiles = self.block_col_warps * self.warp_cols
        for i in range(self.warp_rows):
            for j in range(self.warp_cols):
                ti = warp_m * self.warp_rows + i
                tj = warp_n * self.warp_cols + j
                if is_global:
                    ti = pid_m * block_m_tiles + ti
                    tj = pid_n * block_n_tiles + tj
                first = (i * self.warp_cols + j) * self.local_size_out
                _store_accumulators(
                    self, C_local_buf, C_buf, lane, first, ti, tj, dims == 4, out_dtype
                )

    # ------------------------------------------------------------------ layouts

    def get_store_index_map(self, inverse=False):
        """The accumulator map: (lane, element) -> (row, col) of a 16 x 16 tile, or with
        inverse=True (row, col) -> (lane, element)."""
        if not inverse:
            return mma_store_index_map

        def inverse_map(row, col):
            lane = (row % 8) * 4 + (col % 8) // 2
            return lane, (col // 8) * 4 + (row // 8) * 2 + col % 2

        return inverse_map

    def make_mma_load_layout(self, local_buf, matrix="A"):
        """A T.Fragment of the block's operand tile as the lanes' registers hold it:
        A is (block_row_warps * warp_row_tiles, chunk) ((chunk, ...) when transposed),
        B is (block_col_warps * warp_col_tiles, chunk) when b_transposed, else
        (chunk, ...). Each warp keeps its rows' k steps one after the other (ldmatrix
        at step ki fills the ki-th group of warp_rows * local_size_a registers); the
        warps of the other axis hold copies (replicate)."""
        if matrix not in ("A", "B"):
            raise ValueError(
                f"TensorCoreIntrinEmitter.make_mma_load_layout: matrix must be 'A' or 'B', got {matrix!r}"
            )
        is_a = matrix == "A"
        bits = _dtype(self.a_dtype if is_a else self.b_dtype).bits
        if is_a:
            sr = (
                shared_16x16_to_mma_32x8_layout_sr_a
                if bits == 16
                else shared_16x32_to_mma_32x16_layout_sr_a
            )
        else:
            sr = (
                shared_16x16_to_mma_32x8_layout_sr_b
                if bits == 16
                else shared_16x32_to_mma_32x16_layout_sr_b
            )
        transposed = self.a_transposed if is_a else not self.b_transposed
        s_tile = self.micro_size_x if is_a else self.micro_size_y
        k_tile = self.micro_size_k
        tiles_s = self.warp_rows if is_a else self.warp_cols
        warp_s_extent = self.warp_row_tiles if is_a else self.warp_col_tiles
        warps_s = self.block_row_warps if is_a else self.block_col_warps
        warps_other = self.block_col_warps if is_a else self.block_row_warps
        per_tile = self.local_size_a if is_a else self.local_size_b
        s_extent = warps_s * warp_s_extent
        shape = [self.chunk, s_extent] if transposed else [s_extent, self.chunk]
        ws = self.WARP_SIZE

        def split(i, j):
            return (j, i) if transposed else (i, j)

        def warp_index(ws_idx, other):
            if is_a:
                wm, wn = ws_idx, other
            else:
                wm, wn = other, ws_idx
            if self.is_m_first:
                return wm * self.block_col_warps + wn
            return wn * self.block_row_warps + wm

        def forward_thread(i, j, rep):
            s, k = split(i, j)
            lane, _ = sr(s % s_tile, k % k_tile)
            return warp_index(s // warp_s_extent, rep) * ws + lane

        def forward_index(i, j):
            s, k = split(i, j)
            _, e = sr(s % s_tile, k % k_tile)
            tile = (s % warp_s_extent) // s_tile
            return ((k // k_tile) * tiles_s + tile) * per_tile + e

        if warps_other == 1:
            return T.Fragment(
                shape,
                forward_thread_fn=lambda i, j: forward_thread(i, j, 0),
                forward_index_fn=forward_index,
            )
        return T.Fragment(
            shape,
            forward_thread_fn=forward_thread,
            replicate=warps_other,
            forward_index_fn=forward_index,
        )

    def make_mma_store_layout(self, local_buf):
        """A T.Fragment of the block's accumulator tile (block_row_warps * warp_row_tiles
        x block_col_warps * warp_col_tiles, the shape of `local_buf`) as the lanes'
        registers hold it after mma: element (i, j) is in the warp that owns it, at the
        lane and register stmatrix reads it from."""
        shape = list(local_buf.shape)
        m_extent = self.block_row_warps * self.warp_row_tiles
        n_extent = self.block_col_warps * self.warp_col_tiles
        if [const_int(x) for x in shape] != [m_extent, n_extent]:
            raise ValueError(
                "TensorCoreIntrinEmitter.make_mma_store_layout: local_buf must have shape "
                f"[{m_extent}, {n_extent}] (the block's accumulator tile), got {shape}"
            )
        inverse = self.get_store_index_map(inverse=True)
        ws, mx, ny = self.WARP_SIZE, self.micro_size_x, self.micro_size_y

        def forward_thread(i, j):
            wm, wn = i // self.warp_row_tiles, j // self.warp_col_tiles
            lane, _ = inverse(i % mx, j % ny)
            if self.is_m_first:
                warp = wm * self.block_col_warps + wn
            else:
                warp = wn * self.block_row_warps + wm
            return warp * ws + lane

        def forward_index(i, j):
            ti, tj = (i % self.warp_row_tiles) // mx, (j % self.warp_col_tiles) // ny
            _, e = inverse(i % mx, j % ny)
            return (ti * self.warp_cols + tj) * self.local_size_out + e

        return T.Fragment(shape, forward_thread_fn=forward_thread, forward_index_fn=forward_index)


@T.macro
def _store_accumulators(emitter, C_local_buf, C_buf, lane, first, ti, tj, tiled, out_dtype):
    """One 16 x n_dim accumulator tile of the lane to C_buf's tile (ti, tj). An IR loop
    (unrolled by the CUDA compiler, so the registers stay registers): thread-level
    stores in one loop need no barriers between them."""
    for e in T.unroll(emitter.local_size_out):
        row, col = mma_store_index_map(lane, e)
        value = C_local_buf[emitter._flat(C_local_buf, first + e)]
        if out_dtype is not None:
            value = T.cast(value, out_dtype)
        if tiled:
            C_buf[ti, tj, row, col] = value
        else:
            C_buf[ti * emitter.M_DIM + row, tj * emitter.n_dim + col] = value
