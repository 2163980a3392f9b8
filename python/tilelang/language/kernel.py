"""`with T.Kernel(*grid, threads=...) as (bx, by)`: the launch region of a kernel, and
the helpers that read its block and thread indices."""

from . import builder_ctx
from .buffer import to_value
from .builder_ctx import KERNEL, frontend_error


def _thread_list(threads):
    if isinstance(threads, int):
        return [threads]
    if isinstance(threads, (list, tuple)):
        return [int(t) for t in threads]
    raise frontend_error(f"T.Kernel threads must be an int, list or tuple, got {threads!r}")


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

    def __init__(self, *grid, threads=128, prelude="", is_cpu=False, cluster_dims=None):
        if len(grid) == 1 and isinstance(grid[0], (list, tuple)):
            grid = tuple(grid[0])
        self.grid = [to_value(g) for g in grid]
        self.threads = _thread_list(threads)
        self.prelude = prelude or ""
        self.cluster = _cluster_list(cluster_dims)

    def __enter__(self):
        ctx = builder_ctx.current("T.Kernel")
        if ctx.mode == "discover":
            raise DiscoveryDone()
        kernel_vars = ctx.builder.begin_kernel(self.grid, self.threads, self.prelude, self.cluster)
        ctx.kernel_vars = kernel_vars
        ctx.kernel_extents = (self.grid, self.threads)
        ctx.frames.append(KERNEL)
        blocks = kernel_vars.blocks
        return blocks[0] if len(blocks) == 1 else tuple(blocks)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        ctx = builder_ctx.current("T.Kernel")
        ctx.builder.end_kernel()
        ctx.frames.pop()
        ctx.kernel_vars = None
        return False


def ClusterKernel(*grid, threads=128, prelude="", is_cpu=False, cluster_dims=None):
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


def get_thread_binding(dim=0):
    ctx = _kernel_vars("T.get_thread_binding")
    return _pick(ctx.kernel_vars.threads, dim, "T.get_thread_binding", 0)


def get_thread_bindings():
    return list(_kernel_vars("T.get_thread_bindings").kernel_vars.threads)


def get_block_binding(dim=0):
    ctx = _kernel_vars("T.get_block_binding")
    return _pick(ctx.kernel_vars.blocks, dim, "T.get_block_binding", 0)


def get_block_bindings():
    return list(_kernel_vars("T.get_block_bindings").kernel_vars.blocks)


def get_thread_extent(dim=0):
    ctx = _kernel_vars("T.get_thread_extent")
    return _pick(ctx.kernel_extents[1], dim, "T.get_thread_extent", 1)


def get_thread_extents():
    return list(_kernel_vars("T.get_thread_extents").kernel_extents[1])


def get_block_extent(dim=0):
    ctx = _kernel_vars("T.get_block_extent")
    return _pick(ctx.kernel_extents[0], dim, "T.get_block_extent", 1)


def get_block_extents():
    return list(_kernel_vars("T.get_block_extents").kernel_extents[0])
