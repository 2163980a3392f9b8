"""`python -m tilelang cache stats|clear|prune [--max-size 1G] [--dir DIR]`: inspect and
clean the disk kernel cache."""

import argparse
import sys

from tilelang import cache


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tilelang", description=__doc__.split(":")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cache_cmd = commands.add_parser("cache", help="inspect or clean the disk kernel cache")
    cache_cmd.add_argument("action", choices=("stats", "clear", "prune"))
    cache_cmd.add_argument(
        "--dir", default=None, help="cache directory (default: TILELANG_CACHE_DIR)"
    )
    cache_cmd.add_argument("--max-size", default=None, help="for prune: size to shrink to, e.g. 1G")
    args = parser.parse_args(argv)

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
