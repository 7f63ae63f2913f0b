"""The ``docs-rag`` command's entry point: nothing heavy is imported before a Ctrl-C can be caught."""

from __future__ import annotations

import sys

STOPPED = ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
           "run the command again to finish")


def main() -> int:
    try:
        from .cli import main as cli_main  # pydantic, numpy, the embedder: seconds on a cold machine
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        return 130
    return cli_main()
