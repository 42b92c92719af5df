r"""Streaming parser for Vowpal Wabbit contextual-bandit text (``--cb_explore K`` and ADF).

Line syntax (VW 9): ``[label] [tag]|ns[:scale] feat[:value] ... |ns2 ...`` (features: see
`vw_features`). Before the first ``|``, text up to a tab is ignored and the rest split on spaces;
the last word is the tag if it starts with ``'`` or touches the ``|`` (so VW reads ``1:0:0.5|f``
as a *tag*: rejected here as ambiguous); the other word is the label ``action:cost:probability``.
A probability outside (0, 1] or a non-numeric field is an error (VW clamps or zeroes it);
``action:cost`` gives ``Label(prob=None)``, a test label to VW (do not learn from it); a bare
``action`` means no label. Single-line (`iter_cb`): actions 1..K. ADF (`iter_adf`): optional
``shared`` first line, one line per action (the labelled one's action field is ignored, as VW
does: `Label.action` is its 0-based position), then an empty line; the first line's tag is the
example's (VW prints that one). Whitespace-only lines are not separators to VW (they are
featureless examples): rejected. EOF ends an example unless ``strict_eof``. A trailing ``\r``
and a BOM are stripped like VW; open files with ``newline="\n"`` (VW does not split at ``\r``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import numpy as np

from regcb_stream.io.vw_features import Features, FieldError, number, parse_namespaces

try:
    from regcb_stream.io import _scan
except ImportError:  # not built (a source tree without `pip install`): line by line
    _scan = None


class Label(NamedTuple):
    """A CB label; ``prob is None`` marks VW's test label (``action:cost``)."""
    action: int
    cost: float
    prob: float | None


class Line(NamedTuple):
    """One parsed text line."""
    features: Features
    label: Label | None
    tag: str | None
    shared: bool = False

    def with_features(self, features) -> Line:
        """The line with these features (``_replace``'s result, at a tuple's cost: a
        stream's every line goes through it)."""
        return tuple.__new__(Line, (features, self.label, self.tag, self.shared))


class CBExample(NamedTuple):
    """A single-line ``--cb_explore K`` example (label actions are 1..K)."""
    features: Features
    label: Label | None
    tag: str | None
    line_no: int


class ADFExample(NamedTuple):
    """A multi-line ADF example; ``label.action`` is the 0-based labelled action line,
    ``line_no`` and ``text`` are those of its first line. ``shared`` is the feature text
    of the shared line (after its first ``|``) when read with ``shared_text=True``."""
    shared: Features | str | None
    actions: tuple[Features, ...]
    label: Label | None
    tag: str | None
    line_no: int
    text: str = ""
    weight: float = 1.0  # the label's importance weight (DSJSON's pdrop)
    event_id: str | None = None  # DSJSON's EventId


class VWParseError(ValueError):
    """A malformed line; `rule` names the broken rule, `line_no` is 1-based."""

    def __init__(self, line_no: int, text: str, rule: str, detail: str) -> None:
        shown = text if len(text) <= 72 else text[:69] + "..."
        super().__init__(f"line {line_no}: {shown!r} - {detail}")
        self.line_no, self.text, self.rule, self.detail = line_no, text, rule, detail

    def __reduce__(self):  # keep picklable despite the custom signature
        return (VWParseError, (self.line_no, self.text, self.rule, self.detail))


OnError = Callable[[VWParseError], None]
#: an ADF example's fields after its text, as read from text (their defaults)
_ADF_TAIL = tuple(ADFExample._field_defaults[f] for f in ADFExample._fields[6:])
_NO_HEAD = Line((), None, None)


