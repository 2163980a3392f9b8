"""Views: `T.Tensor(shape, dtype, buf.data)` inside a kernel gives another shape to the
elements of an existing buffer, as TileLang's convolution example does with
`T.Tensor((KH * KW * C, F), dtype, kernel.data)`. `T.reshape(buf, shape)` and
`T.view(buf, shape=None, dtype=None)` are the checked forms: the element count (for
T.view, the byte count) must stay the same, and T.view may read the bytes as another
dtype, of the same width or not.

A view is a frontend object, not a new IR buffer: an element `V[i, j]` becomes the
element of the base buffer at the same row-major position, so generated code only ever
names the base buffer's storage, and every pass (liveness, barriers, pipelining) sees
the accesses it makes. A view of a wider dtype reads and writes each of its elements
as the run of base elements holding its bytes (little-endian, as every target is), so
no access is ever wider than the base's elements and no alignment is needed. T.copy
and T.fill on a view (or a slice of one) become loops over those elements, predicated
on the view's shape like any other tile."""

from __future__ import annotations

import math
from typing import Any

from tilelang.types import BufferLike, DTypeLike, ShapeLike

from . import builder_ctx
from .buffer import Buffer, BufferData, Region, VarBuffer, const_int, to_value
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype
from .pointers import AddressTensor

_C = builder_ctx._C


def _same_dim(a, b):
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca == cb
    return a is b or str(a) == str(b)


def _product(dims):
    out = 1
    for d in dims:
        out = d if const_int(out) == 1 else out * d
    return out


def _same_count(a, b):
    """Whether shapes `a` and `b` provably hold as many elements."""
    pa, pb = _product(a), _product(b)
    ca, cb = const_int(pa), const_int(pb)
    if ca is not None and cb is not None:
        return ca == cb
    return _same_dim(pa, pb)


def _bits(dt):
    return dt.bits * dt.lanes


def _word(bits):
    """The integer dtype of `bits` bits that carries a reinterpretation: unsigned, or int4
    for packed 4-bit elements (widened, its sign bits are masked off: _low_bits)."""
    return make_dtype("int4" if bits == 4 else f"uint{bits}")


def _low_bits(value, bits, word):
    """`value` (of integer dtype `word`) with all but its low `bits` bits cleared."""
    if _bits(make_dtype(word)) <= bits:
        return value
    return _C.binary("BitAnd", value, _C.const((1 << bits) - 1, word))


# Buffers a single thread owns: a store that rewrites part of an element races with nobody.
_PRIVATE_SCOPES = ("local",)


