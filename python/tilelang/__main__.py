"""`python -m tilelang doctor`: what this installation can do here;
`python -m tilelang cache stats|clear|prune [--max-size 1G] [--dir DIR]`: inspect and
clean the disk kernel cache; `python -m tilelang --include-dir` (`--device-dir`): the
folder generated CUDA source includes from (the device header folder)."""

import argparse
import os
import sys


def _device_dir():
    from tilelang import _native

    return _native.load().device_include_dir()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tilelang", description=__doc__.split(":")[0])
    parser.add_argument(
        "--include-dir",
        action="store_true",
        help="print the folder to pass with -I when compiling generated CUDA source",
    )
    parser.add_argument(
        "--device-dir", action="store_true", help="print the installed device header folder"
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("doctor", help="report versions, usable targets, the cache and headers")
    cache_cmd = commands.add_parser("cache", help="inspect or clean the disk kernel cache")
    cache_cmd.add_argument("action", choices=("stats", "clear", "prune"))
    cache_cmd.add_argument(
        "--dir", default=None, help="cache directory (default: TILELANG_CACHE_DIR)"
    )
    cache_cmd.add_argument("--max-size", default=None, help="for prune: size to shrink to, e.g. 1G")
    args = parser.parse_args(argv)

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
    if args.command != "cache":
        parser.error("give a command (doctor, cache) or --include-dir")
    return _cache(parser, args)


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
