"""The ``docs-rag`` command's entry point: nothing heavy is imported before a Ctrl-C or SIGTERM can be caught."""

from __future__ import annotations

import codecs
import os
import re
import signal
import sys
from typing import Any, NoReturn, TextIO

from .unicode_text import BIDI_CONTROL as _BIDI_CONTROL  # re only: start-up stays light
from .unicode_text import CONTROL as _TERMINAL_CONTROL

#: what stderr shows escaped: the controls, and the bidi controls a file name in a progress line, a warning or
#: an error can hold (``report\u202egnp.exe.md`` drew the rest of its line reversed). stdout keeps the marks
#: and closed isolates an answer's right-to-left text needs (its overrides are gone when parsed)
_DIAGNOSTIC_CONTROL = re.compile(f"{_TERMINAL_CONTROL.pattern}|{_BIDI_CONTROL.pattern}")

STOPPED = ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
           "run the command again to finish")


class OutputError(Exception):
    """The command's output (stdout) could not be written: ``> /dev/full``, a full disk or an I/O error
    behind the file it was sent to. Not the storage's disk: ``cli._main`` says so (exit 74)."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(f"cannot write the output ({name}): {error}")
        self.error = error


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C so the command stops cleanly (a Dagster run is marked failed)."""


def sigterm_is_ctrl_c() -> None:
    """SIGTERM outside a run raises :class:`Terminated`; inside one, Dagster maps it to its SIGINT
    handler (the step fails with DagsterExecutionInterruptedError, which ``cli._interrupted`` sees).
    Installed by :func:`main` before anything heavy is imported, then kept by ``cli._main`` for every
    command but the servers, and again by ``ingest``."""

    def on_term(signum, frame):  # noqa: ANN001, ANN202
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)


def main() -> NoReturn:
    # SIGTERM is Ctrl-C from the first moment: the import below takes seconds, and a `kill PID` then
    # ended the command by the signal (exit 143, no line); cli._main puts the servers' default back
    sigterm_is_ctrl_c()
    try:
        from .cli import main as cli_main  # pydantic, numpy, the embedder: seconds on a cold machine

        code = cli_main()
        _stop_at_exit()
    except KeyboardInterrupt:  # in the import, or before cli._main's own handler (its argument parsing)
        _stop_at_exit()
        print(STOPPED, file=sys.stderr)
        code = 130
    _exit(code)


def _stop_at_exit() -> None:
    """From here to the end of the process SIGTERM and Ctrl-C print the line and end it with 130."""

    def stop(signum, frame):  # noqa: ANN001, ANN202
        try:
            os.write(2, f"{STOPPED}\n".encode())  # not print(): the signal may come inside a write to stderr
        except OSError:
            pass
        os._exit(130)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def _exit(code: int) -> NoReturn:
    """End the process once the command is done, with :func:`_stop_at_exit`'s handlers standing to the end.
    The interpreter's own exit drops every signal handler before it frees the modules, which with LanceDB,
    Dagster and the embedder loaded took 1 to 5 s: a SIGTERM then (a supervisor stopping a finished
    ``ingest``) ended the command by the signal, exit 143 and no line. So the exit work that matters is
    done here as the interpreter does it (the threads joined, the ``atexit`` functions: traces sent,
    warm-ups joined, logs flushed, child processes reaped; stdout and stderr flushed), then ``os._exit``:
    everything stored was committed by then, and freeing the modules changes nothing on disk."""
    threading = sys.modules.get("threading")
    if threading is not None and hasattr(threading, "_shutdown"):
        threading._shutdown()  # what the interpreter calls first at exit: thread pools finished, threads joined
    import atexit

    atexit._run_exitfuncs()  # the interpreter's next step (the functions' own errors are printed, not raised)
    for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        try:
            if stream is not None:
                stream.flush()
        except OSError as exc:  # what an atexit function printed cannot be written: said, as Python says it
            if name == "stdout" and not isinstance(exc, BrokenPipeError):
                try:
                    os.write(2, f"error: {OutputError(name, exc)}\n".encode())
                except OSError:
                    pass
            code = code or (141 if isinstance(exc, BrokenPipeError) else 74)
    os._exit(code)


def terminal_safe(text: str, *, bidi: bool = False) -> str:
    """``text`` with each control character shown, not obeyed: ``^[`` for ESC (caret notation), ``<U+009B>``
    for a C1 control. A document, a question someone typed into the API or an LLM server's error
    message can hold them, and the command prints them. With ``bidi`` a bidi control is shown too
    (``<U+202E>``), as on stderr."""
    control = _DIAGNOSTIC_CONTROL if bidi else _TERMINAL_CONTROL
    if not control.search(text):
        return text

    def shown(m: re.Match) -> str:
        c = ord(m.group())
        return f"^{chr(c + 64)}" if c < 0x20 else "^?" if c == 0x7F else f"<U+{c:04X}>"

    return control.sub(shown, text)


def _escaped(err: UnicodeError) -> tuple[str, int]:
    """A character the terminal's encoding lacks, written as a JSON escape (``\\u2014``; a character past
    U+FFFF as its surrogate pair, ``\\ud83c\\udf89``): readable in text, and the same character to a
    program that reads ``--json`` output."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    out = []
    for ch in err.object[err.start:err.end]:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}")
        else:
            out.append(f"\\u{c:04x}")
    return "".join(out), err.end


codecs.register_error("docs_rag_escape", _escaped)


class TerminalText:
    """A text stream (stdout, stderr) that writes :func:`terminal_safe` text (bidi controls shown too with
    ``bidi``, for stderr); all else as the stream.
    A character its encoding lacks (a Latin-1 or ASCII locale, ``PYTHONIOENCODING=latin-1``) is written
    as an escape: before, the answer's own "—" stopped the command after the answer, losing its sources."""

    def __init__(self, stream: TextIO, *, bidi: bool = False, name: str | None = None) -> None:
        self._stream = stream
        self._bidi = bidi
        self._name = name  # with a name ("stdout"): an error writing it is an OutputError (EPIPE stays itself)
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="docs_rag_escape")

    def write(self, text: str) -> int:
        try:
            self._stream.write(terminal_safe(text, bidi=self._bidi))
        except OSError as exc:
            self._failed(exc)
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> NoReturn:
        if self._name is None or isinstance(exc, BrokenPipeError):  # the reader left: cli._main stops quietly
            raise exc
        raise OutputError(self._name, exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
