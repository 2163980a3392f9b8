"""Short vector values and wide memory accesses, with TileLang's names.

A `LaneVector` is a frontend value of a few lanes, each a scalar expression (the IR has
scalar expressions only, so every target runs them): `T.Ramp(base, stride, n)` and
`T.Broadcast(x, n)` build one, a buffer indexed by a ramp (`A[T.Ramp(i, 1, 4)]`) reads
one element per lane and stores the same way, `T.extract_lane` takes a lane, `+ - * /`
work lane by lane, and the packed x2 operations (`T.add2` ... `T.abs2`) take
float32x2 / float16x2 / bfloat16x2 values.

Wide accesses: `T.ldg32/64/128/256` and `T.stg32/64/128/256` (global memory),
`T.lds32/64/128` and `T.sts32/64/128` (shared memory), each one access of 4 to 32 bytes
with an optional predicate, and `T.__ldg(x[i])` (a load through CUDA's read-only
cache). A wide load writes its words into a per-thread local array by one call of a
device function (device/common/wide_access.h, named as TileLang's:
`tl::load_global_64` ...) and gives a LaneVector of uint32 lanes reading that array,
which `T.reinterpret(v, T.float32x2)` turns into other lanes, a slice of as many
elements takes (`Y[i:i + 2] = v`), and a wide store takes.
"""

from __future__ import annotations

from tilelang.types import BufferLike, Expr, ExprLike

from . import builder_ctx
from .buffer import Buffer, ExprStandIn, Region, VarBuffer, const_int, to_value
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C

_GLOBAL = ("global",)
_SHARED = ("shared", "shared.dyn")


class LaneVector:
    """A short vector value: one scalar expression per lane, all of `dtype`'s element type."""

    __slots__ = ("dtype", "lanes")

    def __init__(self, lanes, dtype):
        self.lanes = list(lanes)
        self.dtype = make_dtype(dtype)

    @property
    def element(self):
        return self.dtype.with_lanes(1)

    def __len__(self):
        return len(self.lanes)

    def __repr__(self):
        return f"{self.dtype}({', '.join(str(x) for x in self.lanes)})"

    def __iter__(self):
        raise TypeError(f"a {self.dtype} value is not iterable; use T.extract_lane(v, i)")

    # Lane-wise arithmetic; a scalar operand applies to every lane.
    def _zip(self, other, fn, what):
        if isinstance(other, VectorVar):
            other = other.value()
        if isinstance(other, LaneVector):
            if len(other.lanes) != len(self.lanes):
                raise frontend_error(
                    f"{what} of vectors with {len(self.lanes)} and {len(other.lanes)} lanes"
                )
            pairs = zip(self.lanes, other.lanes)
        else:
            other = to_value(other)
            pairs = ((x, other) for x in self.lanes)
        lanes = [fn(a, b) for a, b in pairs]
        return _vector_of(lanes)

    def __add__(self, o):
        return self._zip(o, lambda a, b: a + b, "+")

    def __radd__(self, o):
        return self._zip(o, lambda a, b: b + a, "+")

    def __sub__(self, o):
        return self._zip(o, lambda a, b: a - b, "-")

    def __rsub__(self, o):
        return self._zip(o, lambda a, b: b - a, "-")

    def __mul__(self, o):
        return self._zip(o, lambda a, b: a * b, "*")

    def __rmul__(self, o):
        return self._zip(o, lambda a, b: b * a, "*")

    def __truediv__(self, o):
        return self._zip(o, lambda a, b: a / b, "/")

    def __neg__(self):
        return _vector_of([-x for x in self.lanes])


