"""`with T.Kernel(*grid, threads=...) as (bx, by)`: the launch region of a kernel, and
the helpers that read its block and thread indices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tilelang.types import Expr, ExprLike, ShapeLike

from . import builder_ctx
from .buffer import const_int, to_value
from .builder_ctx import KERNEL, frontend_error

_C = builder_ctx._C


def _thread_list(threads):
    if isinstance(threads, int):
        return [threads]
    if isinstance(threads, (list, tuple)):
        return [int(t) for t in threads]
    raise frontend_error(f"T.Kernel threads must be an int, list or tuple, got {threads!r}")


def _normalize_threads(threads):
    """T.Kernel's `threads` as the three extents [x, y, z] (missing ones 1; None: the
    default 128 threads), each a positive int."""
    if threads is None:
        return [128, 1, 1]
    if isinstance(threads, bool) or not isinstance(threads, (int, list, tuple)):
        raise frontend_error(f"T.Kernel threads must be an int, list or tuple, got {threads!r}")
    extents = [threads] if isinstance(threads, int) else list(threads)
    if not 1 <= len(extents) <= 3:
        raise frontend_error(f"T.Kernel threads has 1 to 3 extents (x, y, z), got {threads!r}")
    for t in extents:
        value = const_int(to_value(t))
        if value is None:
            raise frontend_error(f"T.Kernel threads must be constant ints, got {threads!r}")
        if value <= 0:
            raise frontend_error(f"T.Kernel threads must be positive, got {threads!r}")
    return [const_int(to_value(t)) for t in extents] + [1] * (3 - len(extents))


def _cluster_list(cluster_dims):
    """T.Kernel's cluster_dims as a list of ints (the builder checks their values)."""
    if cluster_dims is None:
        return []
    sizes = [cluster_dims] if isinstance(cluster_dims, int) else cluster_dims
    if isinstance(sizes, (list, tuple)) and all(
        isinstance(c, int) and not isinstance(c, bool) for c in sizes
    ):
        return list(sizes)
    raise frontend_error(
        f"T.Kernel cluster_dims must be an int or a tuple of up to 3 ints, got {cluster_dims!r}"
    )


class Kernel:
    """A frame: entering it opens the launch region and yields the block indices.

    `cluster_dims` (an int, or up to 3 ints for x, y, z) groups the blocks into thread
    block clusters (CUDA sm_90 and later): the blocks of a cluster run at the same
    time, can synchronize (T.cluster_sync) and receive TMA multicasts."""

    def __init__(
        self,
        *grid: ExprLike,
        threads: ExprLike | Sequence[ExprLike] = 128,
        prelude: str = "",
        is_cpu: bool = False,
        cluster_dims: ShapeLike | None = None,
    ) -> None:
        if len(grid) == 1 and isinstance(grid[0], (list, tuple)):
            grid = tuple(grid[0])
        if not grid:  # `T.Kernel(threads=128)`: one block, as TileLang launches it
            grid = (1,)
        self.grid = [to_value(g) for g in grid]
        _normalize_threads(threads)  # refuses non-positive extents at the user's line
        self.threads = _thread_list(threads)
        self.prelude = prelude or ""
        self.cluster = _cluster_list(cluster_dims)

    def __enter__(self):
        ctx = builder_ctx.current("T.Kernel")
        if ctx.mode == "discover":
            raise DiscoveryDone()
        state = getattr(ctx, "binding_kernel", None)
        if state is not None and isinstance(state["owner"], _FunctionKernel):
            raise frontend_error(
                f"T.Kernel after {state['owner'].what} at the top of the function body: "
                "that TVM-style allocation opened the body's kernel (launched by "
                "T.thread_binding loops); allocate inside `with T.Kernel(...)` instead "
                "(T.alloc_shared / T.alloc_fragment / T.alloc_local)"
            )
        kernel_vars = ctx.builder.begin_kernel(self.grid, self.threads, self.prelude, self.cluster)
        ctx.kernel_vars = kernel_vars
        ctx.kernel_extents = (self.grid, self.threads)
        ctx.kernel_cluster = list(self.cluster or [])
        ctx.frames.append(KERNEL)
        for cond in ctx.function_assumes:  # T.assume written before this block
            ctx.builder.evaluate(_C.call("assume", [cond]))
        blocks = kernel_vars.blocks
        return blocks[0] if len(blocks) == 1 else tuple(blocks)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        ctx = builder_ctx.current("T.Kernel")
        from .reduce import check_reducers_closed

        check_reducers_closed(ctx)
        ctx.builder.end_kernel()
        ctx.frames.pop()
        ctx.kernel_vars = None
        return False