def parse_line(text: str, n_actions: int | None = None) -> Line:
    """Parse one line (no trailing newline); `n_actions` None means ADF rules.

    Raises
    ------
    FieldError
        With a rule name and a message (the iterators wrap it into `VWParseError`).

    Examples
    --------
    >>> ln = parse_line("2:1.5:0.25 'id7 |a x:2 y", n_actions=3)
    >>> ln.features, ln.label, ln.tag
    ((('a', (('x', 2.0), ('y', 1.0))),), Label(action=2, cost=1.5, prob=0.25), 'id7')
    """
    head, body = split_line(text, n_actions)
    return head.with_features(parse_namespaces(body))


def split_line(text: str, n_actions: int | None = None) -> tuple[Line, str]:
    """The line without its features (label, tag, ``shared``) and its feature text (after
    the first ``|``), for parsing the features later; errors as `parse_line`.

    >>> split_line("1:0:0.5 t|a x:2", n_actions=2)
    (Line(features=(), label=Label(action=1, cost=0.0, prob=0.5), tag='t', shared=False), 'a x:2')
    """
    _check_encoding(text)
    bar = text.find("|")
    if bar < 0 and text.isspace():  # VW: an example (an ADF action) without features
        return _NO_HEAD, ""
    if bar < 0:
        raise FieldError("no_bar", "line has no '|' before the features")
    if "\r" in text or "\n" in text:
        raise FieldError("control", "carriage return or newline inside the line")
    return (_with_head((), text[:bar], n_actions) if bar else _NO_HEAD), text[bar + 1:]