class BufferView:
    """A view of a buffer's bytes with another shape, and maybe another dtype (row-major
    on both sides). With a dtype of another width, one view element spans `parts` base
    elements (a wider dtype) or one base element holds `share` view elements."""

    def __init__(self, base, shape, name, dtype=None):
        self.base = base
        self.shape = tuple(shape)
        self.dtype = base.dtype if dtype is None else dtype
        self.scope = base.scope
        self.name = name
        wv, wb = _bits(self.dtype), _bits(base.dtype)
        self.parts = wv // wb if wv > wb else 1
        self.share = wb // wv if wb > wv else 1

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def data(self):
        return BufferData(self)

    @property
    def handle(self):
        raise frontend_error(
            f"view '{self.name}' of buffer '{self.base.name}' can be indexed, copied with T.copy "
            f"and filled with T.fill; for other tile operators, T.copy it into a buffer first"
        )

    def __repr__(self):
        return (
            f"View({self.name} of {self.base.name}, shape={list(self.shape)}, dtype={self.dtype})"
        )

    def full_region(self):
        return Region(self, [0] * self.ndim, self.shape)

    # Subscripts follow Buffer's rules (negative indices, slices, missing trailing dims).
    _split_key = Buffer._split_key
    _normalize_index = Buffer._normalize_index
    _slice_range = Buffer._slice_range

    def base_indices(self, indices):
        """The indices into the base buffer of the view element at `indices`."""
        vs, bs = list(self.shape), list(self.base.shape)
        if len(vs) == len(bs) and all(_same_dim(a, b) for a, b in zip(vs, bs)):
            return [to_value(i) for i in indices]
        # With as many elements on both sides, leading dimensions the shapes share map
        # one to one too (a fragment [N, Q * H] seen as [N, Q, H] keeps its row index).
        head = []
        if _same_count(vs, bs):
            while len(vs) > 1 and len(bs) > 1 and _same_dim(vs[0], bs[0]):
                vs, bs = vs[1:], bs[1:]
                head.append(to_value(indices[len(head)]))
            indices = indices[len(head) :]
        # Trailing dimensions the two shapes share map one to one; the rest are flattened
        # on the view's side and unflattened on the base's.
        common = 0
        while common < min(len(vs), len(bs)) - 1 and _same_dim(vs[-1 - common], bs[-1 - common]):
            common += 1
        lead_v, lead_b = len(vs) - common, len(bs) - common
        flat = 0
        for d in range(lead_v):
            flat = flat * vs[d] + to_value(indices[d])
        out = []
        for d in range(lead_b - 1, 0, -1):
            out.append(flat % bs[d])
            flat = flat // bs[d]
        if lead_b:
            out.append(flat)
        out.reverse()
        return head + out + [to_value(i) for i in indices[lead_v:]]

    def _flat(self, indices):
        """The row-major position of the view element at `indices`."""
        flat = 0
        for n, i in zip(self.shape, indices):
            flat = to_value(i) if const_int(flat) == 0 else flat * n + to_value(i)
        return flat

    def _base_at(self, flat):
        """The base indices of the base element at row-major position `flat`."""
        out = []
        for n in reversed(self.base.shape[1:]):
            out.append(flat % n)
            flat = flat // n
        out.append(flat)
        return list(reversed(out))

    def _load_base(self, flat):
        return _C.buffer_load(self.base.handle, self._base_at(flat))

    def in_bounds(self, indices):
        """The condition that `indices` lie inside the view's shape (True when provable)."""
        cond = True
        for i, n in zip(indices, self.shape):
            ci, cn = const_int(i), const_int(n)
            if ci is not None and cn is not None and 0 <= ci < cn:
                continue
            term = _C.logical_and(i >= 0, i < n)
            cond = term if cond is True else _C.logical_and(cond, term)
        return cond

    def load(self, indices):
        if self.parts > 1:
            return self._load_wide(self._flat(indices) * self.parts)
        if self.share > 1:
            return self._load_narrow(self._flat(indices))
        value = _C.buffer_load(self.base.handle, self.base_indices(indices))
        return value if self.dtype == self.base.dtype else _C.reinterpret(value, self.dtype)

    def _load_wide(self, first):
        """The view element made of the `parts` base elements from position `first`."""
        wb, word = _bits(self.base.dtype), _word(_bits(self.dtype))
        bits = None
        for k in range(self.parts):
            part = _C.reinterpret(self._load_base(first + k), _word(wb))
            part = _low_bits(_C.cast(part, word), wb, word)
            if k:
                part = _C.binary("Shl", part, _C.const(k * wb, word))
            bits = part if bits is None else _C.binary("BitOr", bits, part)
        return _C.reinterpret(bits, self.dtype)

    def _load_narrow(self, flat):
        """The view element at position `flat`: a slice of the bits of one base element."""
        wb, wv = _bits(self.base.dtype), _bits(self.dtype)
        word = _C.reinterpret(self._load_base(flat // self.share), _word(wb))
        shift = _C.cast((flat % self.share) * wv, _word(wb))
        part = _C.cast(_C.binary("Shr", word, shift), _word(wv))
        return _C.reinterpret(part, self.dtype)

    def store(self, ctx, indices, value):
        """Stores `value` into the view element at `indices` (no bounds check): the same
        bits, as the base buffer holds them."""
        if self.parts == 1 and self.share == 1:
            if self.dtype != self.base.dtype:
                value = _C.reinterpret(_C.cast(value, self.dtype), self.base.dtype)
            ctx.builder.store(self.base.handle, self.base_indices(indices), value)
            return
        wb, wv = _bits(self.base.dtype), _bits(self.dtype)
        bits = _C.reinterpret(_C.cast(to_value(value), self.dtype), _word(wv))
        flat = self._flat(indices)
        if self.parts > 1:
            if not _C.is_const(bits):
                bits = ctx.builder.let(f"{self.name}_bits", bits)  # computed once, stored in parts
            for k in range(self.parts):
                part = _C.binary("Shr", bits, _C.const(k * wb, _word(wv))) if k else bits
                part = _C.reinterpret(_C.cast(part, _word(wb)), self.base.dtype)
                ctx.builder.store(self.base.handle, self._base_at(flat * self.parts + k), part)
            return
        if self.base.scope not in _PRIVATE_SCOPES:
            raise frontend_error(
                f"cannot store into view '{self.name}' ({self.dtype}) of '{self.base.name}' "
                f"({self.base.dtype}, {self.base.scope} memory): each {self.base.dtype} element "
                f"holds {self.share} {self.dtype} elements, so a store would rewrite the whole "
                f"element (read, modify, write), racing with the threads that store its other "
                f"parts; store through a view whose dtype is at least {_bits(self.base.dtype)} "
                f"bits wide, or through a view of a T.alloc_local buffer"
            )
        word = _word(wb)
        at = self._base_at(flat // self.share)
        shift = _C.cast((flat % self.share) * wv, word)
        mask = _C.binary("Shl", _C.const((1 << wv) - 1, word), shift)
        old = _C.reinterpret(_C.buffer_load(self.base.handle, at), word)
        kept = _C.binary("BitAnd", old, _C.binary("BitXor", mask, _C.max_value(word)))
        new = _C.binary("Shl", _low_bits(_C.cast(bits, word), wv, word), shift)
        merged = _C.reinterpret(_C.binary("BitOr", kept, new), self.base.dtype)
        ctx.builder.store(self.base.handle, at, merged)

    def __getitem__(self, key):
        indices, region = self._split_key(key)
        if region is not None:
            return region
        ctx = builder_ctx.current(f"indexing view '{self.name}'")
        load = self.load(indices)
        ctx.remember_load(load, self, indices)
        return load

    def __setitem__(self, key, value):
        indices, region = self._split_key(key)
        ctx = builder_ctx.current(f"storing into view '{self.name}'")
        if region is not None:
            fill_region(ctx, region, to_value(value))
            return
        self.store(ctx, indices, to_value(value))

    def __iter__(self):
        raise TypeError(f"view '{self.name}' is not iterable; index it or use T.Parallel")


def make_view(shape, dtype, data):
    """`T.Tensor(shape, dtype, data)` in a kernel body: a view of `data`'s buffer."""
    ctx = builder_ctx.current("T.Tensor(shape, dtype, data)")
    base = data.buffer if isinstance(data, BufferData) else data
    if isinstance(base, BufferView):
        base = base.base
    if not isinstance(base, Buffer):
        raise frontend_error(
            f"T.Tensor(shape, dtype, data) needs the storage of a buffer, such as A.data, "
            f"got {type(data).__name__} {data!r}"
        )
    shape = tuple(to_value(s) for s in (shape if isinstance(shape, (list, tuple)) else (shape,)))
    dt = make_dtype(dtype)
    if dt != base.dtype:
        raise frontend_error(
            f"view of '{base.name}' has dtype {dt} but the buffer holds {base.dtype}; views keep "
            f"the element type (use T.reinterpret on elements to change it)"
        )
    if any(s is not None for s in base.handle.strides):
        raise frontend_error(
            f"cannot view '{base.name}': it has explicit strides; views need a contiguous buffer"
        )
    want, have = const_int(_product(shape)), const_int(_product(base.shape))
    if want is not None and have is not None and want > have:
        raise frontend_error(
            f"view of '{base.name}' with shape {list(shape)} needs {want} elements but "
            f"'{base.name}' (shape {list(base.shape)}) has only {have}"
        )
    name = getattr(ctx, "pending_name", None) or f"{base.name}_view"
    return BufferView(base, shape, name)


def _shape_arg(shape, what):
    if isinstance(shape, (list, tuple)):
        dims = list(shape)
    elif isinstance(shape, int) or isinstance(to_value(shape), _C.Expr):
        dims = [shape]
    else:
        raise frontend_error(
            f"{what} must be a list or tuple of dimensions, got {type(shape).__name__} {shape!r}"
        )
    out = []
    for d in dims:
        d = to_value(d)
        if isinstance(d, bool) or not isinstance(d, (int, _C.Expr)):
            raise frontend_error(
                f"{what} must hold integers or integer expressions, got {type(d).__name__} {d!r} "
                f"in {list(dims)}"
            )
        c = const_int(d)
        if c is not None and c <= 0:
            raise frontend_error(f"{what} must hold positive dimensions, got {list(dims)}")
        out.append(d if c is None else c)
    return tuple(out)


def _view_source(src, what):
    """The buffer (or view) that T.reshape / T.view looks at, checked."""
    src = src.buffer if isinstance(src, BufferData) else src
    if isinstance(src, BufferView):
        return src
    if isinstance(src, VarBuffer):
        raise frontend_error(
            f"{what} needs a buffer, but '{src.name}' is a T.alloc_var scalar; allocate it "
            f"with T.alloc_local((1,), dtype) to give it a shape"
        )
    if isinstance(src, Region):
        raise frontend_error(
            f"{what} needs a whole buffer, got the slice {src!r}; reshape the buffer and slice "
            f"the result"
        )
    if not isinstance(src, Buffer):
        raise frontend_error(
            f"{what} needs a buffer (a tensor parameter or a T.alloc_* buffer), got "
            f"{type(src).__name__} {src!r}"
        )
    if any(s is not None for s in src.handle.strides):
        raise frontend_error(
            f"{what} cannot reshape '{src.name}': it has explicit strides "
            f"(T.StridedTensor); a reshape needs a contiguous buffer"
        )
    return src


def _fmt_shape(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _reshaped(src, shape, dt, what):
    """A view of `src` (a buffer or a view) with `shape` and `dt`, whose elements are
    those of `src` in row-major order. Counts must match: `what` names the caller."""
    ctx = builder_ctx.current(what)
    if _bits(dt) != _bits(src.dtype):
        _check_width_change(src, shape, dt, what)
    elif not _same_count(shape, src.shape):
        want, have = _product(shape), _product(src.shape)
        raise frontend_error(
            f"{what} shape: expected {have} elements, as '{src.name}' of shape "
            f"{_fmt_shape(src.shape)} holds, got shape {_fmt_shape(shape)} with {want}",
            also=AssertionError,
        )
    base = src.base if isinstance(src, BufferView) else src
    name = getattr(ctx, "pending_name", None) or f"{base.name}_view"
    return BufferView(base, shape, name, dt)


def _reinterpretable(dt):
    return dt.lanes == 1 and dt.bits in (4, 8, 16, 32, 64) and str(dt) != "bool"


def _check_width_change(src, shape, dt, what):
    """A view of `src`'s bytes as `dt` of another width: whole elements of 1, 2, 4 or
    8 bytes, the same byte count, and a buffer whose bytes lie in row-major order."""
    base = src.base if isinstance(src, BufferView) else src
    if base.scope == "local.fragment":
        raise frontend_error(
            f"{what} dtype: cannot view fragment '{base.name}' ({base.dtype}) as {dt}, a dtype "
            f"of another width: a fragment's elements are spread over the threads' registers "
            f"by its layout, so its bytes have no row-major order to reinterpret; T.copy it "
            f"into a T.alloc_shared buffer and view that, or keep the width of {base.dtype}"
        )
    for t, who in ((src.dtype, f"'{src.name}'"), (dt, "the view")):
        if not _reinterpretable(t):
            raise frontend_error(
                f"{what} dtype: a view of another width needs scalar dtypes of 4, 8, 16, 32 "
                f"or 64 bits on both sides, but {who} has {t}; view '{src.name}' ({src.dtype}) as "
                f"such a dtype"
            )
    count, have = const_int(_product(shape)), const_int(_product(src.shape))
    if count is None or have is None:
        raise frontend_error(
            f"{what} shape: a view of '{src.name}' as {dt}, a dtype of another width than "
            f"{src.dtype}, needs constant shapes to check that the byte counts match; got "
            f"shape {_fmt_shape(shape)} for a buffer of shape {_fmt_shape(src.shape)}"
        )
    want, given = have * _bits(src.dtype) // 8, count * _bits(dt) // 8
    if want != given:
        fits = want * 8 // _bits(dt)
        raise frontend_error(
            f"{what} shape: expected {want} bytes, as '{src.name}' of shape "
            f"{_fmt_shape(src.shape)} and dtype {src.dtype} holds, got shape {_fmt_shape(shape)} "
            f"of {dt} with {given} bytes; a view of {dt} needs {fits} elements",
            also=AssertionError,
        )


def reshape(src: BufferLike, shape: ShapeLike) -> Any:
    """`T.reshape(buf, shape)`: the elements of `buf` (any memory: global, shared,
    fragment, local) with another shape of as many elements, row-major on both sides.
    Reads and writes through either name reach the same storage."""
    src = _view_source(src, "T.reshape")
    return _reshaped(src, _shape_arg(shape, "T.reshape shape"), src.dtype, "T.reshape")


def view(src: BufferLike, shape: ShapeLike | None = None, dtype: DTypeLike | None = None) -> Any:
    """`T.view(buf, shape=None, dtype=None)`: T.reshape that may also read the bytes as
    another dtype (the bits are kept, as T.reinterpret does). With a dtype of another
    width the shape (by default `buf`'s) must hold as many bytes."""
    src = _view_source(src, "T.view")
    dt = src.dtype if dtype is None else make_dtype(dtype)
    shape = src.shape if shape is None else _shape_arg(shape, "T.view shape")
    return _reshaped(src, shape, dt, "T.view")


def safe_expr(value, dtype):
    """The value an out-of-bounds read gives, as an expression of `dtype`."""
    if isinstance(value, float) and math.isinf(value):
        return _C.infinity(dtype, value < 0)
    return _C.cast(to_value(value), dtype)


def _loops(ctx, extents, body):
    """Runs `body(vars)` inside a parallel loop nest over `extents`."""
    builder = ctx.builder
    vars_ = []
    for k, e in enumerate(extents):
        vars_.append(builder.begin_for(f"v{k}", 0, e, "parallel", {}))
    body(vars_)
    for _ in extents:
        builder.end_for()


def _side_indices(mins, extents, vars_):
    """Indices of one side of a copy: non-unit extents take the loop vars in order."""
    out, k = [], 0
    for m, e in zip(mins, extents):
        if const_int(e) == 1:
            out.append(m)
        else:
            out.append(m + vars_[k])
            k += 1
    return out


def _side_load(buf, indices):
    if isinstance(buf, (BufferView, AddressTensor)):
        return buf.load(indices), buf.in_bounds(indices)
    cond = True
    for i, n in zip(indices, buf.shape):
        ci, cn = const_int(i), const_int(n)
        if ci is not None and cn is not None and 0 <= ci < cn:
            continue
        term = _C.logical_and(i >= 0, i < n)
        cond = term if cond is True else _C.logical_and(cond, term)
    return _C.buffer_load(buf.handle, indices), cond


def store(ctx, buf, indices, value):
    """Stores one element of a buffer or a view (dropped outside the view)."""
    cond = buf.in_bounds(indices) if isinstance(buf, (BufferView, AddressTensor)) else True
    if cond is not True:
        ctx.builder.begin_if(cond)
    if isinstance(buf, (BufferView, AddressTensor)):
        buf.store(ctx, indices, value)
    else:
        ctx.builder.store(buf.handle, indices, value)
    if cond is not True:
        ctx.builder.end_if()


def same_shape(a, b):
    return len(a) == len(b) and all(_same_dim(x, y) for x, y in zip(a, b))


def safe_value_of(ctx, buf):
    """The value T.annotate_safe_value set for `buf` (a view shares its base's), or None."""
    if isinstance(buf, AddressTensor):
        return None
    if isinstance(buf, BufferView):
        buf = buf.base
    return getattr(ctx, "safe_values", {}).get(buf.handle)


def _non_unit(extents):
    return [e for e in extents if const_int(e) != 1]


def _legalize(a, b):
    """TileLang's pairwise rule: with unequal counts of non-unit extents, a unit extent
    takes the other side's extent, right-aligned."""
    if len(_non_unit(a)) == len(_non_unit(b)):
        return
    for k in range(1, min(len(a), len(b)) + 1):
        if _same_dim(a[-k], b[-k]):
            continue
        if const_int(a[-k]) == 1:
            a[-k] = b[-k]
        elif const_int(b[-k]) == 1:
            b[-k] = a[-k]


def _place(buf, extents, which, other):
    """A start point's extents laid over its trailing dimensions."""
    extents = list(extents)
    while len(extents) > buf.ndim and const_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) > buf.ndim:
        raise frontend_error(
            f"T.copy {which} '{buf.name}' is a start point with {buf.ndim} dimension(s), but the "
            f"other side covers {_fmt(other)}; index the {which} with slices, or use a tile of at "
            f"most {buf.ndim} non-unit dimension(s)"
        )
    return [1] * (buf.ndim - len(extents)) + extents


def _fmt(extents):
    return "[" + ", ".join(str(e) for e in extents) + "]"


def copy_loops(ctx, src, dst, safe_value):
    """T.copy where a side is a view: `src`/`dst` are (buffer or view, mins, extents or
    None for a start point). Same rules as the core's T.copy."""
    s_buf, s_min, s_ext = src
    d_buf, d_min, d_ext = dst
    se = list(s_ext) if s_ext is not None else [1] * len(d_ext)
    de = list(d_ext) if d_ext is not None else [1] * len(s_ext)
    _legalize(se, de)
    se = _place(s_buf, se, "source", de) if s_ext is None else se
    de = _place(d_buf, de, "destination", se) if d_ext is None else de
    sn, dn = _non_unit(se), _non_unit(de)
    if len(sn) != len(dn) or not all(_compatible(x, y) for x, y in zip(sn, dn)):
        raise frontend_error(
            f"T.copy extents cannot be reconciled: source '{s_buf.name}' covers {_fmt(se)} but "
            f"destination '{d_buf.name}' covers {_fmt(de)}; extents are paired right-aligned "
            f"after dropping unit dimensions, so slice one side to match the other (make the "
            f"destination cover {_fmt(sn)} or the source cover {_fmt(dn)})"
        )
    safe = 0 if safe_value is None else safe_value
    # A pair that may differ (symbolic) runs over the larger extent; each side is then
    # predicated by its own.
    differ = [not _same_dim(s, d) for s, d in zip(sn, dn)]
    loop = [_C.binary("Max", s, d) if x else d for s, d, x in zip(sn, dn, differ)]

    def within(vars_, extents):
        cond = True
        for v, e, x in zip(vars_, extents, differ):
            if x:
                cond = _and(cond, v < e)
        return cond

    def body(vars_):
        value, ok = _side_load(s_buf, _side_indices(s_min, se, vars_))
        ok = _and(ok, within(vars_, sn))
        if ok is not True:
            value = _C.select(ok, value, safe_expr(safe, s_buf.dtype))
        inside = within(vars_, dn)
        if inside is not True:
            ctx.builder.begin_if(inside)
        store(ctx, d_buf, _side_indices(d_min, de, vars_), _C.cast(value, d_buf.dtype))
        if inside is not True:
            ctx.builder.end_if()

    _loops(ctx, loop, body)


def _compatible(a, b):
    """Extents that can be paired: equal, or not both constant."""
    ca, cb = const_int(a), const_int(b)
    return ca == cb if ca is not None and cb is not None else True


def _and(a, b):
    if a is True:
        return b
    if b is True:
        return a
    return _C.logical_and(a, b)


def fill_region(ctx, region, value):
    """T.fill / slice assignment on a view."""
    view = region.buffer
    tile = [e for e in region.extents if const_int(e) != 1]

    def body(vars_):
        store(ctx, view, _side_indices(region.mins, region.extents, vars_), value)

    _loops(ctx, tile, body)


_BITWISE = {"bitand": "BitAnd", "bitor": "BitOr", "bitxor": "BitXor"}


def _identity(kind, dt):
    if kind in ("sum", "abssum", "absmax", "bitor", "bitxor"):
        return _C.const(0, dt)
    if kind == "bitand":
        return _C.max_value(dt) if str(dt).startswith("uint") else _C.const(-1, dt)
    has_inf = dt.is_float() and (dt.bits >= 16 or dt == "float8_e5m2")
    if has_inf:
        return _C.infinity(dt, kind == "max")
    return _C.min_value(dt) if kind == "max" else _C.max_value(dt)


def _combine(kind, acc, x, nan_propagate=False):
    if kind in ("sum", "abssum"):
        return acc + x
    if kind in ("max", "absmax", "min"):
        op = "Min" if kind == "min" else "Max"
        if nan_propagate and x.dtype.name.startswith(("float", "bfloat")):  # a NaN gives NaN
            return _C.call(op.lower() + "_nan", [acc, x])
        return _C.binary(op, acc, x)
    return _C.binary(_BITWISE[kind], acc, x)


def _as_region(x, what):
    x = to_value(x)
    if isinstance(x, (Buffer, BufferView)):
        return x.full_region()
    if isinstance(x, Region):
        return x
    raise frontend_error(f"{what} must be a buffer or a slice of one, got {type(x).__name__} {x!r}")


def _snapshot(ctx, view):
    """A shared copy of a fragment's view, in the view's shape, made by a T.Parallel loop
    over the fragment's own shape: a loop that indexes the fragment by its variables keeps
    it in registers on GPU targets, where a fold across its elements would not."""
    base = view.base
    handle = ctx.builder.alloc(
        ctx.take_name(f"{view.name}_snapshot"), list(view.shape), view.dtype, "shared.dyn"
    )
    copy = Buffer(handle)

    def body(vars_):
        flat = 0
        for v, n in zip(vars_, base.shape):
            flat = v if const_int(flat) == 0 else flat * n + v
        idx = []
        for n in reversed(view.shape[1:]):
            idx.append(flat % n)
            flat = flat // n
        idx.append(flat)
        value = _C.buffer_load(base.handle, list(vars_))
        if view.dtype != base.dtype:
            value = _C.reinterpret(value, view.dtype)
        ctx.builder.store(handle, list(reversed(idx)), value)

    _loops(ctx, list(base.shape), body)
    return copy


def _base_of(region):
    """The buffer a region's elements live in (a view's base)."""
    return region.buffer.base if isinstance(region.buffer, BufferView) else region.buffer


def _source_dim(name, s, dim):
    """`dim` of the source region `s`, checked and made non-negative."""
    rank = len(s.extents)
    if not -rank <= dim < rank:
        raise frontend_error(
            f"{name} dim {dim} is out of range for source '{s.buffer.name}' of rank {rank} "
            f"(shape {_fmt(s.extents)}); use a dim in [{-rank}, {rank - 1}]"
        )
    return dim + rank if dim < 0 else dim


def reduce_loops(ctx, name, kind, src, dst, dim, clear, nan_propagate=False):
    """T.reduce_* where a side is a view (T.reshape, T.view, T.Tensor(..., buf.data)):
    a T.Parallel loop over the destination's elements folding the source's `dim` with a
    serial loop, with the checks and semantics of the C++ tile op (src/ops/reduce.cpp)."""
    s, d = _as_region(src, f"{name} source"), _as_region(dst, f"{name} destination")
    for r in (s, d):
        base = _base_of(r)
        if base.scope == "global":
            raise frontend_error(
                f"{name} operands must be in shared or fragment memory, but '{r.buffer.name}' is "
                f"a view of the global tensor '{base.name}'; copy it into a T.alloc_fragment or "
                f"T.alloc_shared buffer first"
            )
    dim = _source_dim(name, s, dim)
    kept = [e for k, e in enumerate(s.extents) if k != dim]
    if not same_shape(_non_unit(kept), _non_unit(d.extents)):
        keep = [1 if k == dim else e for k, e in enumerate(s.extents)]
        raise frontend_error(
            f"{name} destination '{d.buffer.name}' has shape {_fmt(d.extents)}, but reducing "
            f"'{s.buffer.name}' of shape {_fmt(s.extents)} over dim {dim} gives {_fmt(kept)} "
            f"(or {_fmt(keep)} keeping the dim); allocate the destination with that shape"
        )
    if kind in _BITWISE and not (s.buffer.dtype.is_int() and d.buffer.dtype.is_int()):
        raise frontend_error(
            f"{name} needs integer buffers, got '{s.buffer.name}' ({s.buffer.dtype}) and "
            f"'{d.buffer.name}' ({d.buffer.dtype})"
        )
    clear = clear or kind == "abssum"
    dt = d.buffer.dtype
    if isinstance(s.buffer, BufferView) and s.buffer.base.scope == "local.fragment":
        s = Region(_snapshot(ctx, s.buffer), s.mins, s.extents)
    # One output still goes in a T.Parallel loop (of 1), which one thread runs.
    loop = [e for k, e in enumerate(s.extents) if k != dim and const_int(e) != 1] or [1]

    def body(vars_):
        it = iter(vars_)
        s_idx = []
        for k, (m, e) in enumerate(zip(s.mins, s.extents)):
            s_idx.append(None if k == dim else (m if const_int(e) == 1 else m + next(it)))
        d_idx = _side_indices(d.mins, d.extents, vars_)

        def load_dst():
            if isinstance(d.buffer, BufferView):
                return d.buffer.load(d_idx)
            return _C.buffer_load(d.buffer.handle, d_idx)

        if clear:
            store(ctx, d.buffer, d_idx, _identity(kind, dt))
        r = ctx.builder.begin_for("r", 0, s.extents[dim], "serial", {})
        s_idx[dim] = s.mins[dim] + r
        x, _ = _side_load(s.buffer, s_idx)
        x = _C.cast(x, dt)
        if kind in ("abssum", "absmax"):
            x = abs(x)
        store(ctx, d.buffer, d_idx, _combine(kind, load_dst(), x, nan_propagate))
        ctx.builder.end_for()

    _loops(ctx, loop, body)


def scan_loops(ctx, name, kind, src, dst, dim, reverse):
    """T.cumsum / T.cummax where a side is a view of a shared or local buffer: a T.Parallel
    loop over the lines along `dim`, each scanned by a serial loop (dst[0] = src[0],
    dst[r] = dst[r - 1] op src[r]; from the end with reverse=True), which is correct in
    place too."""
    s = _as_region(src, f"{name} source")
    d = s if dst is None else _as_region(dst, f"{name} destination")
    for r in (s, d):
        base = _base_of(r)
        if base.scope in ("global", "local.fragment"):
            where = "a global tensor" if base.scope == "global" else "a fragment"
            raise frontend_error(
                f"{name} on '{r.buffer.name}', a view of {where} ('{base.name}'), is not supported; "
                f"scan a T.alloc_shared buffer (or its view) instead"
            )
    dim = _source_dim(name, s, dim)
    if not same_shape(s.extents, d.extents):
        raise frontend_error(
            f"{name} destination '{d.buffer.name}' has shape {_fmt(d.extents)}, expected the "
            f"source's {_fmt(s.extents)}"
        )
    n = s.extents[dim]
    # One line still goes in a T.Parallel loop (of 1), which one thread runs.
    loop = [e for k, e in enumerate(s.extents) if k != dim and const_int(e) != 1] or [1]

    def body(vars_):
        def indices(region, pos):
            it = iter(vars_)
            out = []
            for k, (m, e) in enumerate(zip(region.mins, region.extents)):
                if k == dim:
                    out.append(m + pos)
                else:
                    out.append(m if const_int(e) == 1 else m + next(it))
            return out

        def load(region, pos):
            value, _ = _side_load(region.buffer, indices(region, pos))
            return _C.cast(value, d.buffer.dtype)

        first = n - 1 if reverse else 0
        store(ctx, d.buffer, indices(d, first), load(s, first))
        r = ctx.builder.begin_for("r", 1, n - 1, "serial", {})
        pos = n - 1 - r if reverse else r
        prev = pos + 1 if reverse else pos - 1
        store(ctx, d.buffer, indices(d, pos), _combine(kind, load(d, prev), load(s, pos)))
        ctx.builder.end_for()

    _loops(ctx, loop, body)