def ClusterKernel(
    *grid: ExprLike,
    threads: ExprLike | Sequence[ExprLike] = 128,
    prelude: str = "",
    is_cpu: bool = False,
    cluster_dims: ShapeLike | None = None,
) -> Kernel:
    """T.Kernel for a clustered launch: the same frame, with `cluster_dims` required."""
    if cluster_dims is None:
        raise frontend_error(
            "T.ClusterKernel needs cluster_dims (an int or a tuple of up to 3 ints)"
        )
    return Kernel(*grid, threads=threads, prelude=prelude, is_cpu=is_cpu, cluster_dims=cluster_dims)


class DiscoveryDone(Exception):
    """Stops an eager trace that only collects parameter declarations."""


def _kernel_vars(what):
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None:
        raise frontend_error(f"{what} must be called inside a `with T.Kernel(...)` block")
    return ctx


def _pick(values, dim, what, unlaunched=None):
    """values[dim]; a dim of the three CUDA has that the kernel did not launch gives
    `unlaunched` (index 0, extent 1), as TileLang does, when one is given."""
    if unlaunched is not None and len(values) <= dim < 3:
        return unlaunched
    if not 0 <= dim < len(values):
        raise frontend_error(f"{what}: dim must be in [0, {len(values)}), got {dim}")
    return values[dim]


def get_thread_binding(dim: ExprLike = 0) -> Expr:
    ctx = _kernel_vars("T.get_thread_binding")
    return _pick(ctx.kernel_vars.threads, dim, "T.get_thread_binding", 0)


_THREAD_AXES = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}


def thread_binding(
    start: ExprLike, stop: ExprLike | None = None, thread: str = "threadIdx.x"
) -> Expr:
    """TVM's `T.thread_binding(0, n, thread="threadIdx.y")` used as a value: the kernel's
    thread index along that axis, whose launched extent must be n."""
    what = "T.thread_binding"
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None or getattr(ctx, "binding_kernel", None) is not None:
        # Outside T.Kernel, TVM's form: a loop over the axis that launches it.
        return ThreadBindingLoop(start, stop, thread)
    ctx = _kernel_vars(what)
    if stop is None:
        start, stop = 0, start
    if thread not in _THREAD_AXES:
        raise frontend_error(
            f"{what}: thread must be one of {', '.join(_THREAD_AXES)}, got {thread!r}"
        )
    dim = _THREAD_AXES[thread]
    extents = list(ctx.kernel_extents[1])
    extent = extents[dim] if dim < len(extents) else 1
    lo, hi = const_int(to_value(start)), const_int(to_value(stop))
    if lo != 0 or hi != const_int(extent):
        raise frontend_error(
            f"{what}({start}, {stop}, thread={thread!r}): the range must be [0, {extent}), the "
            f"threads T.Kernel launched along {thread}"
        )
    return _pick(ctx.kernel_vars.threads, dim, what, 0)


_BLOCK_AXES = {"blockIdx.x": 0, "blockIdx.y": 1, "blockIdx.z": 2}


