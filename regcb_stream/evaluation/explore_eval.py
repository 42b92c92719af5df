r"""Explore-eval: how an exploring, *learning* policy would have done on a logged stream, as
VW's ``--explore_eval`` estimates it, for RegCB and VW's explorers alike.

Each labelled example of a log (ADF: the logged action ``a``, its cost and probability
``p``) is offered to the explorer, which gives its distribution ``pi``. The example is
kept with probability ``m * pi(a) / p`` (rejection sampling), and the explorer learns only
the kept examples, with the probability ``pi(a)``: the kept examples are then distributed
as if the explorer had chosen the actions itself, so its costs on them estimate its online
(progressive) cost. ``m`` is VW's multiplier: fixed (``multiplier``), or the running least
``p / pi(a)`` so that no threshold exceeds 1; with ``target_rate`` a further factor steers
the kept fraction toward that rate (VW's ``rate_target``; a threshold above 1 then makes
the learner's example weight that threshold, and counts a violation). The uniform draws are
VW's (``merand48``, seeded by ``seed`` as VW's ``--random_seed``), so VW's explorers,
driven through `VWExplorer`, keep the examples VW's own ``--explore_eval`` keeps.

Reported (`ExploreEvalResult`): the explore-eval estimate (the mean reward of the kept
examples, with a normal interval), VW's ``average loss`` (the progressive IPS cost of the
explorer's distributions on every labelled example), the counts VW prints, and the trace of
the estimate along the log (for plots).

>>> import io
>>> log = io.StringIO("shared | s_1 s_2\n0:1.0:0.5 | a_1 b_1\n | a_2 b_2\n\n"
...                   " | b_1 c_1\n0:0.0:0.5 | b_2 c_2\n\n")
>>> result = explore_eval(read_log(log), VWExplorer("--epsilon 0.2 --noconstant"))
>>> result.kept, round(result.multiplier, 6), round(result.ips_loss, 6)
(2, 0.555556, 0.5)
"""

from __future__ import annotations

import array
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from regcb_stream.io.vw_text import ADFExample, Label, iter_adf, iter_cb_lines

_A, _C, _MASK = 0xEECE66D5DEECE66D, 2147483647, (1 << 64) - 1


class Merand48:
    """VW's uniform draws (``merand48``): a 64-bit linear congruence, 23 bits of it as the
    mantissa of a float in [0, 1).

    >>> draw = Merand48(0)
    >>> [round(draw(), 6) for _ in range(3)]
    [8e-06, 0.048357, 0.036452]
    """

    def __init__(self, seed: int = 0):
        self.state = seed & _MASK

    def __call__(self) -> float:
        self.state = (_A * self.state + _C) & _MASK
        return ((self.state >> 25) & 0x7FFFFF) / float(1 << 23)


class LoggedExample(NamedTuple):
    """One ADF example of a log: its text lines, label, and the example as parsed (its
    shared features as text, `vw_text.ADFExample`)."""

    lines: tuple[str, ...]
    label: Label | None
    parsed: ADFExample


def read_log(lines: Iterable[str], dsjson: bool = False, text: bool = True
             ) -> Iterator[LoggedExample]:
    """The ADF examples of VW text (blank lines between examples), or of a DSJSON log (an
    event per line). Examples without actions are skipped: VW decides nothing for them and
    they hold no label. ``text``: keep each example's lines (`VWExplorer` needs them;
    without, one parse of the whole stream, which reads repeated action lines once)."""
    if dsjson:
        yield from _dsjson_log(lines)
        return
    if not text:
        for example in iter_adf(lines, shared_text=True):
            if example.actions:
                yield LoggedExample((), example.label, example)
        return
    block: list[str] = []
    for raw in itertools.chain(lines, [""]):
        text = raw.rstrip("\r\n")
        if text.strip():
            block.append(text)
            continue
        if block:
            example, = iter_adf(block, shared_text=True)
            if example.actions:
                yield LoggedExample(tuple(block), example.label, example)
            block = []


