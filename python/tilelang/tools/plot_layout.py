"""`tilelang.tools.plot_layout`: draws a layout as a grid of cells saved as PDF, PNG or SVG
(TileLang's signature). A fragment shows which thread holds each element and where in
its registers; a shared layout shows where each element lands, coloured by the bank it
falls in when the element size is given. The cells are computed without matplotlib
(layout_cells), which only draws them; it is an optional extra (`pip install
matplotlib`, or the package's `plot` extra)."""

from __future__ import annotations

import itertools
import os
from typing import Any

from tilelang.types import ShapeLike

_FORMATS = ("pdf", "png", "svg")
_BANKS, _BANK_BYTES = 32, 4
# Each cell is _CELL_INCHES square under a title band of _TITLE_INCHES, at _DPI: cell
# (r, c) spans pixels [c, c + 1) x [r, r + 1) times 50, below the band's 40.
_CELL_INCHES, _TITLE_INCHES, _DPI = 0.5, 0.4, 100


def _require_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(
            "tilelang.tools.plot_layout draws with matplotlib, which is not installed: "
            "pip install matplotlib (or install tilelang with its 'plot' extra: "
            "pip install 'tilelang-cpp[plot]')"
        ) from None


def _formats(formats):
    if not isinstance(formats, str):
        raise TypeError(
            f"plot_layout formats must be a string such as 'png', 'pdf,svg' or 'all', got "
            f"{type(formats).__name__}"
        )
    text = formats.strip().lower()
    chosen = list(_FORMATS) if text == "all" else [f.strip() for f in text.split(",")]
    bad = [f for f in chosen if f not in _FORMATS]
    if bad:
        raise ValueError(
            f"plot_layout formats must be among {', '.join(_FORMATS)} or 'all'; got {formats!r}"
        )
    return chosen


def _grid_2d(shape):
    """(rows, cols) of an N-d shape drawn as 2-d: the last dimension across, the others
    merged down."""
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows, shape[-1]


def _flat(index, shape):
    flat = 0
    for i, d in zip(index, shape):
        flat = flat * d + i
    return flat


def _ints(shape, what):
    from tilelang.language.buffer import const_int

    dims = [const_int(d) for d in shape]
    if any(d is None for d in dims):
        raise ValueError(f"plot_layout draws layouts of constant shape; {what} is {list(shape)}")
    return dims


class Cells:
    """A drawn grid: rows x cols cells, each (colour key, label) or None (nothing maps
    there); keys run from 0 to `keys` - 1 and key k takes the colormap's colour at k / keys."""

    def __init__(self, rows, cols, title):
        self.rows, self.cols, self.title = rows, cols, title
        self.grid = [[None] * cols for _ in range(rows)]
        self.keys = 1

    def set(self, r, c, key, label):
        self.grid[r][c] = (key, label)
        self.keys = max(self.keys, key + 1)


def layout_cells(layout, view="input", grid_shape=None, element_bits=None):
    """The Cells plot_layout draws for `layout` (see plot_layout)."""
    from tilelang.layout import Fragment, Layout

    if isinstance(layout, Fragment):
        return _fragment_cells(layout)
    if isinstance(layout, Layout):
        return _layout_cells(layout, view, grid_shape, element_bits)
    raise TypeError(f"plot_layout takes a T.Layout or a T.Fragment, got {type(layout).__name__}")


def _fragment_cells(frag):
    shape = _ints(frag.get_input_shape(), "the fragment's shape")
    rows, cols = _grid_2d(shape)
    cells = Cells(rows, cols, f"fragment {'x'.join(map(str, shape))}: T thread, L local index")
    for index in itertools.product(*map(range, shape)):
        threads = [frag.map_forward_thread(index, r) for r in range(frag.replicate)]
        local = frag.map_forward_index(index)
        local = local[0] if len(local) == 1 else tuple(local)
        label = "/".join(f"T{t}" for t in threads) + f"\nL{local}"
        cells.set(*divmod(_flat(index, shape), cols), threads[0], label)
    return cells