def _check_encoding(text: str) -> None:
    """Refuse a line read from bytes that are not UTF-8 (files are decoded with
    ``errors="surrogateescape"``, so reading never fails mid-stream)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise FieldError("encoding", "the line is not valid UTF-8 text") from None


def _with_head(features: Features, head: str, n_actions: int | None) -> Line:
    """Complete a line from the text before its first ``|``: label, tag, ``shared``."""
    tab = head.find("\t")
    if tab >= 0:
        head = head[tab + 1:]
    words = [w for w in head.split(" ") if w]
    tag = None
    if words and (head[-1] != " " or words[-1][0] == "'"):
        tag = words.pop()
        if tag[0] == "'":
            tag = tag[1:] or None
        elif tag == "shared" or (":" in tag and tag.partition(":")[0].isdigit()):
            raise FieldError("tag", f"{tag!r} touches '|', so VW reads it as a tag, not a "
                             "label; put a space before '|'")
    if not words:
        return Line(features, None, tag)
    if words == ["shared"]:
        if n_actions is not None:
            raise FieldError("shared", "'shared' lines only exist in multi-line (ADF) input")
        return Line(features, None, tag, True)
    return Line(features, _parse_label(words, n_actions), tag)


def _parse_label(words: list[str], n_actions: int | None) -> Label | None:
    if len(words) > 1:
        detail = ("a shared line cannot carry a label" if "shared" in words else
                  "the 'tag must be the last word before '|'" if "'" in "".join(words) else
                  f"more than one label: {' '.join(words)!r}")
        raise FieldError("label", detail)
    parts = words[0].split(":")
    act = parts[0]
    if len(parts) > 3 or not act or act == "shared":
        raise FieldError("label", f"label {words[0]!r} is not action:cost:probability")
    if n_actions is not None:  # ADF ignores the action field, as VW does
        if not (act.isascii() and act.isdigit()):
            raise FieldError("label", f"action {act!r} is not an integer")
        if not 1 <= int(act) <= n_actions:
            raise FieldError("action_range", f"action {act} is outside 1..{n_actions}")
    if len(parts) == 1:
        return None
    cost = number(parts[1], "cost", "cost")
    prob = number(parts[2], "probability", "probability") if len(parts) == 3 else None
    if prob is not None and not 0.0 < prob <= 1.0:
        raise FieldError("probability", f"probability {parts[2]} is outside (0, 1]")
    return Label(int(act) if n_actions else 0, cost, prob)


def clean_line(raw: str) -> str:
    """A line without its newline, a trailing carriage return and a BOM (as VW reads it)."""
    raw = raw[:-1] if raw[-1:] == "\n" else raw
    raw = raw[:-1] if raw[-1:] == "\r" else raw
    return raw[1:] if raw[:1] == "\ufeff" else raw


def _fail(err: VWParseError, on_error: OnError | None) -> None:
    if on_error is None:
        raise err
    on_error(err)


def iter_cb(lines: Iterable[str], n_actions: int,
            on_error: OnError | None = None) -> Iterator[CBExample]:
    """Yield single-line ``--cb_explore K`` examples; empty lines are skipped (as VW does).

    Parameters
    ----------
    lines : iterable of str
        Text lines, with or without their newline (a file object, ``io.StringIO``, list).
    n_actions : int
        K; label actions must be in 1..K.
    on_error : callable, optional
        Called with each `VWParseError`, whose line is then skipped; if None it is raised.

    Examples
    --------
    >>> [ex.label for ex in iter_cb(["1:0:0.5 |a x", "", "|a y"], 2)]
    [Label(action=1, cost=0.0, prob=0.5), None]
    """
    for line in iter_cb_lines(lines, n_actions, on_error):
        try:
            features = parse_namespaces(line.body)
        except FieldError as exc:
            _fail(VWParseError(line.line_no, line.text, exc.rule, exc.detail), on_error)
            continue
        yield CBExample(features, line.label, line.tag, line.line_no)


class CBLine(NamedTuple):
    """A single-line example whose features are still text (`body`, after the first
    ``|``): what `iter_cb_lines` yields, for parsing many bodies at once."""
    label: Label | None
    tag: str | None
    body: str
    line_no: int
    text: str


def iter_cb_lines(lines: Iterable[str], n_actions: int,
                  on_error: OnError | None = None) -> Iterator[CBLine]:
    """`iter_cb` up to the features: labels and tags are parsed and checked, the feature
    text is left for the caller (`vw_encode.TextEncoder` parses a block of them at once).

    >>> [(ex.label.action, ex.body) for ex in iter_cb_lines(["2:0:0.5 |a x:1", ""], 2)]
    [(2, 'a x:1')]
    """
    if n_actions < 1:
        raise ValueError(f"n_actions must be >= 1, got {n_actions}")
    heads: dict[str, Line | FieldError] = {}  # a stream repeats its labels: parse each once
    for no, raw in enumerate(lines, 1):
        text = clean_line(raw)
        if not text:
            continue
        bar = text.find("|")
        key = text[:bar] if bar > 0 and "\r" not in text and "\n" not in text else None
        head = heads.get(key) if key is not None else None
        if head is not None and not text.isascii():  # the cached head vouches for itself only
            try:
                _check_encoding(text)
            except FieldError as exc:
                head, key = exc, None
        if head is None:
            try:
                head, _ = split_line(text, n_actions)
            except FieldError as exc:
                head = exc
            if key is not None:
                if len(heads) >= 4096:
                    heads.clear()
                heads[key] = head
        if isinstance(head, FieldError):
            _fail(VWParseError(no, text, head.rule, head.detail), on_error)
            continue
        yield CBLine(head.label, head.tag, text[bar + 1:] if bar >= 0 else "", no, text)


class CBBlock(NamedTuple):
    """The labels, tags and feature texts of a block of single-line examples, as
    `read_cb_block` gives them: ``action`` (1-based; 0: no label or a test label, which is
    not learned), ``cost`` and ``prob`` arrays, and the lines whose label is malformed
    (position -> `FieldError`; their entries are empty)."""
    action: np.ndarray
    cost: np.ndarray
    prob: np.ndarray
    tags: list
    bodies: list[str]
    errors: dict[int, FieldError]


def read_cb_block(texts: list[str], n_actions: int) -> CBBlock:
    """`iter_cb_lines` for a block of non-empty lines (without their newline): plain labels
    (``action:cost:prob`` or none, no tag) are read by the compiled scanner, the other
    lines one by one as `iter_cb_lines` reads them.

    >>> block = read_cb_block(["2:1:0.5 |a x:1", "|a y", "3:0:0.5 't |a z", "9:0:1 |a"], 3)
    >>> block.action.tolist(), block.prob.tolist(), block.tags, block.bodies
    ([2, 0, 3, 0], [0.5, 1.0, 0.5, 1.0], [None, None, 't', None], ['a x:1', 'a y', 'a z', ''])
    >>> block.errors[3].detail
    'action 9 is outside 1..3'
    """
    n = len(texts)
    action, cost, prob = np.zeros(n, np.int64), np.zeros(n), np.ones(n)
    tags, bodies, errors = [None] * n, [""] * n, {}
    slow = range(n)
    if _scan is not None:
        kind, plain, costs, probs, bars = _scan.labels(list(texts), n_actions)
        kind = np.frombuffer(kind, np.int8)
        learnable = kind == 1
        action[learnable] = np.frombuffer(plain, np.int64)[learnable]
        cost[learnable] = np.frombuffer(costs, float)[learnable]
        prob[learnable] = np.frombuffer(probs, float)[learnable]
        bars = np.frombuffer(bars, np.int64).tolist()
        bodies = [line[bar + 1:] for line, bar in zip(texts, bars)]
        slow = np.flatnonzero(kind == 0).tolist()
    for i in slow:
        try:
            head, bodies[i] = split_line(texts[i], n_actions)
        except FieldError as error:
            errors[i], bodies[i] = error, ""
            continue
        tags[i] = head.tag
        if head.label is not None and head.label.prob is not None:
            action[i], cost[i], prob[i] = head.label
    return CBBlock(action, cost, prob, tags, bodies, errors)


class _Reader:
    """State of `iter_adf`: the example being read, the features of plain action lines and
    the parsed text before the ``|`` of labelled ones (a stream repeats both)."""

    __slots__ = ("acts", "first", "heads", "label", "lazy", "max_lines", "memo", "shared",
                 "size", "start", "tag")

    def __init__(self, size: int, max_lines: int, lazy: bool) -> None:
        self.memo: dict[str, Features] = {}  # raw text of a plain action line -> features
        self.heads: dict[str, Line] = {}  # text before '|' -> label and tag
        self.size, self.max_lines, self.lazy = size, max_lines, lazy
        self.reset()

    def reset(self) -> None:
        self.acts: list[Features] = []
        self.shared, self.label, self.tag, self.start, self.first = None, None, None, 0, ""

    def pop(self) -> ADFExample:
        ex = ADFExample(self.shared, tuple(self.acts), self.label, self.tag, self.start,
                        self.first)
        self.reset()
        return ex

    def parse(self, raw: str, text: str) -> Line:
        _check_encoding(text)
        bar = raw.find("|")
        feats = self.memo.get(raw[bar:]) if bar >= 0 else None
        if feats is not None:  # same features as a plain line seen before: parse the head only
            head = text[:text.find("|")]
            return self._head(head).with_features(feats) if head else Line(feats, None, None)
        head, body = split_line(text)
        if head.shared and self.lazy:
            return head.with_features(body)
        line = head.with_features(parse_namespaces(body))
        if line.label is None and line.tag is None and not line.shared:
            if len(self.memo) >= self.size:
                self.memo.clear()
            self.memo[raw] = line.features
        return line

    def _head(self, head: str) -> Line:
        line = self.heads.get(head)
        if line is None:
            if "\r" in head or "\n" in head:
                raise FieldError("control", "carriage return or newline inside the line")
            line = _with_head((), head, None)
            if len(self.heads) >= 4096:
                self.heads.clear()
            self.heads[head] = line
        return line

    def add(self, line: Line, no: int, text: str) -> None:
        begin = not self.acts and self.shared is None
        if line.shared:
            if not begin:
                raise FieldError("shared", "'shared' must be the first line of an example")
            self.shared = line.features
        elif len(self.acts) >= self.max_lines:
            raise FieldError("too_long", f"more than {self.max_lines} action lines; "
                             "is the empty separator line missing?")
        else:
            if line.label is not None:
                if self.label is not None:
                    raise FieldError("two_labels", "second labelled line in one example (an "
                                     "ADF example ends with an empty line; single-line data "
                                     "needs --cb_explore K)")
                self.label = Label(len(self.acts), line.label.cost, line.label.prob)
            self.acts.append(line.features)
        if begin:
            self.start, self.first, self.tag = no, text, line.tag


def iter_adf(lines: Iterable[str], on_error: OnError | None = None, *, strict_eof: bool = False,
             max_lines: int = 10_000, cache_size: int = 65_536,
             shared_text: bool = False, first_line: int = 1, runs: bool = False
             ) -> Iterator[ADFExample | list[ADFExample]]:
    """Yield ADF examples, each as soon as its terminating empty line is read.

    Parameters
    ----------
    lines : iterable of str
        Text lines (see `iter_cb`). Repeated empty lines are ignored.
    on_error : callable, optional
        Called with each `VWParseError`; the example is dropped and reading resumes after the
        next empty line. If None the error is raised.
    strict_eof : bool
        Treat an example cut off by the end of input as an error (VW accepts it).
    max_lines : int
        Most action lines allowed in one example.
    cache_size : int
        Size of the memo of plain action lines' features (cleared when full).
    shared_text : bool
        Leave the shared line's features as text (``ADFExample.shared``), for parsing a
        block of them at once (`vw_encode.AdfEncoder.encode_block`); errors in that text
        are then found there.
    first_line : int
        The number of the first line (a part of a longer input).
    runs : bool
        Yield the whole examples the compiled reader takes at once (``shared_text``, from
        a `ReadAhead`) as one list.

    Examples
    --------
    >>> ex, = iter_adf(["shared 't1 |u a", "|x b", "0:-1:0.5 |x c", ""])
    >>> ex.label, ex.tag, len(ex.actions), ex.shared
    (Label(action=1, cost=-1.0, prob=0.5), 't1', 2, (('u', (('a', 1.0),)),))
    """
    st = _Reader(cache_size, max_lines, shared_text)
    memo, acts, skipping, no = st.memo, st.acts, False, first_line - 1
    known = getattr(lines, "take_known", None)  # `ReadAhead`: runs of repeated lines at once
    # and whole examples of repeated lines, compiled (the shared line's features as text)
    examples = getattr(lines, "take_adf", None) if shared_text else None
    for raw in lines:
        no += 1
        feats = memo.get(raw)
        if feats is not None and (acts or st.shared is not None) and len(acts) < max_lines:
            acts.append(feats)  # fast path: a repeated plain action line inside an example
            if known is not None:  # and the lines like it that follow
                no += known(memo, acts, max_lines - len(acts))
            continue
        text = clean_line(raw)
        if not text:
            if acts or st.shared is not None:
                yield st.pop()
                acts = st.acts
            skipping = False
            if examples is not None:
                taken, n_lines = examples(memo, st.heads, max_lines, no + 1, ADFExample, Label,
                                          _ADF_TAIL)
                no += n_lines
                if runs and taken:
                    yield taken
                else:
                    yield from taken
        elif not skipping:
            try:
                st.add(st.parse(raw, text), no, text)
            except FieldError as exc:
                st.reset()
                acts, skipping = st.acts, not text.isspace()  # resume after a "   " separator
                _fail(VWParseError(no, text, exc.rule, exc.detail), on_error)
    if acts or st.shared is not None:
        if not strict_eof:
            yield st.pop()
        else:
            _fail(VWParseError(st.start, st.first, "eof", f"example starting here "
                               f"({len(st.acts)} action lines) has no ending empty line"), on_error)