class VectorVar(VarBuffer):
    """`v = T.alloc_var(T.float16x2)`: a variable of a vector dtype, held as one register
    per lane (a local array of the element type). It reads as a LaneVector; assigning its
    Python name a vector of as many lanes (`v = T.float16x2(a, b)`), or a scalar (every
    lane), stores each lane."""

    __slots__ = ("vector_dtype",)

    def __init__(self, handle, vector_dtype):
        super().__init__(handle)
        self.vector_dtype = make_dtype(vector_dtype)
        self.dtype = self.vector_dtype  # what the variable holds, as a LaneVector says

    def value(self):
        ctx = builder_ctx.current(f"reading '{self.name}'")
        lanes = []
        for i in range(self.vector_dtype.lanes):
            load = _C.buffer_load(self.handle, [i])
            ctx.remember_load(load, self, [i])
            lanes.append(load)
        return LaneVector(lanes, self.vector_dtype)

    def __tl_expr__(self):
        raise frontend_error(
            f"'{self.name}' is a {self.vector_dtype} variable, not a scalar: read a lane with "
            f"T.extract_lane({self.name}, i)"
        )

    def store(self, value):
        n = self.vector_dtype.lanes
        if isinstance(value, VectorVar):
            value = value.value()
        if isinstance(value, LaneVector):
            if len(value.lanes) != n:
                raise frontend_error(
                    f"cannot assign a {value.dtype} value ({len(value.lanes)} lanes) to "
                    f"'{self.name}' ({self.vector_dtype}, {n} lanes)"
                )
            lanes = value.lanes
        else:
            lanes = [to_value(value)] * n
        builder = builder_ctx.current(f"assigning '{self.name}'").builder
        element = self.vector_dtype.with_lanes(1)
        for i, lane in enumerate(lanes):
            builder.store(self.handle, [i], _C.cast(to_value(lane), element))

    def __getitem__(self, key):
        return Buffer.__getitem__(self, key)

    def __repr__(self):
        return f"<{self.vector_dtype} variable '{self.name}'>"


def _vector_var_op(name):
    def method(self, *other):
        return getattr(self.value(), name)(*other)

    return method


for _name in ("add", "sub", "mul", "truediv"):
    for _dunder in (f"__{_name}__", f"__r{_name}__"):
        setattr(VectorVar, _dunder, _vector_var_op(_dunder))
VectorVar.__neg__ = _vector_var_op("__neg__")  # type: ignore[operator,method-assign]
VectorVar.__hash__ = object.__hash__  # type: ignore[method-assign]


def alloc_vector_var(dtype, init=None):
    """T.alloc_var of a dtype with lanes (see VectorVar)."""
    dt = make_dtype(dtype)
    ctx = builder_ctx.current("T.alloc_var")
    name = ctx.take_name("var")
    handle = ctx.builder.alloc(name, [dt.lanes], dt.with_lanes(1), "local")
    var = VectorVar(handle, dt)
    if init is not None:
        var.store(init)
    return var


def make_vector(dt, values):
    """`T.float16x2(a, b)`: a vector of `dt` from one value per lane, each converted to
    the element type."""
    dt = make_dtype(dt)
    if len(values) != dt.lanes:
        raise frontend_error(
            f"T.{dt}(...) takes one value per lane ({dt.lanes}), got {len(values)}"
        )
    element = dt.with_lanes(1)
    return LaneVector([element(v) if not isinstance(v, LaneVector) else v for v in values], dt)


def _vector_of(lanes):
    """A LaneVector of expressions, typed by its first lane."""
    first = lanes[0]
    dt = make_dtype(first.dtype.name) if isinstance(first, _C.Expr) else make_dtype("int32")
    return LaneVector(lanes, dt.with_lanes(len(lanes)))


def _bits(dt):
    return dt.bits * dt.lanes


def _const_extent(e):
    """The constant value of a slice extent such as `(i * 2 + 2) - i * 2`, else None."""
    c = const_int(e)
    if c is None and isinstance(e, _C.Expr):
        c = const_int(_C.simplify_expr(e))
    return c


def _scalar_dtype(value):
    if isinstance(value, _C.Expr):
        return make_dtype(value.dtype.name)
    return None


def _to_words(what, value, words):
    """The 32-bit words of `value` (a LaneVector or a scalar expression), low word first."""
    if isinstance(value, LaneVector):
        dt, lanes = value.element, value.lanes
    else:
        value = to_value(value)
        dt = _scalar_dtype(value)
        if dt is None:
            raise frontend_error(
                f"{what}: the value must be an expression or a vector from a wide load, got {value!r}"
            )
        lanes = [value]
    total = dt.bits * len(lanes)
    if total != 32 * words:
        raise frontend_error(
            f"{what}: the value must have {32 * words} bits, got {len(lanes)} lane(s) of {dt} ({total} bits)"
        )
    return _repack(lanes, dt, 32)


