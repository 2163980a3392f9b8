"""`tilelang.engine.param.KernelParam`, where TileLang's examples import it from."""
