"""Random numbers in kernels, with TileLang's names: `T.rng_init(seed, seq, off)` starts
a per-thread generator, `T.rng_rand()` draws a uint32, `T.rng_rand_float(bit, dist)` a
uniform or normal float32 / float64.

The generators are cuRAND's three: Philox4x32-10 (the default,
device/common/philox_rng.h), MRG32k3a (mrg32k3a_rng.h) and XORWOW (xorwow_rng.h), with
cuRAND's seeding, subsequences and conversions, so a kernel draws the numbers
`curand_init(seed, seq, off, &state)` followed by `curand` / `curand_uniform` /
`curand_normal` (and their `_double` forms) give, as a TileLang kernel does. The state
is a per-thread local array the first `T.rng_init` of a T.Kernel allocates in the
kernel's frame, so a draw after the `if` or barrier that holds the `T.rng_init` still
sees it.
"""

from __future__ import annotations

from tilelang.language import builder_ctx
from tilelang.language.buffer import wrap_buffer
from tilelang.language.builder_ctx import frontend_error
from tilelang.language.dtypes import dtype as make_dtype
from tilelang.language.math import address_of, cast
from tilelang.types import Expr, ExprLike

_C = builder_ctx._C

PHILOX = "curandStatePhilox4_32_10_t"
# cuRAND's generator names that TileLang accepts, and the prefix of this package's
# device functions for each (device/common/philox_rng.h, mrg32k3a_rng.h, xorwow_rng.h).
_CURAND_GENERATORS = {
    PHILOX: "tl::philox_",
    "curandStateMRG32k3a_t": "tl::mrg32k3a_",
    "curandStateXORWOW_t": "tl::xorwow_",
}
_STATE_WORDS = 16  # tl::rng::kStateWords


def _kernel(what):
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None:
        raise frontend_error(f"{what} must be called inside a `with T.Kernel(...)` block")
    return ctx


def _state(what, generator=None):
    """(state buffer, device function prefix) of the current T.Kernel's generator (one
    per kernel); `generator` (from T.rng_init) allocates it on first use."""
    ctx = _kernel(what)
    states = ctx.__dict__.setdefault("rng_states", {})
    key = id(ctx.kernel_vars)
    found = states.get(key)
    if found is not None and found[0] is ctx.kernel_vars:
        if generator is not None and found[2] != generator:
            raise frontend_error(
                f"{what}: this T.Kernel's generator is {found[2]!r}; one kernel starts one kind "
                f"of generator, got {generator!r}"
            )
        return found[1], _CURAND_GENERATORS[found[2]]
    if generator is None:
        raise frontend_error(
            f"{what} draws from the generator that T.rng_init(seed, ...) starts; call "
            "T.rng_init earlier in this T.Kernel"
        )
    handle = ctx.builder.alloc(
        ctx.take_name("rng_state"),
        [_STATE_WORDS],
        make_dtype("uint32"),
        "local",
        in_kernel_frame=True,
    )
    state = wrap_buffer(handle)
    states[key] = (ctx.kernel_vars, state, generator)
    return state, _CURAND_GENERATORS[generator]


def _u64(what, name, x):
    if isinstance(x, bool) or not isinstance(x, (int, _C.Expr)):
        raise frontend_error(
            f"{what}: `{name}` must be an integer or an integer expression, got {x!r}"
        )
    if isinstance(x, _C.Expr) and not x.dtype.name.startswith(("int", "uint")):
        raise frontend_error(
            f"{what}: `{name}` must be an integer expression, got a {x.dtype} expression {x}"
        )
    if isinstance(x, int) and not 0 <= x < 2**64:
        raise frontend_error(f"{what}: `{name}` must lie in [0, 2**64), got {x}")
    return cast(x, "uint64")


def rng_init(
    seed: ExprLike, seq: ExprLike | None = None, off: ExprLike = 0, generator: str = PHILOX
) -> None:
    """Starts this thread's generator: `seed` picks the sequence, `seq` the subsequence
    (2^66 numbers each for Philox, 2^76 for MRG32k3a, 2^67 for XORWOW; by default the thread's index in the grid along x,
    `threadIdx.x + blockIdx.x * blockDim.x`), `off` how many numbers of it to skip."""
    what = "T.rng_init"
    if generator not in _CURAND_GENERATORS:
        raise frontend_error(
            f"{what}: generator must be one of {list(_CURAND_GENERATORS)}, got {generator!r}"
        )
    ctx = _kernel(what)
    if seq is None:
        vars_ = ctx.kernel_vars
        seq = vars_.threads[0] + vars_.blocks[0] * ctx.kernel_extents[1][0]
    args = [_u64(what, "seed", seed), _u64(what, "seq", seq), _u64(what, "off", off)]
    state, prefix = _state(what, generator)
    ctx.builder.evaluate(
        _C.call_extern(make_dtype("void"), prefix + "init", [address_of(state[0]), *args])
    )


def rng_rand() -> Expr:
    """The next 32 random bits of this thread's generator, as a uint32 (cuRAND's `curand`)."""
    state, prefix = _state("T.rng_rand()")
    return _C.call_extern(make_dtype("uint32"), prefix + "rand", [address_of(state[0])])


def rng_rand_float(bit: int = 32, dist: str = "uniform") -> Expr:
    """The next random float32 (`bit=32`) or float64 (`bit=64`) of this thread's
    generator: uniform in (0, 1] (`dist="uniform"`, cuRAND's `curand_uniform`) or
    standard normal (`dist="normal"`, `curand_normal`, Box-Muller on two draws)."""
    what = "T.rng_rand_float"
    if bit not in (32, 64):
        raise frontend_error(f"{what}: bit must be 32 or 64, got {bit!r}")
    if dist not in ("uniform", "normal"):
        raise frontend_error(f"{what}: dist must be 'uniform' or 'normal', got {dist!r}")
    state, prefix = _state(f"{what}()")
    return _C.call_extern(
        make_dtype(f"float{bit}"), f"{prefix}{dist}_f{bit}", [address_of(state[0])]
    )


__all__ = ["rng_init", "rng_rand", "rng_rand_float"]