def _repack(lanes, dt, bits):
    """The same bits as lanes of unsigned `bits`-bit integers (little-endian lane order)."""
    u_in = make_dtype(f"uint{dt.bits}")
    raw = [x if dt == u_in else _C.reinterpret(x, u_in) for x in lanes]
    if dt.bits == bits:
        return raw
    u_out = make_dtype(f"uint{bits}")
    if dt.bits < bits:  # pack several narrow lanes into one
        per = bits // dt.bits
        out = []
        for i in range(0, len(raw), per):
            word = None
            for j, x in enumerate(raw[i : i + per]):
                part = _C.cast(x, u_out)
                if j:
                    part = part << (j * dt.bits)
                word = part if word is None else word | part
            out.append(word)
        return out
    per = dt.bits // bits  # split each wide lane
    mask = (1 << bits) - 1
    return [_C.cast((x >> (j * bits)) & mask, u_out) for x in raw for j in range(per)]


def reinterpret_lanes(vec, dtype):
    """T.reinterpret of a LaneVector: the same bits as `dtype` (a scalar of the same total
    width, or a vector type)."""
    dt = make_dtype(dtype)
    src = vec.element
    total = src.bits * len(vec.lanes)
    if _bits(dt) != total:
        raise frontend_error(
            f"T.reinterpret needs types of equal size, got {vec.dtype} ({total} bits) to {dt} ({_bits(dt)} bits)"
        )
    elem = dt.with_lanes(1)
    raw = _repack(vec.lanes, src, elem.bits)
    u = make_dtype(f"uint{elem.bits}")
    lanes = [x if elem == u else _C.reinterpret(x, elem) for x in raw]
    if dt.lanes == 1:
        return lanes[0]
    return LaneVector(lanes, dt)


def store_lanes(region, vec):
    """`buf[slice] = vector`: lane i goes to the slice's i-th element in row-major order."""
    count = 1
    for e in region.extents:
        c = _const_extent(e)
        if c is None:
            raise frontend_error(
                f"storing a {vec.dtype} value into {region!r} needs a slice of constant size"
            )
        count *= c
    if count != len(vec.lanes):
        raise frontend_error(
            f"storing a {vec.dtype} value ({len(vec.lanes)} lanes) into {region!r}: the slice has "
            f"{count} element(s); it needs one per lane"
        )
    buf = region.buffer
    if vec.element != buf.dtype:
        raise frontend_error(
            f"storing a {vec.dtype} value into {region!r} of {buf.dtype}: the lane type differs; "
            f"T.reinterpret or T.cast the value to {buf.dtype}x{len(vec.lanes)} first"
        )
    ctx = builder_ctx.current(f"storing into buffer '{buf.name}'")
    extents = [_const_extent(e) for e in region.extents]
    for i, lane in enumerate(vec.lanes):
        idx, rest = [], i
        for d in reversed(range(len(extents))):
            idx.append(region.mins[d] + rest % extents[d])
            rest //= extents[d]
        ctx.builder.store(buf.handle, list(reversed(idx)), lane)


# ---- building vectors, reading lanes


def _int_lanes(what, lanes):
    n = const_int(to_value(lanes))
    if n is None or n < 1:
        raise frontend_error(f"{what}: lanes must be a positive constant integer, got {lanes!r}")
    return n


def Ramp(base: ExprLike, stride: ExprLike, lanes: ExprLike) -> Expr:
    """The vector base, base + stride, ..., base + (lanes - 1) * stride (TVM's T.Ramp),
    mostly as a buffer index: `A[T.Ramp(i, 1, 4)]` reads four elements,
    `B[T.Ramp(i, 1, 4)] = v` writes them."""
    n = _int_lanes("T.Ramp", lanes)
    base, stride = to_value(base), to_value(stride)
    for name, x in (("base", base), ("stride", stride)):
        if not (isinstance(x, int) and not isinstance(x, bool)) and not (
            isinstance(x, _C.Expr) and x.dtype.name.startswith(("int", "uint"))
        ):
            raise frontend_error(
                f"T.Ramp: {name} must be an integer or an integer expression, got {x!r}"
            )
    lanes = [base + i * stride if i else base for i in range(n)]
    if all(isinstance(x, int) for x in lanes):
        return LaneVector(lanes, f"int32x{n}")
    return _vector_of(
        [x if isinstance(x, _C.Expr) else _C.cast(x, make_dtype("int32")) for x in lanes]
    )


