"""Export of a compiled kernel to a directory, and loading it back without compiling.

The directory is the one format of the Python package and the C++ API
(tl::export_kernel / tl::load_kernel): the artifact files of the kernel's cache entry
(on the CPU: kernel.cpp and kernel.so) and export.txt, written and checked by the core
(format version, target, machine, the SHA-256 of every file, the signature). The Python
side adds one `meta` line of JSON (execution backend, out_idx, pass configs, compile
flags); a kernel exported from C++ has none and loads with every parameter an input.

Kernels exported by earlier releases as one zip file (manifest.json, format version 1)
still load: their checksums are verified and the files unpacked into a private
directory before the core sees them."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import weakref
import zipfile
from typing import TYPE_CHECKING, Any

from tilelang import _native

if TYPE_CHECKING:
    from .kernel import JITKernel

_C = _native.load()

# The zip format of earlier releases, still loaded.
FORMAT = "tilelang-cpp-kernel"
VERSION = 1


def _machine() -> dict[str, str]:
    return {"system": platform.system(), "machine": platform.machine()}


def export_library(kernel: JITKernel, path: str | os.PathLike) -> None:
    if os.path.isfile(path):
        raise ValueError(
            f"cannot export kernel '{kernel.name}' to {path}: a file is there, and an export is "
            "a directory; choose another path or remove the file"
        )
    meta = {
        "execution_backend": kernel.execution_backend,
        "out_idx": list(kernel.out_idx),
        "pass_configs": {k: _jsonable(v) for k, v in kernel.pass_configs.items()},
        "compile_flags": list(kernel.compile_flags),
    }
    _C.export_kernel(kernel.kernel, os.fspath(path), json.dumps(meta, sort_keys=True))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _bad(path: str, why: str) -> ValueError:
    return ValueError(f"{path} is not a loadable tilelang kernel: {why}")


def load_kernel(path: str | os.PathLike) -> JITKernel:
    """Loads a kernel written by JITKernel.export_library or tl::export_kernel (a
    directory), or by an earlier release's export_library (a zip); nothing is compiled."""
    from .kernel import JITKernel, resolve_backend

    path = os.fspath(path)
    if os.path.isdir(path):
        native, meta_text = _C.load_exported_kernel(path)
        try:
            meta = json.loads(meta_text) if meta_text else {}
        except ValueError as e:
            raise _bad(path, f"its export.txt has a meta line that is not JSON ({e})") from None
        manifest = {
            "target": native.target,
            "execution_backend": meta.get("execution_backend")
            or resolve_backend("auto", native.target),
            "out_idx": meta.get("out_idx") or [],
            "pass_configs": meta.get("pass_configs") or {},
            "compile_flags": meta.get("compile_flags") or [],
        }
        return JITKernel.__new__(JITKernel)._init_loaded(native, manifest)
    return _load_zip(path)


def _load_zip(path: str) -> JITKernel:
    """The format of earlier releases: a zip with manifest.json (format version 1)."""
    from .kernel import JITKernel

    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise _bad(path, f"{e}; export one with kernel.export_library(dir)") from None
    with archive:
        try:
            manifest = json.loads(archive.read("manifest.json"))
        except (KeyError, ValueError) as e:
            raise _bad(path, f"no readable manifest.json ({e})") from None
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise _bad(
                path,
                f"format {manifest.get('format')!r} version {manifest.get('version')!r}, "
                f"expected {FORMAT!r} version {VERSION}",
            )
        built_on = manifest.get("built_on", {})
        if built_on != _machine():
            raise _bad(
                path,
                f"it was built for {built_on.get('system')}/{built_on.get('machine')}, this "
                f"machine is {platform.system()}/{platform.machine()}; export it on a machine "
                "like this one",
            )
        workdir = tempfile.mkdtemp(prefix="tilelang-kernel-")
        try:
            for name, digest in manifest["files"].items():
                if os.path.basename(name) != name:
                    raise _bad(path, f"member name {name!r} is not a plain file name")
                data = archive.read(name)
                if hashlib.sha256(data).hexdigest() != digest:
                    raise _bad(path, f"member {name} does not match its checksum (damaged file)")
                with open(os.path.join(workdir, name), "wb") as f:
                    f.write(data)
            native = _C.load_kernel(manifest["signature"], manifest["target"], workdir)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
    kernel = JITKernel.__new__(JITKernel)._init_loaded(native, manifest)
    # The unpacked files live as long as the kernel (re-export copies them).
    weakref.finalize(kernel, shutil.rmtree, workdir, True)
    return kernel