class ThreadBindingLoop:
    """TVM's kernel written without T.Kernel: `for bx in T.thread_binding(n,
    thread="blockIdx.x"):` around `for tx in T.thread_binding(m, thread="threadIdx.x"):`.
    The outermost such loop opens a kernel; each one sets its axis' extent (blocks
    along blockIdx.*, threads along threadIdx.*) and is that axis' index. An axis
    neither loop names is launched with extent 1."""

    kind = "thread_binding"

    def __init__(self, start, stop, thread):
        what = "T.thread_binding"
        axes = {**_THREAD_AXES, **_BLOCK_AXES}
        if thread not in axes:
            raise frontend_error(f"{what}: thread must be one of {', '.join(axes)}, got {thread!r}")
        if stop is None:
            start, stop = 0, start
        if const_int(to_value(start)) != 0:
            raise frontend_error(
                f"{what}({start}, {stop}, thread={thread!r}): a launch axis counts from 0, got start {start}"
            )
        self.thread = thread
        self.is_block = thread in _BLOCK_AXES
        self.dim = axes[thread]
        self.extent = to_value(stop)
        if not self.is_block:
            count = const_int(self.extent)
            if count is None or count < 1:
                raise frontend_error(
                    f"{what}({start}, {stop}, thread={thread!r}): a thread extent must be a positive "
                    f"constant, got {stop}"
                )
            self.extent = count

    def open(self, ctx):
        """Sets this axis of the kernel the outermost binding loop opened (opening it
        first); returns the axis' index variable."""
        state = getattr(ctx, "binding_kernel", None)
        if state is None:
            if ctx.kernel_vars is not None:
                raise frontend_error(
                    f"T.thread_binding(..., thread={self.thread!r}) as a loop inside `with T.Kernel(...)`: "
                    "the kernel's axes are set by T.Kernel; use T.get_thread_binding() / the block "
                    "indices it gives"
                )
            state = _open_binding_kernel(ctx, self)
        if self.thread in state["axes"]:
            raise frontend_error(f"T.thread_binding: {self.thread} is bound twice in one kernel")
        state["axes"].add(self.thread)
        sizes = state["grid" if self.is_block else "threads"]
        while len(sizes) <= self.dim:
            sizes.append(1)
        sizes[self.dim] = self.extent
        ctx.kernel_vars = ctx.builder.resize_kernel(state["grid"], state["threads"])
        ctx.kernel_extents = (list(state["grid"]), list(state["threads"]))
        values = ctx.kernel_vars.blocks if self.is_block else ctx.kernel_vars.threads
        return values[self.dim]

    def close(self, ctx):
        state = ctx.binding_kernel
        if state["owner"] is not self:
            return
        from .reduce import check_reducers_closed

        check_reducers_closed(ctx)
        ctx.builder.end_kernel()
        ctx.frames.pop()
        ctx.kernel_vars = None
        ctx.binding_kernel = None


def _open_binding_kernel(ctx, owner):
    """Opens the kernel of TVM's form without T.Kernel, one block of one thread until
    its T.thread_binding loops set the axes; `owner` closes it."""
    state = {"grid": [1], "threads": [1], "axes": set(), "owner": owner}
    ctx.kernel_vars = ctx.builder.begin_kernel([1], [1], "", [])
    ctx.kernel_extents = ([1], [1])
    ctx.frames.append(KERNEL)
    for cond in ctx.function_assumes:
        ctx.builder.evaluate(_C.call("assume", [cond]))
    ctx.binding_kernel = state
    return state


class _FunctionKernel:
    """The owner of a kernel that a TVM-style allocation at the top of the function body
    opened (`S = T.alloc_buffer(..., scope="shared")` before the T.thread_binding
    loops): it spans the rest of the body."""

    def __init__(self, what):
        self.what = what

    def close(self, ctx):
        ThreadBindingLoop.close(self, ctx)


def open_function_kernel(ctx, what):
    """Opens the kernel of the rest of the function body for TVM's allocation at its
    top (TVM's root block); T.thread_binding loops after it set its axes."""
    if getattr(ctx, "binding_kernel", None) is None:
        _open_binding_kernel(ctx, _FunctionKernel(what))


def close_function_kernel(ctx):
    """At the end of the body: closes the kernel open_function_kernel opened."""
    state = getattr(ctx, "binding_kernel", None)
    if state is not None and isinstance(state["owner"], _FunctionKernel):
        state["owner"].close(ctx)