def _layout_cells(layout, view, grid_shape, element_bits):
    shape = _ints(layout.get_input_shape(), "the layout's shape")
    points = [
        (idx, tuple(layout.map_forward_index(idx))) for idx in itertools.product(*map(range, shape))
    ]
    out_shape = [max(out[k] for _, out in points) + 1 for k in range(len(points[0][1]))]
    if element_bits is not None and (not isinstance(element_bits, int) or element_bits <= 0):
        raise ValueError(f"plot_layout element_bits must be a positive int, got {element_bits!r}")

    def bank(out):
        return _bank(_flat(out, out_shape), element_bits)

    title = f"[{'x'.join(map(str, shape))}] -> [{'x'.join(map(str, out_shape))}]"
    if element_bits is not None:
        title += f", {element_bits}-bit elements coloured by bank"
    mode = (view or "input").strip().lower()
    if mode in ("output", "out", "dst"):
        rows, cols = _grid_2d(out_shape)
        cells = Cells(rows, cols, title + " (output view: input index per place)")
        if element_bits:
            cells.keys = _BANKS
        for idx, out in points:
            key = bank(out) if element_bits else _flat(idx, shape)
            cells.set(*divmod(_flat(out, out_shape), cols), key, ",".join(map(str, idx)))
        return cells
    if mode not in ("input", "in", "src"):
        raise ValueError(f"plot_layout view must be 'input' or 'output', got {view!r}")
    total = len(points)
    rows, cols = _grid_2d(shape)
    if grid_shape is not None:
        rows, cols = (int(x) for x in grid_shape)
        if rows <= 0 or cols <= 0 or rows * cols != total:
            raise ValueError(
                f"plot_layout grid_shape must be (rows, cols) of positive sizes whose product "
                f"is the layout's {total} elements, got {tuple(grid_shape)}"
            )
    cells = Cells(rows, cols, title + " (input view: place per element)")
    if element_bits:
        cells.keys = _BANKS
    for idx, out in points:
        place = _flat(out, out_shape)
        key = bank(out) if element_bits else place
        label = f"{place}\nb{key}" if element_bits else str(place)
        cells.set(*divmod(_flat(idx, shape), cols), key, label)
    return cells


def _bank(offset, bits):
    return offset * bits // 8 // _BANK_BYTES % _BANKS


def kernel_layout_cells(kernel):
    """[(buffer name, Cells, is a fragment)] of the layouts the lowering of `kernel` (a
    compiled JITKernel) chose: each register fragment by thread and register, each
    swizzled shared gemm tile by place and bank; empty on the cpu target."""
    from tilelang import _native

    prim = getattr(kernel, "prim_func", None)
    if prim is None:
        raise TypeError(
            "plot_layouts needs a kernel compiled in this process: a kernel loaded from a "
            "file carries no IR to read its layouts from"
        )
    tables = _native.load().inferred_layouts(
        prim.core, kernel.target, dict(kernel.pass_configs or {})
    )
    out = []
    for t in tables:
        shape = list(t["shape"])
        rows, cols = _grid_2d(shape)
        kind = "fragment" if t["fragment"] else "shared tile"
        title = f"{t['buffer']}: {t['dtype']} {kind} {'x'.join(map(str, shape))}"
        if t["fragment"]:
            cells = Cells(rows, cols, title + ", T thread, L register")
            for flat, holders in enumerate(t["holders"]):
                if holders:
                    label = "/".join(f"T{th}" for th, _ in holders) + f"\nL{holders[0][1]}"
                    cells.set(*divmod(flat, cols), holders[0][0], label)
        else:
            cells = Cells(rows, cols, title + ", place and bank")
            cells.keys = _BANKS
            for flat, offset in enumerate(t["offsets"]):
                bank = _bank(offset, t["bits"])
                cells.set(*divmod(flat, cols), bank, f"{offset}\nb{bank}")
        out.append((t["buffer"], cells, t["fragment"]))
    return out


