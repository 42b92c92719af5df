"""``regcb-stream --scheduler``: a labelled log replayed on a Dask cluster, with the
serial run's output.

The input (``-d``: files or glob patterns, read one after another) is indexed first:
where each example starts, byte and line. The epochs of the learner's schedule then run
as `parallel.run_epochs` runs them. A short epoch is read and replayed here by the
command's own `Driver`. A long one is cut into parts: each worker reads its part from the
files and replays it with a `Driver` of its own and the epoch's state (the model file's
bytes), its predictions and progress rows kept in memory; here they are written in the
log's order and the parts' label statistics learned. The predictions, the progress table
and the model file are the serial run's, byte for byte (`regcb_stream.stream.parallel` says
why).

It needs plain files the workers can read at the same paths (not stdin, not gzip: they
cannot be split), an epoch schedule and every example labelled (each example's label
count is then its position). An error names its line as the serial run does, after the
predictions of the examples before it are written.
"""

from __future__ import annotations

import functools
import io
import os

import numpy as np

from regcb_stream.command.driver import Driver
from regcb_stream.io.read_ahead import GZIP_MAGIC
from regcb_stream.io.vw_text import VWParseError
from regcb_stream.stream import parallel

BOM = b"\xef\xbb\xbf"
NO_LABEL = "no label: --scheduler needs every example labelled"


class LogFiles:
    """Text files read one after another (each file's last line ends with it), by byte
    ranges of each.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("1:1:0.5 | x\\n\\n2:0:0.5 | y")
    >>> _ = (folder / "b.txt").write_text("1:0:0.5 | z\\n")
    >>> files = LogFiles([str(folder / "a.txt"), str(folder / "b.txt")])
    >>> starts, lines = files.examples(adf=False, dsjson=False)
    >>> starts.tolist(), lines.tolist()
    ([[0, 0], [0, 13], [1, 0], [1, 12]], [1, 3, 4])
    >>> files.read(starts[1], starts[3])
    ['2:0:0.5 | y', '1:0:0.5 | z']
    """

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.sizes = [os.path.getsize(path) for path in paths]
        for path in paths:
            with open(path, "rb") as file:
                if file.read(2) == GZIP_MAGIC:
                    raise ValueError(f"-d {path}: gzip input cannot be split between "
                                     "workers; decompress it first")

    def examples(self, adf: bool, dsjson: bool) -> tuple[np.ndarray, np.ndarray]:
        """Where each example starts, ``(file, byte)`` (one more row: the end), and the
        number of its first line. An example is a non-empty line (VW text, DSJSON), or a
        run of them (ADF)."""
        where, blank = [], []
        for number, path in enumerate(self.paths):
            with open(path, "rb") as file:
                data = file.read()
            starts = _line_starts(data)
            where.append(np.stack([np.full(len(starts), number), starts], axis=1))
            blank.append(_blank_lines(data, starts, whitespace=dsjson))
        where.append(np.array([[len(self.paths) - 1, self.sizes[-1]]]))
        lines, blank = np.concatenate(where), np.concatenate(blank)
        first = ~blank
        if adf and not dsjson:
            first &= np.r_[True, blank[:-1]]
        chosen = np.flatnonzero(first)
        return lines[np.r_[chosen, len(blank)]], chosen + 1

    def read(self, start, end) -> list[str]:
        """The lines from ``start`` up to ``end`` (``(file, byte)`` each), without their
        newlines (bytes that are not UTF-8 as surrogate escapes, as `ReadAhead`)."""
        out: list[str] = []
        for number in range(int(start[0]), int(end[0]) + 1):
            first = int(start[1]) if number == start[0] else 0
            last = int(end[1]) if number == end[0] else self.sizes[number]
            if last <= first:
                continue
            with open(self.paths[number], "rb") as file:
                file.seek(first)
                data = file.read(last - first)
            text = data[:-1] if data.endswith(b"\n") else data
            out += text.decode("utf-8", "surrogateescape").split("\n")
        return out


def _line_starts(data: bytes) -> np.ndarray:
    """Byte offsets of the lines of a file (none if it is empty)."""
    newlines = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    starts = np.r_[0, newlines + 1]
    return starts[starts < len(data)] if len(data) else starts[:0]


def _blank_lines(data: bytes, starts: np.ndarray, whitespace: bool) -> np.ndarray:
    """Which lines hold no example: empty once the newline, a carriage return and a BOM
    are gone (`clean_line`), or, with ``whitespace`` (DSJSON), only whitespace."""
    ends = np.r_[starts[1:] - 1, len(data) - (data[-1:] == b"\n")]
    raw = np.frombuffer(data, np.uint8)
    short = ends - starts <= 4
    if whitespace and len(starts):
        short |= np.isin(raw[np.minimum(starts, len(raw) - 1)], list(b" \t\r\x0b\x0c"))
    blank = ends == starts
    for i in np.flatnonzero(short & ~blank).tolist():
        text = data[starts[i]:ends[i]].removesuffix(b"\r").removeprefix(BOM)
        blank[i] = not (text.strip() if whitespace else text)
    return blank


