"""The command as a Unix tool: paths checked before any work, Ctrl-C at a block boundary
(and held while the run closes its outputs and saves its model), a closed output pipe,
outputs that fail named by their flags, one-line errors.

>>> with Interrupts() as interrupts:
...     interrupts.start()
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
    waiting for input. Held too before `start` and after `hold` (``pending`` says whether
    one came). ``final``: the process ends after it, SIGINT stays held (ignored). Outside
    the main thread, SIGINT is left as it is."""

    def __init__(self, final: bool = False):
        self.pending = False
        self._busy = True  # (until `start`)
        self._held = False
        self._final = final
        self._previous = None

    def __enter__(self) -> Interrupts:
        with contextlib.suppress(ValueError):  # not the main thread
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN if self._final else self._previous)

    def start(self) -> None:
        """Raise SIGINT at once from now on, outside blocks (one held before: now)."""
        self._busy = False
        if self.pending:
            raise KeyboardInterrupt

    def _handle(self, signum, frame) -> None:
        if not self._busy:
            raise KeyboardInterrupt
        self.pending = True

    def hold(self) -> None:
        """Hold every SIGINT from now on (the run is over: its outputs are closed, its
        summary written and its model saved whatever comes)."""
        self._busy = True
        self._held = True

    @contextlib.contextmanager
    def block(self):
        """A block of work that a Ctrl-C does not cut in two."""
        self._busy = True
        try:
            yield
        finally:
            self._busy = self._held
        if self.pending and not self._held:
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


class OutputError(Exception):
    """A write to an output that failed (one line, naming its flag and path)."""


class Output:
    """A text output named by its flag: a write that fails (a full disk, ``/dev/full``)
    raises `OutputError` naming them; a closed pipe stays a ``BrokenPipeError``."""

    def __init__(self, file, flag: str, name: str):
        self._file, self._flag, self._name = file, flag, name

    def write(self, text: str) -> None:
        self._do(self._file.write, text)

    def flush(self) -> None:
        self._do(self._file.flush)

    def close(self) -> None:
        """Close the file (standard output: flush it). After a failed write what is left
        unwritten is dropped, the error was already raised."""
        if self._file is sys.stdout:
            return self.flush()
        try:
            self._do(self._file.close)
        finally:
            with contextlib.suppress(OSError):
                self._file.close()  # (closed even when the last flush failed)

    def _do(self, method, *args) -> None:
        try:
            method(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            if self._file is sys.stdout:
                silence_stdout()  # (the interpreter's last flush must not fail again)
            raise OutputError(f"{self._flag} {self._name}: cannot write it "
                              f"({error.strerror or error})") from None


def open_output(stack: contextlib.ExitStack, name: str, flag: str) -> Output:
    """A text file to write (``-`` and ``/dev/stdout``: standard output, not reopened, which
    would truncate a redirected stdout), as an `Output`."""
    if name in ("-", "/dev/stdout"):
        return Output(sys.stdout, flag, name)
    try:
        return Output(stack.enter_context(open(name, "w")), flag, name)
    except OSError as error:
        raise PathError(f"{flag} {name}: cannot write it ({error.strerror})") from None


def check_model_path(name: str | None, flag: str = "-f") -> None:
    """That ``-f`` (or another ``flag``'s file) can be written at the end: its folder exists
    and is writable, and it is not a folder itself (nor, for ``-f``, whose file is written
    beside it and renamed over it, a device or a pipe)."""
    if name is None:
        return
    folder = os.path.dirname(os.path.abspath(name))
    if os.path.isdir(name):
        raise PathError(f"{flag} {name}: is a directory")
    if flag == "-f" and os.path.exists(name) and not os.path.isfile(name):
        raise PathError(f"{flag} {name}: is not a regular file (a model file is written "
                        "beside it, then renamed over it)")
    if not os.path.isdir(folder):
        raise PathError(f"{flag} {name}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PathError(f"{flag} {name}: the folder {folder} is not writable")


def silence_stdout() -> None:
    """After a closed output pipe: send what is left for stdout nowhere, so that the
    interpreter's last flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
