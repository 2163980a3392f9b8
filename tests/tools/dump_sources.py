"""Writes the generated source of every kernel that every Python example builds, for
each target (cpu, cuda sm_80, cuda sm_90a, metal, metal 4), so that a change to the
compiler can be checked for what it does to generated code:

    python tests/tools/dump_sources.py OUT_BEFORE      # at the old commit
    python tests/tools/dump_sources.py OUT_AFTER       # at the new one
    diff -r OUT_BEFORE OUT_AFTER

Each example runs as it does in the tests (on the cpu target, checking its results);
every kernel it compiles is also lowered to source for each target, without building
it. A kernel a target refuses is written as the error's text. Files are
OUT/<example>/<index>_<kernel>.<target>.txt, the index counting the example's kernels
in the order it builds them (rebuilt kernels are written once more)."""

import argparse
import contextlib
import importlib.util
import io
import os
import pathlib
import sys

import tilelang
from tilelang import _C

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGETS = {
    "cpu": "cpu",
    "sm80": "cuda -arch=sm_80",
    "sm90a": "cuda -arch=sm_90a",
    "metal": "metal",
    "metal4": "metal -keys=metal4",
}


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("--examples", nargs="*", help="example names (default: every examples/*.py)")
    args = p.parse_args()
    os.environ["TILELANG_DEFAULT_TARGET"] = "cpu"
    paths = sorted((ROOT / "examples").glob("*.py"))
    if args.examples:
        paths = [q for q in paths if q.stem in args.examples]
    jit_kernel = __import__("tilelang.jit.kernel", fromlist=["native_compile"])
    native_compile = jit_kernel.native_compile
    failed = []
    for path in paths:
        out = args.out / path.stem
        out.mkdir(parents=True, exist_ok=True)
        count = [0]

        def dump(func, target, pass_configs, compile_flags, out=out, count=count):
            count[0] += 1
            for name, t in TARGETS.items():
                try:
                    text = _C.generate_source(
                        func.core, tilelang.utils.target.determine_target(t), pass_configs
                    )
                except Exception as e:  # noqa: BLE001 (a refusal is part of what is compared)
                    text = f"{type(e).__name__}: {e}\n"
                (out / f"{count[0]:03d}_{func.name}.{name}.txt").write_text(text)
            return native_compile(func, target, pass_configs, compile_flags)

        jit_kernel.native_compile = dump
        spec = importlib.util.spec_from_file_location(f"dump_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                spec.loader.exec_module(module)
                module.main()
        except Exception as e:  # noqa: BLE001 (reported, and the next example runs)
            failed.append(f"{path.stem}: {type(e).__name__}: {e}")
        finally:
            jit_kernel.native_compile = native_compile
        print(f"{path.stem}: {count[0]} kernels", flush=True)
    for f in failed:
        print("failed:", f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