def Broadcast(value: ExprLike, lanes: ExprLike) -> Expr:
    """The vector of `lanes` copies of `value` (TVM's T.Broadcast)."""
    n = _int_lanes("T.Broadcast", lanes)
    value = to_value(value)
    if isinstance(value, LaneVector):
        raise frontend_error(f"T.Broadcast takes a scalar, got the vector {value!r}")
    if not isinstance(value, _C.Expr):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise frontend_error(f"T.Broadcast takes a number or an expression, got {value!r}")
        value = _C.cast(value, make_dtype("float32" if isinstance(value, float) else "int32"))
    return LaneVector([value] * n, make_dtype(value.dtype.name).with_lanes(n))


def _vector_lanes(value):
    """The lane count of a vector value (a LaneVector, a vector variable, or an expression
    of a vector dtype such as tvm.tirx.Var("v", "float16x2")), else None."""
    if isinstance(value, VectorVar):
        return value.vector_dtype.lanes
    if isinstance(value, LaneVector):
        return len(value.lanes)
    if isinstance(value, _C.Expr) and value.dtype.lanes > 1:
        return value.dtype.lanes
    return None


class Shuffle(ExprStandIn):
    """`T.Shuffle(vectors, indices)` (TVM's tirx.Shuffle): the lanes `indices` (constant
    integers) of the vectors laid end to end; one index gives a scalar. Over values a
    kernel computes (a vector variable, a wide load, T.Ramp ...) it is the picked lane
    expressions themselves. Over an expression of TVM's IR of a vector dtype
    (tvm.tirx.Var("v", "float16x2")) it is a Shuffle node with TVM's `vectors`, `indices`
    and `dtype` (`T.extract_lane(v, i)` builds `T.Shuffle([v], [i])` so), which has no
    value in a kernel."""

    __slots__ = ("dtype", "indices", "vectors")

    def __new__(cls, vectors, indices):
        node = super().__new__(cls)
        node._build(vectors, indices)
        if all(isinstance(v, (VectorVar, LaneVector)) for v in node.vectors):
            return node.value()
        return node

    def _build(self, vectors, indices):
        what = "T.Shuffle"
        vectors = list(vectors) if isinstance(vectors, (list, tuple)) else [vectors]
        counts = [_vector_lanes(v) for v in vectors]
        if not vectors or None in counts:
            raise frontend_error(
                f"{what} takes a list of vector values (a vector variable, a wide load, T.Ramp, "
                f"a tvm.tirx.Var of a vector dtype ...), got {vectors!r}",
                also=TypeError,
            )
        elements = {str(_element_dtype(v)) for v in vectors}
        if len(elements) > 1:
            raise frontend_error(f"{what}: the vectors' element types differ ({sorted(elements)})")
        indices = list(indices) if isinstance(indices, (list, tuple)) else [indices]
        total = sum(counts)
        picked = [_lane_index(what, index, total, f"{total} lanes") for index in indices]
        if not picked:
            raise frontend_error(f"{what} needs at least one lane index")
        self.vectors = vectors
        self.indices = [_C.const(i, make_dtype("int32")) for i in picked]
        self.dtype = _element_dtype(vectors[0]).with_lanes(len(picked))

    def value(self) -> Expr | LaneVector:
        """The picked lanes: one scalar expression, or a LaneVector of several."""
        lanes = []
        for v in self.vectors:
            if isinstance(v, VectorVar):
                v = v.value()
            if not isinstance(v, LaneVector):
                raise frontend_error(
                    f"T.Shuffle of {v!r}: a variable of TVM's IR has no value in a tilelang "
                    "kernel; hold the vector in T.alloc_var(dtype) or read it from a buffer"
                )
            lanes += v.lanes
        picked = [lanes[int(i)] for i in self.indices]
        return picked[0] if len(picked) == 1 else LaneVector(picked, self.dtype)

    def __tl_expr__(self):
        return self.value()

    def __repr__(self):
        return f"T.Shuffle({self.vectors!r}, {[int(i) for i in self.indices]})"


def _lane_index(what, index, n, of):
    """The constant lane `index` of a value of `n` lanes (`of` names it in the error)."""
    i = const_int(to_value(index))
    if i is None or isinstance(index, bool):
        raise frontend_error(
            f"{what} needs a compile-time integer lane, got {index!r}", also=TypeError
        )
    if not 0 <= i < n:
        raise frontend_error(f"{what}: lane {i} is out of bounds for {of}", also=IndexError)
    return i