ACTIONS = "_action"  # the namespace of the action lines `as_adf` writes


def as_adf(lines: Iterable[str], n_actions: int) -> Iterator[str]:
    """A single-line log (VW's ``--cb_explore K``: label actions 1..K) as ADF text, for
    explore-eval (VW's ``--explore_eval`` reads ADF only): per example a shared line with
    its features, K action lines ``|_action a1`` ... ``|_action aK`` (the label, if it has
    a probability, on the logged action's line), an empty line. Crossing every namespace
    with the actions' (``-q :_``) gives each action weights of its own, as the single-line
    learners have. Errors name the line (`vw_text.VWParseError`).

    >>> list(as_adf(["2:0.5:0.25 |u x:1", "|u y"], 2))  # doctest: +NORMALIZE_WHITESPACE
    ['shared |u x:1', '|_action a1', '0:0.5:0.25 |_action a2', '',
     'shared |u y', '|_action a1', '|_action a2', '']
    """
    actions = [f"|{ACTIONS} a{k}" for k in range(1, n_actions + 1)]
    for line in iter_cb_lines(lines, n_actions):
        yield f"shared |{line.body}"
        label = line.label
        at = label.action - 1 if label is not None and label.prob is not None else -1
        for k, action in enumerate(actions):
            yield f"0:{label.cost!r}:{label.prob!r} {action}" if k == at else action
        yield ""


def _dsjson_log(lines: Iterable[str]) -> Iterator[LoggedExample]:
    from regcb_stream.io.dsjson import iter_dsjson_adf

    for example in iter_dsjson_adf(lines, shared_text=True):
        if not isinstance(example, ADFExample):
            raise ValueError(f"line {example.line_no}: a reward line; explore-eval reads "
                             "joined logs")
        yield LoggedExample((example.text,), example.label, example)


@dataclass
class ExploreEvalResult:
    """What an explore-eval run found (VW's names where VW prints them)."""

    name: str
    examples: int = 0  # labelled examples seen
    kept: int = 0  # VW's update count
    weighted_kept: float = 0.0  # VW's weighted update count
    violations: int = 0  # thresholds above 1
    multiplier: float = 1.0  # final multiplier
    rate: float = 1.0  # the target rate's last factor
    ips_loss: float = 0.0  # VW's average loss
    weights: list = field(default_factory=list, repr=False)  # pi(a) / p, per example
    rewards: list = field(default_factory=list, repr=False)  # the logged rewards, -cost
    kept_rewards: list = field(default_factory=list, repr=False)
    trace: list = field(default_factory=list, repr=False)  # (example, estimate) on the way

    @property
    def ips_rewards(self) -> list[float]:
        """Each labelled example's IPS term ``pi(a) r / p`` (their mean: -``ips_loss``)."""
        return [w * r for w, r in zip(self.weights, self.rewards)]

    @property
    def estimate(self) -> float:
        """The explorer's online reward, estimated: the mean reward of the kept examples."""
        return float(np.mean(self.kept_rewards)) if self.kept_rewards else math.nan

    def interval(self, alpha: float = 0.05) -> tuple[float, float]:
        """A normal ``1 - alpha`` interval of `estimate`."""
        n = len(self.kept_rewards)
        if n < 2:
            return (math.nan, math.nan)
        z = NormalDist().inv_cdf(1 - alpha / 2)
        half = z * float(np.std(self.kept_rewards, ddof=1)) / math.sqrt(n)
        return (self.estimate - half, self.estimate + half)


class Explorer:
    """What `explore_eval` drives: ``prepare`` for the next examples of the log (read a
    block at a time), ``pmf`` of an example (its label hidden), ``learn`` of a kept one."""

    name = "explorer"

    def prepare(self, examples: list[LoggedExample]) -> None:
        """The next examples ``pmf`` will be asked about, in order."""

    def pmf(self, example: LoggedExample) -> np.ndarray:
        raise NotImplementedError

    def learn(self, example: LoggedExample, cost: float, prob: float, weight: float) -> None:
        raise NotImplementedError


