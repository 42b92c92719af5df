"""Input lines read ahead as far as data is available, never waiting for more.

A stream is decided a block of examples at a time, but the interactive protocol (write an
example, read its prediction, then write the next) must keep working: `ReadAhead` reads
whatever the descriptor has (up to a chunk), and `ready` tells the caller whether another
line can be had without waiting. A file is always ready; a pipe from a process that waits
for a prediction is not, so that example is decided at once. Gzip input (a file or a pipe
whose bytes start with gzip's magic number) is decompressed as it is read, as VW reads
``.gz`` files; gzip input that is corrupt or cut short gives its lines up to the damage,
then an `InputError` naming the first line it could not read.

>>> read, write = os.pipe()
>>> _ = os.write(write, b"1:0.5:0.2 | a\\n2 | b\\n3 | c")
>>> lines = ReadAhead(read)
>>> it = iter(lines)
>>> next(it), lines.ready()
('1:0.5:0.2 | a', True)
>>> next(it), lines.ready()  # the rest of line 3 has not been written yet
('2 | b', False)
>>> os.close(write)
>>> lines.take(10), lines.take(10)
(['3 | c'], [])
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import select
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator

try:
    from regcb_stream.io import _scan
except ImportError:  # not built (a source tree without `pip install`): line by line
    _scan = None


def _decoded_lines(data) -> list[str]:
    """The lines of bytes split at each ``\\n``, decoded (``_scan.lines``' reference)."""
    return bytes(data).decode("utf-8", "surrogateescape").split("\n")


_lines = _decoded_lines if _scan is None else _scan.lines

CHUNK = 1 << 16
MAX_LINE = 1 << 28  # bytes: a longer line (``-d /dev/zero``) is refused, not buffered for ever
GZIP_MAGIC = b"\x1f\x8b"


class InputError(ValueError):
    """Input that cannot be read from a line on (corrupt or cut gzip), named by that line."""

    def __init__(self, line_no: int, reason: str):
        super().__init__(f"line {line_no}: {reason}; every line before it was read")
        self.line_no = line_no


class ReadAhead:
    """The lines of a file descriptor, without their ``\\n`` (bytes that are not UTF-8
    become surrogate escapes and fail their own line)."""

    def __init__(self, fd: int, chunk: int = CHUNK):
        self._fd = fd
        self._file = stat.S_ISREG(os.fstat(fd).st_mode)  # always ready: never asked
        self._chunk = chunk
        self._lines: list[str] = []
        self._next = 0  # the first line of _lines not yet given out
        self._tail = bytearray()  # the start of a line whose end has not been read
        self._gzip: zlib._Decompress | None = None  # with gzip input
        self._started = False
        self._done = 0  # lines given out before those of _lines (and of earlier files)
        self._damage: str | None = None  # why the input cannot be read further

    def __iter__(self) -> Iterator[str]:
        while self._next < len(self._lines) or self._fill():
            self._next += 1
            yield self._lines[self._next - 1]

    def take(self, limit: int) -> list[str]:
        """Up to ``limit`` lines: at least one (waiting for it), then as many as are
        available without waiting; ``[]`` at the end of the input."""
        out: list[str] = []
        while len(out) < limit:
            if self._next == len(self._lines):
                if out and not self.ready():
                    break
                try:
                    if not self._fill():
                        break
                except InputError:
                    if not out:
                        raise
                    break  # (raised again at the next take, after these lines)
            stop = min(len(self._lines), self._next + limit - len(out))
            out += self._lines[self._next:stop]
            self._next = stop
        return out

    def take_known(self, known: dict, out: list, limit: int) -> int:
        """Append to ``out`` the values of the buffered lines that follow, as long as they
        are keys of ``known`` (at most ``limit``); return how many lines that took."""
        if _scan is None:
            return 0
        start = self._next
        self._next = _scan.known_run(self._lines, start, known, out, limit)
        return self._next - start

    def take_adf(self, memo: dict, heads: dict, max_lines: int, line_no: int, *types
                 ) -> tuple[list, int]:
        """The whole ADF examples of the buffered lines that follow, as far as
        ``_scan.adf_examples`` takes them (``line_no``: the number of the next line;
        ``types``: the example's and the label's, and the example's remaining fields), and
        how many lines they took (consumed)."""
        if _scan is None:
            return [], 0
        start = self._next
        self._next, examples = _scan.adf_examples(self._lines, start, memo, heads, max_lines,
                                                  line_no, *types)
        return examples, self._next - start

    def _read(self) -> bytes:
        """The next bytes of the input, decompressed if it is gzip ("" at its end; damaged
        gzip: what it holds before the damage, then an `InputError`)."""
        if self._damage:
            raise InputError(self._done + 1, self._damage)
        data = os.read(self._fd, self._chunk)
        if not self._started:
            self._started = True
            while len(data) == 1:  # (a pipe may deliver the magic number in two reads)
                more = os.read(self._fd, self._chunk)
                if not more:
                    break
                data += more
            if data[:2] == GZIP_MAGIC:
                self._gzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
        if self._gzip is None:
            return data
        before = self._gzip.copy()
        try:
            out = self._inflate(data)
        except zlib.error as error:  # what the chunk holds before the damage, byte by byte
            self._gzip, out = before, bytearray()
            with contextlib.suppress(zlib.error):
                for i in range(len(data)):
                    out += self._inflate(data[i:i + 1])
            self._damage = f"the gzip input is corrupt ({str(error).split(': ')[-1]})"
            return bytes(out) or self._read()
        if not data and not self._gzip.eof:
            self._damage = "the gzip input ends before its end of stream"
            return self._read()
        return out if out or not data else self._read()

    def _inflate(self, data: bytes) -> bytes:
        out = self._gzip.decompress(data)
        while self._gzip.unused_data:  # concatenated gzip members, as gzip reads them
            rest = self._gzip.unused_data
            self._gzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
            out += self._gzip.decompress(rest)
        return out

    def ready(self) -> bool:
        """Whether a line is buffered or the descriptor has data (or its end) to read."""
        return (self._file or self._next < len(self._lines)
                or bool(select.select([self._fd], [], [], 0)[0]))

    def _fill(self) -> bool:
        """Read until a line is complete (or the input ends); False at the end."""
        self._done += len(self._lines)
        self._lines, self._next = [], 0
        while not self._lines:
            data = self._read()
            if not data:
                if not self._tail:
                    return False
                self._lines.append(self._tail.decode("utf-8", "surrogateescape"))
                self._tail = bytearray()
                return True
            cut = data.rfind(b"\n") + 1  # complete lines, decoded at once
            if not cut:
                self._tail += data
                if len(self._tail) > MAX_LINE:
                    self._damage = f"longer than {MAX_LINE >> 20} MiB (no end of line)"
                    raise InputError(self._done + 1, self._damage)
                continue
            if self._tail:
                data = self._tail + data
                cut += len(self._tail)
            self._lines = _lines(memoryview(data)[:cut - 1])
            self._tail = bytearray(data[cut:])
        return True


def taker(lines: Iterable[str]) -> Callable[[int], list[str]]:
    """``take(limit)`` of some lines: a `ReadAhead`'s own (what is available, at least one),
    or the next ``limit`` lines of any other iterable (``[]`` at its end)."""
    take = getattr(lines, "take", None)
    return take or functools.partial(_islice, iter(lines))


def _islice(lines: Iterator[str], limit: int) -> list[str]:
    return list(itertools.islice(lines, limit))


class Concatenated:
    """The lines of several `ReadAhead` one after another (``-d`` naming several files),
    read ahead as each of them is."""

    def __init__(self, readers: list[ReadAhead]):
        self._readers = readers

    def __iter__(self) -> Iterator[str]:
        while self._readers:
            yield from self._readers[0]
            self._pop()

    def take(self, limit: int) -> list[str]:
        while self._readers:
            lines = self._readers[0].take(limit)
            if lines:
                return lines
            self._pop()
        return []

    def _pop(self) -> None:
        """On to the next file, its lines numbered after the last one's."""
        done = self._readers.pop(0)
        if self._readers:
            self._readers[0]._done = done._done

    def take_known(self, known: dict, out: list, limit: int) -> int:
        return self._readers[0].take_known(known, out, limit) if self._readers else 0

    def take_adf(self, *args) -> tuple[list, int]:
        return self._readers[0].take_adf(*args) if self._readers else ([], 0)

    def ready(self) -> bool:
        return not self._readers or self._readers[0].ready()