class FileParts:
    """`parallel.run_epochs`' parts of a log in files, replayed by the command's
    ``driver`` here and by drivers like it on the workers."""

    def __init__(self, driver: Driver, files: LogFiles):
        driver.learner = _Labelled(driver.learner)
        self.driver, self.files = driver, files
        self.starts, self.lines = files.examples(driver.settings.adf, driver.settings.dsjson)
        options = {"legacy": driver.legacy, "first_only": driver.first_only,
                   "vw_compat": driver.vw_compat}
        self.task = functools.partial(_file_task, files, driver.settings, options)

    def __len__(self) -> int:
        return len(self.lines)

    def local(self, learner, start: int, stop: int) -> None:
        before = learner.n_labels
        self.driver.run(self.files.read(self.starts[start], self.starts[stop]),
                        first_line=int(self.lines[start]))
        _check_labelled(learner.n_labels - before, stop - start, int(self.lines[start]))

    def where(self, start: int, stop: int) -> tuple:
        return self.starts[start], self.starts[stop], int(self.lines[start]), stop - start

    def take(self, start: int, stop: int, payload: tuple) -> None:
        text, calls, error = payload
        sink = self.driver.predictions
        if sink is not None and text:
            sink.flush()  # (the text before it, then the part's bytes as they are)
            buffer = getattr(sink, "buffer", None)
            buffer.write(text) if buffer is not None else sink.write(text.decode())
            (buffer or sink).flush()
        progress = self.driver.progress
        for name, args in calls:
            if name == "events_without_actions":
                progress.events_without_actions.extend(*args)
            else:
                getattr(progress, name)(*args)
        if error is not None:
            raise error


def replay(driver: Driver, paths: list[str], client, trace: list | None = None) -> None:
    """Replay the examples of the files ``paths`` through ``driver`` (its learner learns
    them), the epochs' long parts on the Dask ``client``'s workers (``trace``: as
    `parallel.replay`'s)."""
    learner = driver.learner
    parts = FileParts(driver, LogFiles(paths))
    parallel.run_epochs(learner, len(parts), parts, client, trace=trace)


def _file_task(files: LogFiles, settings, options: dict, state: bytes, first: int, start,
               end, first_line: int, n: int) -> tuple | None:
    """A part of an epoch, on a worker (`parallel.run_part`): its predictions' text, its
    progress calls and its error (None)."""
    def replay(learner, pieces: list) -> tuple:
        part, sink, progress = _PartLearner(learner, first, pieces), io.StringIO(), _Recorder()
        error = None
        try:
            Driver(part, settings, sink, progress, learn=True, **options).run(
                files.read(start, end), first_line=first_line)
            _check_labelled(part.n_labels - first, n, first_line)
        except (VWParseError, ValueError, TypeError) as failure:
            error = failure if isinstance(failure, VWParseError) else ValueError(str(failure))
        progress.calls.append(("events_without_actions", (progress.events_without_actions,)))
        text = sink.getvalue().encode()  # (bytes cross as they are; text is encoded again)
        return text, progress.calls, error

    return parallel.run_part(state, replay)


class _Labelled:
    """The command's learner, refusing an example without a label (the driver then names
    its line)."""

    def __init__(self, learner):
        self._learner = learner

    def __getattr__(self, name: str):
        return getattr(self._learner, name)

    def replay(self, contexts, actions, played, *labels, **options):
        if (np.asarray(played) < 0).any():
            raise ValueError(NO_LABEL)
        return self._learner.replay(contexts, actions, played, *labels, **options)


class _PartLearner(_Labelled):
    """The learner a part's `Driver` drives: it decides with the epoch's frozen state and
    appends its labels' statistics to ``pieces``, piece by piece, instead of learning
    them (`parallel.replay_part` refuses an example without a label)."""

    def __init__(self, learner, first_label: int, pieces: list):
        super().__init__(learner)
        self.n_labels, self.pieces = first_label, pieces

    def replay(self, contexts, actions, played, rewards, probs=None, weights=None):
        decision = parallel.replay_part(self._learner, contexts, actions, played, rewards,
                                        probs, weights, self.n_labels, self.pieces)
        self.n_labels += len(played)
        return decision


class _Recorder:
    """A part's progress table: the calls, for the command's table to make in order."""

    def __init__(self):
        self.calls: list = []
        self.events_without_actions: list[int] = []

    def update_block(self, *args) -> None:
        self.calls.append(("update_block", args))

    def note(self, text: str) -> None:
        self.calls.append(("note", (text,)))


def _check_labelled(labels: int, examples: int, first_line: int) -> None:
    """(DSJSON events without actions are neither decided nor labelled.)"""
    if labels != examples:
        raise ValueError(f"the {examples} examples from line {first_line} on carry "
                         f"{labels} labels: --scheduler needs every example labelled")