def _element_dtype(vector):
    if isinstance(vector, VectorVar):
        return vector.vector_dtype.with_lanes(1)
    if isinstance(vector, LaneVector):
        return vector.element
    return make_dtype(vector.dtype.name).with_lanes(1)


def extract_lane(vector: BufferLike, lane: ExprLike) -> Expr:
    """Lane `lane` (a constant) of a vector value. In a kernel (a vector variable, a wide
    load, T.Ramp ...) it is that lane's expression; of an expression of TVM's IR of a
    vector dtype (tvm.tirx.Var("v", "float16x2")) it is `T.Shuffle([vector], [lane])`, as
    in TileLang."""
    what = "T.extract_lane"
    if not isinstance(vector, (VectorVar, LaneVector, _C.Expr)):
        raise frontend_error(
            f"{what} expects a PrimExpr of a vector dtype, got {type(vector).__name__} {vector!r}",
            also=TypeError,
        )
    n = _vector_lanes(vector)
    if n is None:
        raise frontend_error(
            f"{what} expects a vector expression (a wide load, T.Ramp, T.Broadcast, a vector "
            f"variable ...), got the scalar {vector!r} of {vector.dtype}",
            also=ValueError,
        )
    i = _lane_index(what, lane, n, f"{_element_dtype(vector)}x{n} ({n} lanes)")
    if isinstance(vector, VectorVar):
        vector = vector.value()
    if isinstance(vector, LaneVector):
        return vector.lanes[i]
    return Shuffle([vector], [i])


# ---- packed x2 arithmetic (TileLang's tl::add2 ...), lane by lane

_PACKED_X2 = ("float32x2", "float16x2", "bfloat16x2")


def _packed(what, *args):
    args = [a.value() if isinstance(a, VectorVar) else a for a in args]
    dtypes = [
        str(a.dtype)
        if isinstance(a, LaneVector)
        else getattr(getattr(a, "dtype", None), "name", None)
        for a in args
    ]
    if None not in dtypes and len(set(dtypes)) > 1:
        raise frontend_error(f"{what} needs all operands of the same dtype, got {dtypes}")
    for a in args:
        if not isinstance(a, LaneVector) or str(a.dtype) not in _PACKED_X2:
            raise frontend_error(
                f"{what} takes values of {', '.join(_PACKED_X2)} (e.g. A[T.Ramp(i, 1, 2)]), got {a!r}"
            )
    return [a.lanes for a in args]


def add2(x: ExprLike, y: ExprLike) -> Expr:
    """Packed add of two float32x2 / float16x2 / bfloat16x2 values."""
    a, b = _packed("T.add2", x, y)
    return LaneVector([_C.binary("Add", p, q) for p, q in zip(a, b)], x.dtype)


def sub2(x: ExprLike, y: ExprLike) -> Expr:
    a, b = _packed("T.sub2", x, y)
    return LaneVector([_C.binary("Sub", p, q) for p, q in zip(a, b)], x.dtype)


def mul2(x: ExprLike, y: ExprLike) -> Expr:
    a, b = _packed("T.mul2", x, y)
    return LaneVector([_C.binary("Mul", p, q) for p, q in zip(a, b)], x.dtype)


def max2(x: ExprLike, y: ExprLike) -> Expr:
    a, b = _packed("T.max2", x, y)
    return LaneVector([_C.binary("Max", p, q) for p, q in zip(a, b)], x.dtype)


def min2(x: ExprLike, y: ExprLike) -> Expr:
    a, b = _packed("T.min2", x, y)
    return LaneVector([_C.binary("Min", p, q) for p, q in zip(a, b)], x.dtype)


def fma2(x: ExprLike, y: ExprLike, z: ExprLike) -> Expr:
    """Packed x * y + z with one rounding per lane."""
    a, b, c = _packed("T.fma2", x, y, z)
    return LaneVector([_C.call("fma", [p, q, r]) for p, q, r in zip(a, b, c)], x.dtype)


def abs2(x: ExprLike) -> Expr:
    (a,) = _packed("T.abs2", x)
    return LaneVector([_C.call("abs", [p]) for p in a], x.dtype)


# ---- buffers indexed by a vector (T.Ramp)


