"""`python -m tilelang doctor`: what this installation can do here;
`python -m tilelang cache stats|clear|prune [--max-size 1G] [--dir DIR]`: inspect and
clean the disk kernel cache; `python -m tilelang autotune export|import FILE [--dir DIR]`:
write the autotuner's results to one file, or add a file's results to the result cache;
`python -m tilelang --include-dir` (`--device-dir`): the folder generated CUDA source
includes from (the device header folder);
`python -m tilelang --cmake-dir` (`--cpp-include-dir`, `--lib-dir`): where the installed
package carries the C++ package (its CMake config package; the folder of its C++ headers,
the one -I a program needs; its libraries), for a C++ project that builds against a pip
install (docs/cpp_api.md)."""

import argparse
import os
import sys


def _device_dir():
    from tilelang import _native

    return _native.load().device_include_dir()


# The C++ package inside an installed wheel (CMakeLists.txt's SKBUILD layout), relative
# to this folder.
_CMAKE_DIR = os.path.join("lib", "cmake", "tilelang_cpp")
_CPP_INCLUDE_DIR = "include"
_LIB_DIR = "lib"


def _cxx_package_dir(relative):
    """`relative` inside this installation's C++ package; SystemExit when it has none."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.isfile(os.path.join(here, _CMAKE_DIR, "tilelang_cppConfig.cmake")):
        return os.path.join(here, relative)
    sys.stderr.write(
        f"python -m tilelang: this tilelang ({here}) carries no C++ package: a wheel built "
        "by `pip install` carries one; from a source checkout, `cmake --install <build dir> "
        "--prefix <dir>` installs it (docs/cpp_api.md)\n"
    )
    raise SystemExit(1)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tilelang", description=__doc__.split(":")[0])
    parser.add_argument(
        "--include-dir",
        action="store_true",
        help="print the folder to pass with -I when compiling generated CUDA source (for the "
        "C++ API's headers: --cpp-include-dir)",
    )
    parser.add_argument(
        "--device-dir", action="store_true", help="print the installed device header folder"
    )
    parser.add_argument(
        "--cmake-dir",
        action="store_true",
        help="print the C++ package's CMake directory (for find_package(tilelang_cpp): "
        "-Dtilelang_cpp_DIR=... or CMAKE_PREFIX_PATH)",
    )
    parser.add_argument(
        "--cpp-include-dir",
        action="store_true",
        help="print the folder of the C++ package's headers (<tl/tl.h> ...), the one -I a C++ "
        "program needs",
    )
    parser.add_argument(
        "--lib-dir", action="store_true", help="print the folder of the C++ package's libraries"
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("doctor", help="report versions, usable targets, the cache and headers")
    cache_cmd = commands.add_parser("cache", help="inspect or clean the disk kernel cache")
    cache_cmd.add_argument("action", choices=("stats", "clear", "prune"))
    cache_cmd.add_argument(
        "--dir", default=None, help="cache directory (default: TILELANG_CACHE_DIR)"
    )
    cache_cmd.add_argument("--max-size", default=None, help="for prune: size to shrink to, e.g. 1G")
    tune_cmd = commands.add_parser(
        "autotune", help="export the autotuner's results to a file, or import such a file"
    )
    tune_cmd.add_argument("action", choices=("export", "import"))
    tune_cmd.add_argument("file", help="the results file to write (export) or read (import)")
    tune_cmd.add_argument(
        "--dir",
        default=None,
        help="result directory (default: the local result cache, $TILELANG_CACHE_DIR/autotuner; "
        "a shared result directory may be named)",
    )
    args = parser.parse_args(argv)

    if args.cmake_dir or args.cpp_include_dir or args.lib_dir:
        if args.command or args.include_dir or args.device_dir:
            parser.error(
                "--cmake-dir, --cpp-include-dir and --lib-dir take no command and no other option"
            )
        if args.cmake_dir:
            print(_cxx_package_dir(_CMAKE_DIR))
        if args.cpp_include_dir:
            print(_cxx_package_dir(_CPP_INCLUDE_DIR))
        if args.lib_dir:
            print(_cxx_package_dir(_LIB_DIR))
        return 0
    if args.include_dir or args.device_dir:
        if args.command:
            parser.error("--include-dir and --device-dir take no command")
        if args.device_dir:
            print(_device_dir())
        if args.include_dir:
            print(os.path.join(_device_dir(), "cuda"))
        return 0
    if args.command == "doctor":
        from tilelang import doctor

        return doctor.main()
    if args.command == "autotune":
        return _autotune(args)
    if args.command != "cache":
        parser.error(
            "give a command (doctor, cache, autotune) or --include-dir, --cmake-dir, --cpp-include-dir, "
            "--lib-dir"
        )
    return _cache(parser, args)


def _autotune(args):
    from tilelang.autotuner import result_store

    directory = args.dir or result_store.default_dir()
    if args.action == "export":
        count = result_store.export_results(args.file, directory)
        print(f"exported {count} tuning result(s) from {directory} to {args.file}")
        return 0
    try:
        added, replaced, kept = result_store.import_results(args.file, directory)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"python -m tilelang autotune import: {e}\n")
        return 1
    print(
        f"imported {added + replaced} tuning result(s) into {directory}: {added} new, "
        f"{replaced} replacing older ones; kept {kept} local result(s) tuned at the same "
        "time or later"
    )
    return 0


def _cache(parser, args):
    from tilelang import cache

    directory = args.dir or cache.cache_dir()
    if args.action == "stats":
        s = cache.stats(directory)
        print(f"dir: {s['dir']}")
        print(f"entries: {s['entries']}")
        print(f"bytes: {s['bytes']} ({cache.format_size(s['bytes'])})")
        return 0
    if args.action == "clear":
        removed = cache.clear_cache(directory)
        print(f"removed {removed} entries from {directory}")
        return 0
    if args.max_size is None:
        parser.error("prune needs --max-size, e.g. --max-size 1G")
    try:
        limit = cache.parse_size(args.max_size)
    except ValueError as e:
        parser.error(str(e))
    removed = cache.prune(limit, directory)
    s = cache.stats(directory)
    print(
        f"removed {removed} entries; {s['entries']} entries, {cache.format_size(s['bytes'])} left in {directory}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
