"""TileLang's rasterization plans of a roller hint: the order blocks are launched in.
A plan other than NoRasterization is T.use_swizzle(panel_width) in the kernel, which
keeps the blocks of a wave on few rows (or columns) of tiles so that L2 reuses them."""

__all__ = ["NoRasterization", "Rasterization", "Rasterization2DColumn", "Rasterization2DRow"]


class Rasterization:
    panel_width_ = None

    @property
    def panel_width(self):
        return self.panel_width_


class NoRasterization(Rasterization):
    def __repr__(self):
        return "<NoRasterization>"


class Rasterization2DRow(Rasterization):
    """Blocks launched along rows, `panel_width` rows at a time."""

    def __init__(self, panel_width=4):
        self.panel_width_ = panel_width

    def __repr__(self):
        return f"<Rasterization2DRow({self.panel_width_})>"


class Rasterization2DColumn(Rasterization):
    """Blocks launched along columns, `panel_width` columns at a time
    (T.use_swizzle(panel_width)'s order)."""

    def __init__(self, panel_width=4):
        self.panel_width_ = panel_width

    def __repr__(self):
        return f"<Rasterization2DColumn({self.panel_width_})>"
