"""The ``docs-rag`` command's entry point: nothing heavy is imported before a Ctrl-C can be caught."""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from .unicode_text import CONTROL as _TERMINAL_CONTROL  # re only: start-up stays light

STOPPED = ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
           "run the command again to finish")


def main() -> int:
    try:
        from .cli import main as cli_main  # pydantic, numpy, the embedder: seconds on a cold machine
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        return 130
    return cli_main()




def terminal_safe(text: str) -> str:
    """``text`` with each control character shown, not obeyed: ``^[`` for ESC (caret notation), ``<U+009B>``
    for a C1 control. A document, a question someone typed into the API or an LLM server's error
    message can hold them, and the command prints them."""
    if not _TERMINAL_CONTROL.search(text):
        return text

    def shown(m: re.Match) -> str:
        c = ord(m.group())
        return f"^{chr(c + 64)}" if c < 0x20 else "^?" if c == 0x7F else f"<U+{c:04X}>"

    return _TERMINAL_CONTROL.sub(shown, text)


class TerminalText:
    """A text stream (stdout, stderr) that writes :func:`terminal_safe` text; all else as the stream."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