def _vector_indices(buf, key):
    """Per-lane index lists when `key` holds a vector (of one lane count), else None:
    (as written, as accessed). Lanes count from the end of their dimension when negative,
    as a negative Python index does: a constant lane at once, any other at run time
    (`A[T.Ramp(t - 2, 1, 4)]` reads A[n - 2] and A[n - 1] at t = 0), as TileLang does; the
    compiler drops the select where the loop ranges decide its sign."""
    key = key if isinstance(key, tuple) else (key,)
    vectors = [k for k in key if isinstance(k, LaneVector)]
    if not vectors:
        return None
    n = len(vectors[0].lanes)
    if any(len(v.lanes) != n for v in vectors):
        raise frontend_error(
            f"buffer '{buf.name}' is indexed with vectors of different lane counts "
            f"{[len(v.lanes) for v in vectors]}"
        )
    if len(key) != buf.ndim or any(isinstance(k, slice) for k in key):
        raise frontend_error(
            f"buffer '{buf.name}' indexed with a vector needs one index per dimension "
            f"({buf.ndim}) and no slices"
        )
    written = [
        [
            to_value(buf._normalize_index(k.lanes[i] if isinstance(k, LaneVector) else k, d))
            for d, k in enumerate(key)
        ]
        for i in range(n)
    ]
    accessed = [
        [
            _wrapped(idx, buf.shape[d]) if isinstance(k, LaneVector) else idx
            for d, (k, idx) in enumerate(zip(key, lane))
        ]
        for lane in written
    ]
    return written, accessed


def _wrapped(index, extent):
    if const_int(index) is not None:
        return index
    return _C.select(index < 0, index + to_value(extent), index)


def load_indexed(buf, key):
    """`A[T.Ramp(i, 1, 4)]`: the vector of the elements; None when no index is a vector."""
    indices = _vector_indices(buf, key)
    if indices is None:
        return None
    ctx = builder_ctx.current(f"indexing buffer '{buf.name}'")
    lanes = []
    for written, accessed in zip(*indices):
        load = _C.buffer_load(buf.handle, accessed)
        # Each lane is an element, named by its indices as written: T.atomic_addx2 and
        # the like recognise a run of consecutive lanes.
        ctx.remember_load(load, buf, written)
        lanes.append(load)
    return LaneVector(lanes, buf.dtype.with_lanes(len(lanes)))


def _region_count(region):
    """The constant element count of `region`, else None."""
    count = 1
    for e in region.extents:
        c = _const_extent(e)
        if c is None:
            return None
        count *= c
    return count


def _region_elements(region):
    """The indices of each element of `region` (constant extents), row-major."""
    extents = [_const_extent(e) for e in region.extents]
    count = 1
    for c in extents:
        count *= c
    for i in range(count):
        idx, rest = [], i
        for d in reversed(range(len(extents))):
            idx.append(region.mins[d] + rest % extents[d])
            rest //= extents[d]
        yield tuple(reversed(idx))


def store_region(buf, key, src):
    """`A[0, 4:8] = A[0, 0:4]`: the i-th element of the source slice (row-major) to the
    i-th element of the target, every source element read before any is stored (TileLang
    stores the source's vector load)."""
    indices, dst = buf._split_key(key)
    if dst is None:
        dst = Region(buf, indices, [1] * len(indices))
    n_src, n_dst = _region_count(src), _region_count(dst)
    if n_src is None or n_dst is None:
        raise frontend_error(
            f"storing the slice {src!r} of '{src.buffer.name}' into the slice {dst!r} of "
            f"'{buf.name}' needs slices of constant size; copy tiles with T.copy(src, dst)"
        )
    if n_src != n_dst:
        raise frontend_error(
            f"storing the slice {src!r} of '{src.buffer.name}' ({n_src} element(s)) into the "
            f"slice {dst!r} of '{buf.name}' ({n_dst} element(s)): the element counts differ"
        )
    ctx = builder_ctx.current(f"storing into buffer '{buf.name}'")
    values = [ctx.builder.let("elem", src.buffer[idx]) for idx in _region_elements(src)]
    for idx, value in zip(_region_elements(dst), values):
        ctx.builder.store(buf.handle, list(idx), value)