def explore_eval(log: Iterable[LoggedExample], explorer: Explorer, *, seed: int = 0,
                 multiplier: float | None = None, target_rate: float | None = None,
                 every: int = 100, progress: Callable[[int], None] | None = None
                 ) -> ExploreEvalResult:
    """Replay a log through an exploring learner by rejection sampling (VW's
    ``--explore_eval``; see the module's docstring). ``every``: examples between points of
    the trace; ``progress``: called with each example's number."""
    f32 = _float32  # (VW's thresholds, multiplier and rate are floats: the same draws kept)
    result = ExploreEvalResult(explorer.name)
    m = f32(1.0 if multiplier is None else multiplier)
    target = None if target_rate is None else f32(target_rate)
    draw, rate_sum, rate, ips_total, kept_total = Merand48(seed), 0.0, 1.0, 0.0, 0.0
    weights, rewards, kept_rewards = result.weights, result.rewards, result.kept_rewards
    for number, example in enumerate(_prepared(log, explorer), 1):
        label = example.label
        pmf = explorer.pmf(example)
        if progress is not None:
            progress(number)
        if label is None or label.prob is None or label.cost is None:
            continue
        found = 0 <= label.action < len(pmf)
        prob = f32(float(pmf[label.action])) if found else 0.0
        ips_total += prob * label.cost / label.prob
        weights.append(prob / label.prob)
        rewards.append(-label.cost)
        threshold = f32(prob / f32(label.prob))
        if multiplier is None and target is None and found and threshold > 0:
            m = min(m, f32(1.0 / threshold))
        threshold = f32(threshold * m)
        rate = f32(f32(target * result.examples) / rate_sum) if (
            target is not None and rate_sum > 0) else 1.0
        rate_sum = f32(rate_sum + threshold)
        result.examples += 1
        if found:
            result.violations += threshold > 1 + 1e-6
            if target is not None:
                threshold = f32(threshold * rate)
            if draw() < threshold:
                weight = max(threshold, 1.0)
                explorer.learn(example, label.cost, prob, weight)
                result.kept += 1
                result.weighted_kept += weight
                kept_rewards.append(-label.cost)
                kept_total -= label.cost
        if result.examples % every == 0:
            result.trace.append((number, kept_total / result.kept if result.kept else math.nan))
    result.multiplier, result.rate = m, rate if result.examples else 1.0
    result.ips_loss = ips_total / result.examples if result.examples else math.nan
    return result


def _float32(value: float, _slot=array.array("f", [0.0])) -> float:
    """``value`` rounded to the nearest float32 (one IEEE operation done in double and then
    rounded gives float32 arithmetic's result)."""
    _slot[0] = value
    return _slot[0]


def _prepared(log: Iterable[LoggedExample], explorer: Explorer, size: int = 1024
              ) -> Iterator[LoggedExample]:
    """The log's examples, each block of them given to ``explorer.prepare`` first."""
    iterator = iter(log)
    while block := list(itertools.islice(iterator, size)):
        explorer.prepare(block)
        yield from block


class VWExplorer(Explorer):
    """One of VW's explorers (``vw --cb_explore_adf FLAGS``, e.g. ``--epsilon 0.05`` or
    ``--squarecb``), predicting and learning through VW's Python module as VW's
    ``--explore_eval`` drives it. A weight above 1 (``target_rate``) cannot be given to VW's
    example this way: such examples are learned with weight 1 and counted (``unweighted``)."""

    def __init__(self, flags: str = ""):
        from vowpalwabbit import Workspace

        self.name = f"vw {flags}".strip()
        self.flags = flags
        self.unweighted = 0
        self._vw = Workspace(f"--cb_explore_adf {flags} --quiet")

    def pmf(self, example: LoggedExample) -> np.ndarray:
        return np.asarray(self._vw.predict(list(_unlabelled(example))), dtype=float)

    def learn(self, example: LoggedExample, cost: float, prob: float, weight: float) -> None:
        self.unweighted += weight != 1.0
        lines = list(_unlabelled(example))
        at = _action_line(example, example.label.action)
        lines[at] = f"0:{cost!r}:{prob!r} {lines[at].lstrip()}"
        self._vw.learn(lines)


