"""The command as a Unix tool: paths checked before any work, Ctrl-C at a block boundary,
a closed output pipe, one-line errors.

>>> with Interrupts() as interrupts:
...     with interrupts.block():  # a Ctrl-C here waits for the block to end
...         pass
>>> interrupts.pending
False
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import sys

from regcb_stream.io.read_ahead import Concatenated, ReadAhead

try:
    from regcb_stream.io._scan import keep_freed_memory
except ImportError:  # not built: malloc as it is
    def keep_freed_memory() -> bool:
        return False

INTERRUPTED = 128 + signal.SIGINT  # exit statuses, as a shell reports a signal's
PIPE_CLOSED = 128 + signal.SIGPIPE


class Interrupts:
    """SIGINT held back while a block is decided, learned and written (so the learner and
    the predictions agree when the run stops), and raised at once otherwise, e.g. while
    waiting for input. Outside the main thread, SIGINT is left as it is."""

    def __init__(self):
        self.pending = False
        self._busy = False
        self._previous = None

    def __enter__(self) -> Interrupts:
        with contextlib.suppress(ValueError):  # not the main thread
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if not self._busy:
            raise KeyboardInterrupt
        self.pending = True

    @contextlib.contextmanager
    def block(self):
        """A block of work that a Ctrl-C does not cut in two."""
        self._busy = True
        try:
            yield
        finally:
            self._busy = False
        if self.pending:
            raise KeyboardInterrupt


class PathError(Exception):
    """A path given on the command line that cannot be used (one line, for the user)."""


def open_input(stack: contextlib.ExitStack, name: str) -> ReadAhead | Concatenated:
    """The input's lines, read ahead as far as available (like VW, only ``\\n`` ends a
    line, bytes that are not UTF-8 fail their line, and gzip input is decompressed);
    ``name`` is a file, ``-`` (stdin), or a glob pattern: its files one after another."""
    if name in ("-", "/dev/stdin"):
        return ReadAhead(sys.stdin.fileno())
    readers = []
    for path in input_paths(name):
        try:
            readers.append(ReadAhead(stack.enter_context(open(path, "rb")).fileno()))
        except OSError as error:
            raise PathError(f"-d {path}: cannot read it ({error.strerror})") from None
    return readers[0] if len(readers) == 1 else Concatenated(readers)


def input_paths(name: str) -> list[str]:
    """The files ``-d`` names: the file itself, or a glob pattern's files in order."""
    if os.path.isdir(name):
        raise PathError(f"-d {name}: is a directory, not a file")
    if os.path.exists(name) or not glob.has_magic(name):
        return [name]
    paths = sorted(path for path in glob.glob(name) if not os.path.isdir(path))
    if not paths:
        raise PathError(f"-d {name}: no file matches it")
    return paths


def open_output(stack: contextlib.ExitStack, name: str, flag: str):
    """A text file to write (``-`` and ``/dev/stdout``: standard output, not reopened, which
    would truncate a redirected stdout)."""
    if name in ("-", "/dev/stdout"):
        return sys.stdout
    try:
        return stack.enter_context(open(name, "w"))
    except OSError as error:
        raise PathError(f"{flag} {name}: cannot write it ({error.strerror})") from None


def check_model_path(name: str | None, flag: str = "-f") -> None:
    """That ``-f`` (or another ``flag``'s file) can be written at the end: its folder exists
    and is writable, and it is not a folder itself."""
    if name is None:
        return
    folder = os.path.dirname(os.path.abspath(name))
    if os.path.isdir(name):
        raise PathError(f"{flag} {name}: is a directory")
    if not os.path.isdir(folder):
        raise PathError(f"{flag} {name}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PathError(f"{flag} {name}: the folder {folder} is not writable")


def remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files that saves of ``path`` killed before their rename left
    behind (``persist.save_model`` names them ``NAME.*.tmp``)."""
    folder, name = os.path.split(os.path.abspath(path))
    for stale in glob.glob(os.path.join(glob.escape(folder), glob.escape(name) + ".*.tmp")):
        with contextlib.suppress(OSError):
            os.unlink(stale)


def silence_stdout() -> None:
    """After a closed output pipe: send what is left for stdout nowhere, so that the
    interpreter's last flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
