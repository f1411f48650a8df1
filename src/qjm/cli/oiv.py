"""`qjm oiv`: the offline image viewer, like `hdfs oiv`.

Processors: XML (the element layout of `hdfs oiv -p XML`), Delimited (one line per inode
with its full path and the columns of `hdfs oiv -p Delimited`), json (one object per
inode) and FileDistribution (file counts by size).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from qjm.errors import QjmError
from qjm.namenode.image import read_image
from qjm.namenode.image.format import ImageError
from qjm.namenode.image.views import iter_delimited, iter_file_distribution, iter_json_lines
from qjm.namenode.image.xml import iter_xml

PROCESSORS = {
    "xml": "XML",
    "delimited": "Delimited",
    "json": "json",
    "filedistribution": "FileDistribution",
}


class OivError(QjmError):
    """The offline image viewer could not write its output."""


def _processor(name: str) -> str:
    key = name.lower()
    if key not in PROCESSORS:
        raise argparse.ArgumentTypeError(
            f"unknown processor {name!r} (choose from {', '.join(PROCESSORS.values())})"
        )
    return PROCESSORS[key]


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `qjm oiv`."""
    p = subparsers.add_parser(
        "oiv",
        help="offline image viewer (fsimage -> XML, Delimited, JSON lines, FileDistribution)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-i", "--inputFile", dest="input", required=True, help="fsimage file")
    p.add_argument(
        "-o", "--outputFile", dest="output", default="-", help="output file ('-': stdout)"
    )
    p.add_argument(
        "-p",
        "--processor",
        type=_processor,
        default="XML",
        help="XML (default), Delimited, json or FileDistribution",
    )
    p.add_argument(
        "-delimiter", "--delimiter", dest="delimiter", default="\t", help="Delimited separator"
    )
    p.add_argument(
        "-step",
        "--step",
        dest="step",
        type=int,
        default=2 * 1024 * 1024,
        help="FileDistribution bucket size in bytes",
    )
    p.add_argument(
        "-maxSize",
        "--maxSize",
        dest="max_size",
        type=int,
        default=128 * 1024**3,
        help="FileDistribution largest bucket in bytes",
    )
    p.add_argument(
        "--no-md5",
        dest="check_md5",
        action="store_false",
        help="do not check the image against its .md5 file",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the image with the chosen processor."""
    image = read_image(args.input, check_md5=args.check_md5)
    chunks: Iterable[str]
    if args.processor == "XML":
        chunks = iter_xml(image)
    elif args.processor == "Delimited":
        chunks = iter_delimited(image, args.delimiter)
    elif args.processor == "json":
        chunks = iter_json_lines(image)
    else:
        if args.step <= 0 or args.max_size <= 0:
            raise ImageError("-step and -maxSize must be positive")
        chunks = iter_file_distribution(image, args.step, args.max_size)
    try:
        if args.output == "-":
            for c in chunks:
                sys.stdout.write(c)
            sys.stdout.flush()
        else:
            with open(args.output, "w", encoding="utf-8", newline="\n") as f:
                for c in chunks:
                    f.write(c)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OivError(f"cannot write {args.output}: {e.strerror or e}") from None
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run `oiv` on its own (python -m qjm.cli.oiv ...)."""
    parser = argparse.ArgumentParser(prog="qjm")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["oiv", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except QjmError as e:
        print(f"qjm oiv: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