def launch_thread(thread: str, extent: ExprLike) -> Expr:
    """TVM's `T.launch_thread("threadIdx.x", n)` inside a T.Kernel: the kernel's thread
    (or, for "blockIdx.*", block) index along that axis, whose launched extent must be n."""
    what = "T.launch_thread"
    ctx = _kernel_vars(what)
    axes = {**_THREAD_AXES, **_BLOCK_AXES}
    if thread not in axes:
        raise frontend_error(f"{what}: thread must be one of {', '.join(axes)}, got {thread!r}")
    is_block = thread in _BLOCK_AXES
    dim = axes[thread]
    extents = list(ctx.kernel_extents[0 if is_block else 1])
    launched = extents[dim] if dim < len(extents) else 1
    wanted, known = to_value(extent), to_value(launched)
    if const_int(wanted) is not None and const_int(known) is not None:
        same = const_int(wanted) == const_int(known)
    else:
        same = isinstance(wanted, _C.Expr) and isinstance(known, _C.Expr) and wanted.same_as(known)
    if not same:
        raise frontend_error(
            f"{what}({thread!r}, {extent}): T.Kernel launched {launched} along {thread}; a "
            "kernel's blocks and threads are set by T.Kernel(..., threads=...)"
        )
    values = ctx.kernel_vars.blocks if is_block else ctx.kernel_vars.threads
    return _pick(values, dim, what, 0)


def import_source(source: Any = None) -> None:
    """TileLang's `T.import_source(code)`: C/C++/CUDA code the kernel's T.call_extern
    calls, placed at file scope before the kernel (as T.Kernel's prelude=); None or ""
    imports nothing. The same code is imported once however often it is named."""
    ctx = builder_ctx.current("T.import_source")
    if source is None or source == "":
        return
    if not isinstance(source, str):
        raise frontend_error(
            f"T.import_source takes source code as a string, got {type(source).__name__}"
        )
    if not ctx.builder.in_kernel:
        raise frontend_error("T.import_source must be called inside `with T.Kernel(...)`")
    ctx.builder.import_source(source)


def get_thread_bindings() -> list[Expr]:
    return list(_kernel_vars("T.get_thread_bindings").kernel_vars.threads)


def get_block_binding(dim: ExprLike = 0) -> Expr:
    ctx = _kernel_vars("T.get_block_binding")
    return _pick(ctx.kernel_vars.blocks, dim, "T.get_block_binding", 0)


def get_block_bindings() -> list[Expr]:
    return list(_kernel_vars("T.get_block_bindings").kernel_vars.blocks)


def get_thread_extent(dim: ExprLike = 0) -> Expr:
    ctx = _kernel_vars("T.get_thread_extent")
    return _pick(ctx.kernel_extents[1], dim, "T.get_thread_extent", 1)


def get_thread_extents() -> list[Expr]:
    return list(_kernel_vars("T.get_thread_extents").kernel_extents[1])


def get_block_extent(dim: ExprLike = 0) -> Expr:
    ctx = _kernel_vars("T.get_block_extent")
    return _pick(ctx.kernel_extents[0], dim, "T.get_block_extent", 1)


def get_block_extents() -> list[Expr]:
    return list(_kernel_vars("T.get_block_extents").kernel_extents[0])


# ---- T.CUDASourceCodeKernel: a kernel whose device code is CUDA source

SOURCE_KERNEL_CALL = "tl::source_kernel"
_SOURCE_MARKERS = ("\n", "__global__", 'extern "C"', "#include")
_SOURCE_SUFFIXES = (".cu", ".cuh", ".cuda", ".cpp", ".cc", ".c")


def _load_cuda_source(source_code_or_path):
    """The CUDA text of `source_code_or_path`: the file's contents when it names an
    existing file, else the text itself when it looks like source (a newline,
    `__global__`, `extern "C"` or `#include`); a path that names no file is an error."""
    import os

    try:
        text = os.fspath(source_code_or_path)
    except TypeError:
        text = None
    if not isinstance(text, str) or not text.strip():
        raise frontend_error(
            "T.CUDASourceCodeKernel source_code_or_path must be a non-empty CUDA source string "
            f"or the path of a CUDA source file, got {source_code_or_path!r}"
        )
    path = os.path.expanduser(text)
    if "\n" not in text and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    if any(m in text for m in _SOURCE_MARKERS):
        return text
    if os.path.sep in text or text.endswith(_SOURCE_SUFFIXES):
        raise frontend_error(
            f"T.CUDASourceCodeKernel source_code_or_path: the CUDA source file {text!r} does not exist"
        )
    return text