def plot_kernel_layouts(kernel, directory, formats="png"):
    """Draws every layout kernel_layout_cells finds, as `directory/<buffer>.<format>`
    (fragments in RdPu by thread, shared tiles in hsv by bank); returns the paths."""
    chosen = _formats(formats)
    found = kernel_layout_cells(kernel)
    _require_matplotlib()
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, cells, fragment in found:
        colormap = "RdPu" if fragment else "hsv"
        paths += _draw(cells, colormap, os.path.join(directory, name), chosen)
    return paths


def _draw(cells, colormap, path_stem, formats):
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    cmap = matplotlib.colormaps[colormap]
    grid_height = cells.rows * _CELL_INCHES
    height = grid_height + _TITLE_INCHES
    fig = Figure(figsize=(cells.cols * _CELL_INCHES, height), dpi=_DPI)
    ax = fig.add_axes((0, 0, 1, grid_height / height))  # each cell at a known pixel
    ax.set_xlim(0, cells.cols)
    ax.set_ylim(cells.rows, 0)
    ax.set_axis_off()
    font = _CELL_INCHES * 72 * 0.22
    for r, c in itertools.product(range(cells.rows), range(cells.cols)):
        cell = cells.grid[r][c]
        if cell is None:
            colour, label = (0.95, 0.95, 0.95, 1.0), ""
        else:
            colour, label = cmap(cell[0] / cells.keys), cell[1]
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="black", linewidth=0.4))
        dark = colour[0] * 0.299 + colour[1] * 0.587 + colour[2] * 0.114 < 0.5
        ax.text(c + 0.5, r + 0.5, label, ha="center", va="center", fontsize=font,
                color="white" if dark else "black")  # fmt: skip
    fig.text(
        0.5,
        1 - _TITLE_INCHES / 2 / height,
        cells.title,
        ha="center",
        va="center",
        fontsize=font * 1.2,
    )
    paths = []
    for fmt in formats:
        path = f"{path_stem}.{fmt}"
        fig.savefig(path, format=fmt, dpi=_DPI)
        paths.append(path)
    return paths


def plot_layout(
    layout: Any,
    save_directory: str = "./tmp",
    name: str = "layout",
    colormap: str | None = None,
    verbose: bool = False,
    formats: Any = "pdf",
    view: Any = "input",
    grid_shape: ShapeLike | None = None,
    element_bits: int | None = None,
) -> Any:
    """Draws `layout` and saves it as `save_directory/name.<format>` for each of
    `formats` ('pdf', 'png', 'svg', a comma-separated list or 'all'); returns the paths.

    A T.Fragment is drawn over its shape: each cell names the thread(s) holding the
    element (T0/T32 when replicated) and its local index (L), coloured by thread. A
    T.Layout is drawn over its input shape (`view="input"`, or `grid_shape=(rows,
    cols)`), each cell naming the place the element lands; `view="output"` draws the
    places instead, each naming the element there. With `element_bits` (16 for float16)
    cells are coloured by shared-memory bank (32 banks of 4 bytes), else by place.
    `colormap` is a matplotlib colormap name (default RdPu for fragments, hsv for
    banks, Spectral otherwise); `verbose` prints each cell. Needs matplotlib."""
    chosen = _formats(formats)
    cells = layout_cells(layout, view, grid_shape, element_bits)
    _require_matplotlib()
    if verbose:
        for r, c in itertools.product(range(cells.rows), range(cells.cols)):
            cell = cells.grid[r][c]
            print(f"[{r}, {c}] {cell[1].replace(chr(10), ' ') if cell else '-'}")
    from tilelang.layout import Fragment

    if colormap is None:
        colormap = "RdPu" if isinstance(layout, Fragment) else "hsv" if element_bits else "Spectral"
    os.makedirs(save_directory, exist_ok=True)
    return _draw(cells, colormap, os.path.join(save_directory, name), chosen)