def store_indexed(buf, key, value):
    """`A[T.Ramp(i, 1, 4)] = v`: lane i of v (or the scalar v) to element i; False when no
    index is a vector."""
    indices = _vector_indices(buf, key)
    if indices is None:
        return False
    per_lane = indices[1]
    ctx = builder_ctx.current(f"storing into buffer '{buf.name}'")
    if isinstance(value, LaneVector):
        if len(value.lanes) != len(per_lane):
            raise frontend_error(
                f"storing a {value.dtype} value into {len(per_lane)} elements of buffer '{buf.name}': "
                "the lane counts differ"
            )
        lanes = value.lanes
        # A vector is read whole before it is stored (TileLang loads it as one vector):
        # where a lane reads an element of this buffer another lane writes, the lanes
        # are computed first.
        if any(
            isinstance(lane, _C.Expr)
            and lane.reads_other_element(
                buf.handle, [i if isinstance(i, _C.Expr) else _C.const(i, "int32") for i in idx]
            )
            for idx, lane in zip(per_lane, lanes)
        ):
            lanes = [ctx.builder.let("lane", lane) for lane in lanes]
    else:
        lanes = [to_value(value)] * len(per_lane)
    for idx, lane in zip(per_lane, lanes):
        ctx.builder.store(buf.handle, idx, lane)
    return True


# ---- wide accesses


def _first_element(what, src, scopes, words):
    """The buffer and first element's indices of `src` (an element, a slice or a buffer),
    checked: a buffer of the right memory, and a slice of exactly the access's bytes."""
    if isinstance(src, Region):
        buf, mins, extents = src.buffer, src.mins, src.extents
    elif isinstance(src, Buffer):
        buf, mins, extents = src, [0] * src.ndim, list(src.shape)
    else:
        value = to_value(src)
        ctx = builder_ctx.current(what)
        found = ctx.element_of(value) if isinstance(value, _C.Expr) else None
        if found is None:
            raise frontend_error(
                f"{what} takes a buffer element such as x[i], a slice such as x[i:i + n] or a "
                f"buffer, got {value!r}"
            )
        buf, mins = found
        extents = None
    if buf.scope not in scopes:
        memory = "global" if scopes == _GLOBAL else "shared"
        raise frontend_error(
            f"{what} accesses {memory} memory, but buffer '{buf.name}' is in '{buf.scope}' memory"
        )
    if extents is not None:
        sizes = [_const_extent(e) for e in extents]
        if all(s is not None for s in sizes):
            count = 1
            for s in sizes:
                count *= s
            if count * buf.dtype.bits != 32 * words:
                raise frontend_error(
                    f"{what} moves {4 * words} bytes, but the slice of '{buf.name}' holds {count} "
                    f"{buf.dtype} element(s) ({count * buf.dtype.bits // 8} bytes)"
                )
    return buf, list(mins)


def _address(buf, mins, mask):
    load = _C.buffer_load(buf.handle, [to_value(m) for m in mins])
    return _C.call("address_of", [load, mask])


def _predicate(what, pred):
    pred = to_value(pred)
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, _C.Expr) and (
        pred.dtype.name == "bool" or pred.dtype.name.startswith(("int", "uint"))
    ):
        return pred if pred.dtype.name == "bool" else pred != 0
    raise frontend_error(f"{what}: pred must be a condition, got {pred!r}")


def _load(what, kind, bits, scopes, src, pred):
    words = bits // 32
    buf, mins = _first_element(what, src, scopes, words)
    ctx = builder_ctx.current(what)
    args = [_address(buf, mins, 1)]
    name = f"tl::load_{kind}_{bits}"
    if pred is not None:
        args.append(_predicate(what, pred))
        name += "_conditional"
    if words == 1:
        return _C.call_extern(make_dtype("uint32"), name, args)
    words_buf = ctx.builder.alloc(ctx.take_name("wide"), [words], make_dtype("uint32"), "local")
    out = _C.call("address_of", [_C.buffer_load(words_buf, [0])])
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), name, [out, *args]))
    return LaneVector([_C.buffer_load(words_buf, [i]) for i in range(words)], f"uint32x{words}")


def _store(what, kind, bits, scopes, dst, value, pred):
    words = bits // 32
    buf, mins = _first_element(what, dst, scopes, words)
    ctx = builder_ctx.current(what)
    args = [_address(buf, mins, 2), *_to_words(what, value, words)]
    name = f"tl::store_{kind}_{bits}"
    if pred is not None:
        args.append(_predicate(what, pred))
        name += "_conditional"
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), name, args))