class RegCBExplorer(Explorer):
    """A `regcb_stream.RegCB` learner (its defaults unless given; VW's feature hashing)
    on the log's features as ``regcb-stream`` encodes them (VW's ``-q`` crosses).

    Its distribution does not change until it learns, so the examples ahead are decided
    together, again after each kept example: about half as many as have lately been offered
    between two kept examples (from ``ahead`` to 32 times that), which balances the
    decisions a kept example makes void against the cost of a call."""

    def __init__(self, learner=None, interactions: Iterable[str] = (), hash_bits: int = 18,
                 name: str = "regcb (defaults)", ahead: int = 8):
        from regcb_stream.io.adf_encode import AdfEncoder
        from regcb_stream.learner import RegCB

        self.name = name
        self.learner = RegCB(hash_bits=hash_bits, allow_out_of_range=True) if (
            learner is None) else learner
        columns = self.learner.encoder.columns
        self._encoder = AdfEncoder(lambda keys: columns("h", keys), interactions, True,
                                   hash_bits)
        self.ahead = ahead
        self._gap, self._offered = 2.0 * ahead, 0  # examples between kept ones (mean)
        self._rows: list = []  # (examples, their rows), by runs of as many actions
        self._at: dict[int, tuple] = {}  # id of an example -> (run, position)
        self._decided: tuple | None = None  # (run, first, Decision) of the examples ahead

    def prepare(self, examples: list[LoggedExample]) -> None:
        self._rows, self._at, self._decided = [], {}, None
        for _, run in itertools.groupby(examples, key=lambda ex: len(ex.parsed.actions)):
            run = list(run)
            block = self._encoder.encode_block([ex.parsed.shared for ex in run],
                                               [ex.parsed.actions for ex in run])
            if block.errors:
                i, error = min(block.errors.items())
                raise ValueError(f"line {run[i].parsed.line_no}: {error.detail}")
            for i, ex in enumerate(run):
                self._at[id(ex)] = (len(self._rows), i)
            self._rows.append(block.rows)

    def pmf(self, example: LoggedExample) -> np.ndarray:
        run, i = self._at[id(example)]
        decided = self._decided
        if decided is None or decided[0] != run or not decided[1] <= i < decided[1] + len(
                decided[2].pmf):
            rows = self._rows[run]
            ahead = min(32 * self.ahead, max(self.ahead, int(self._gap / 2)))
            stop = min(i + ahead, len(rows.index))
            part = rows[i:stop]
            self._decided = decided = (run, i, self.learner.decide_many([{}] * (stop - i),
                                                                          part))
        self._offered += 1
        return decided[2].pmf[i - decided[1]]

    def learn(self, example: LoggedExample, cost: float, prob: float, weight: float) -> None:
        run, i = self._at[id(example)]
        rows, a = self._rows[run], example.label.action
        run_, first, decision = self._decided
        candidates = None if decision.candidates is None else decision.candidates[
            i - first][None, :, a]
        chosen = rows[i:i + 1, [a]]
        self.learner.learn_many([{}], chosen, [-cost], [prob], [weight], candidates)
        self._decided = None
        self._gap += (self._offered - self._gap) / 8
        self._offered = 0


def _unlabelled(example: LoggedExample) -> Iterator[str]:
    """The example's lines with the action lines' labels removed."""
    for line in example.lines:
        yield line if line.startswith("shared") or "|" not in line else line[line.index("|"):]


def _action_line(example: LoggedExample, action: int) -> int:
    """The index in ``lines`` of the 0-based action's line."""
    shared = example.lines[0].startswith("shared")
    return action + shared
