"""Export of a compiled kernel to one file, and loading it back without compiling.

The file is a zip: `manifest.json` (format version, target, execution backend, out_idx,
the kernel signature in the core's text form, a readable parameter list, the machine it
was built for and the SHA-256 of every other member) plus the artifact files of the
kernel's cache entry (on the CPU: kernel.cpp and kernel.so). Loading verifies the
checksums, unpacks the artifact into a private directory and hands it to the core."""

import hashlib
import json
import os
import platform
import shutil
import tempfile
import weakref
import zipfile

from tilelang import _native

_C = _native.load()

FORMAT = "tilelang-cpp-kernel"
VERSION = 1
_SKIP = {"manifest.txt"}  # the cache entry's own checksums; the zip manifest replaces them


def _machine():
    return {"system": platform.system(), "machine": platform.machine()}


def export_library(kernel, path):
    source_dir = kernel.kernel.artifact_dir
    if not source_dir or not os.path.isdir(source_dir):
        raise RuntimeError(
            f"kernel '{kernel.name}' has no artifact directory to export "
            f"({source_dir or 'none recorded'}); was its cache entry pruned? Compile it again "
            "with tilelang.compile and export right away"
        )
    files = {}
    for name in sorted(os.listdir(source_dir)):
        full = os.path.join(source_dir, name)
        if name in _SKIP or not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            files[name] = f.read()
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "name": kernel.name,
        "target": kernel.target,
        "execution_backend": kernel.execution_backend,
        "out_idx": list(kernel.out_idx),
        "pass_configs": {k: _jsonable(v) for k, v in kernel.pass_configs.items()},
        "compile_flags": list(kernel.compile_flags),
        "built_on": _machine(),
        "signature": kernel.kernel.signature_text,
        "params": [
            {"name": p.name, "dtype": p.dtype, "shape": p.shape, "is_tensor": p.is_tensor}
            for p in kernel.params
        ],
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # Written next to the destination and renamed: a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(prefix=".tilelang-export-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
            for name, data in files.items():
                z.writestr(name, data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _jsonable(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _bad(path, why):
    return ValueError(f"{path} is not a loadable tilelang kernel: {why}")


def load_kernel(path):
    """Loads a kernel written by JITKernel.export_library; nothing is compiled."""
    from .kernel import JITKernel

    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise _bad(path, f"{e}; export one with kernel.export_library(path)") from None
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