def ldg32(src: BufferLike, pred: ExprLike | None = None) -> Expr:
    """4 bytes of global memory as a uint32 (zero where `pred` is false)."""
    return _load("T.ldg32", "global", 32, _GLOBAL, src, pred)


def ldg64(src: BufferLike, pred: ExprLike | None = None) -> Expr:
    """8 bytes of global memory as a uint32x2 value."""
    return _load("T.ldg64", "global", 64, _GLOBAL, src, pred)


def ldg128(src: BufferLike, pred: ExprLike | None = None) -> Expr:
    """16 bytes of global memory as a uint32x4 value."""
    return _load("T.ldg128", "global", 128, _GLOBAL, src, pred)


def ldg256(src: BufferLike, pred: ExprLike | None = None) -> Expr:
    """32 bytes of global memory as a uint32x8 value."""
    return _load("T.ldg256", "global", 256, _GLOBAL, src, pred)


def stg32(dst: BufferLike, value: ExprLike, pred: ExprLike | None = None) -> None:
    """Stores a 32-bit value to global memory (nothing where `pred` is false)."""
    _store("T.stg32", "global", 32, _GLOBAL, dst, value, pred)


def stg64(dst: BufferLike, value: ExprLike, pred: ExprLike | None = None) -> None:
    _store("T.stg64", "global", 64, _GLOBAL, dst, value, pred)


def stg128(dst: BufferLike, value: ExprLike, pred: ExprLike | None = None) -> None:
    _store("T.stg128", "global", 128, _GLOBAL, dst, value, pred)


def stg256(dst: BufferLike, value: ExprLike, pred: ExprLike | None = None) -> None:
    _store("T.stg256", "global", 256, _GLOBAL, dst, value, pred)


def lds32(src: BufferLike) -> Expr:
    """4 bytes of shared memory as a uint32."""
    return _load("T.lds32", "shared", 32, _SHARED, src, None)


def lds64(src: BufferLike) -> Expr:
    return _load("T.lds64", "shared", 64, _SHARED, src, None)


def lds128(src: BufferLike) -> Expr:
    return _load("T.lds128", "shared", 128, _SHARED, src, None)


def sts32(dst: BufferLike, value: ExprLike) -> None:
    """Stores a 32-bit value to shared memory."""
    _store("T.sts32", "shared", 32, _SHARED, dst, value, None)


def sts64(dst: BufferLike, value: ExprLike) -> None:
    _store("T.sts64", "shared", 64, _SHARED, dst, value, None)


def sts128(dst: BufferLike, value: ExprLike) -> None:
    _store("T.sts128", "shared", 128, _SHARED, dst, value, None)


def __ldg(load_or_buf: BufferLike, index: ExprLike | None = None) -> Expr:
    """`T.__ldg(x[i])` (or `T.__ldg(x, i)` for a 1-D buffer): the element, loaded through
    CUDA's read-only data cache (`__ldg(&x[i])`); a plain load elsewhere."""
    what = "T.__ldg"
    if isinstance(load_or_buf, Buffer):
        if index is None:
            raise frontend_error(
                f"{what}(buffer, index) needs an index when given buffer '{load_or_buf.name}'"
            )
        idx = list(index) if isinstance(index, (list, tuple)) else [index]
        load = load_or_buf[tuple(idx)]
    else:
        load = to_value(load_or_buf)
    ctx = builder_ctx.current(what)
    found = ctx.element_of(load) if isinstance(load, _C.Expr) else None
    if found is None:
        raise frontend_error(f"{what} takes a buffer element such as x[i], got {load!r}")
    buf = found[0]
    if buf.scope not in _GLOBAL:
        raise frontend_error(
            f"{what} loads through the read-only cache of global memory, but buffer '{buf.name}' is in "
            f"'{buf.scope}' memory; read the element directly"
        )
    return _C.call_extern(load.dtype, "__ldg", [load])


__all__ = [
    "Broadcast",
    "Ramp",
    "Shuffle",
    "__ldg",
    "abs2",
    "add2",
    "extract_lane",
    "fma2",
    "ldg32",
    "ldg64",
    "ldg128",
    "ldg256",
    "lds32",
    "lds64",
    "lds128",
    "max2",
    "min2",
    "mul2",
    "stg32",
    "stg64",
    "stg128",
    "stg256",
    "sts32",
    "sts64",
    "sts128",
    "sub2",
]