def _global_functions(source):
    """The names of the `__global__` functions `source` declares, in order: the name
    is the identifier before the first `(` after `__global__`, past its return type and
    launch attributes (`__launch_bounds__(...)`, `__cluster_dims__(...)`)."""
    import re

    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)
    names: list[str] = []
    for m in re.finditer(r"\b__global__\b", text):
        rest = text[m.end() :]
        while True:
            rest = re.sub(
                r"^\s*(__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\([^)]*\)", "", rest
            )
            word = re.match(r"\s*([A-Za-z_]\w*)\s*(\(?)", rest)
            if word is None:
                break
            if word.group(2):
                if word.group(1) not in names:
                    names.append(word.group(1))
                break
            rest = rest[word.end() :]
            if rest.lstrip().startswith(("*", "&")):
                rest = rest.lstrip()[1:]
    return names


def CUDASourceCodeKernel(
    *blocks: ExprLike,
    threads: ExprLike | Sequence[ExprLike] | None = None,
    source_code_or_path: Any = None,
    entry_name: str = "main_kernel",
    cluster_dims: ShapeLike | None = None,
    prelude: str | None = None,
) -> None:
    """`T.CUDASourceCodeKernel(*grid, threads=, source_code_or_path=, entry_name=)`: a
    kernel launch whose device code is the given CUDA source (inline, or a file), its
    `__global__` function `entry_name` launched on `grid` x `threads`. The function
    takes the kernel's parameters in order (tensors as pointers to their elements,
    scalars by value), then the dynamic dimensions (T.dynamic) in order of first use.
    The cuda target only (and its emulator)."""
    what = "T.CUDASourceCodeKernel"
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is not None:
        raise frontend_error(
            f"{what} is a kernel launch of its own: call it outside `with T.Kernel(...)`"
        )
    if source_code_or_path is None:
        raise frontend_error(
            f"{what} needs source_code_or_path= (CUDA source, or the path of a file)"
        )
    source = _load_cuda_source(source_code_or_path)
    if prelude is not None:
        if not isinstance(prelude, str):
            raise frontend_error(f"{what} prelude must be a string of CUDA code, got {prelude!r}")
        source = prelude + "\n" + source
    if not isinstance(entry_name, str) or not entry_name.strip():
        raise frontend_error(f"{what} entry_name must be a non-empty string, got {entry_name!r}")
    entries = _global_functions(source)
    if not entries:
        raise frontend_error(
            f"{what}: the CUDA source declares no __global__ function to launch; declare the "
            f'kernel as `extern "C" __global__ void {entry_name.strip()}(...)`'
        )
    if entry_name.strip() not in entries:
        raise frontend_error(
            f"{what} entry_name: expected the name of a __global__ function of the CUDA source, "
            f"got {entry_name.strip()!r}. Available entries: {', '.join(entries)}"
        )
    kernel = Kernel(
        *blocks, threads=threads if threads is not None else 128, cluster_dims=cluster_dims
    )
    kernel.__enter__()
    # The tensors travel to the source's function; naming each one here marks it used.
    args: list = [_C.string_imm(source), _C.string_imm(entry_name.strip())]
    for _, value in ctx.params:
        handle = getattr(value, "handle", None)
        if handle is not None and getattr(value, "scope", "global") == "global":
            load = _C.buffer_load(handle, [0] * len(value.shape))
            args.append(_C.call("address_of", [load]))
    ctx.builder.evaluate(_C.call_extern("int32", SOURCE_KERNEL_CALL, [to_value(a) for a in args]))
    kernel.__exit__(None, None, None)
