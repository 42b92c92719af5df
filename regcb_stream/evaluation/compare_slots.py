"""``regcb-compare --ccb_explore_adf`` and ``--slates``: RegCB's slot decisions or VW's
explorers, on a logged CCB or slates stream (VW text, or DSJSON with ``--dsjson``), side by
side.

    regcb-compare ccb_log.dat --ccb_explore_adf
    regcb-compare ccb_log.json --ccb_explore_adf --dsjson --vw "--epsilon 0.1" -q UA
    regcb-compare slates_log.dat --slates

Each candidate is its own command over the log, as a user runs it: ``regcb-stream
--ccb_explore_adf`` (``--slates``; ``--regcb``: its learner flags) and VW's
``--ccb_explore_adf`` (``--slates``; ``--vw``: its explorer flags, ``-q`` crosses for VW
alone: RegCB crosses every shared and slot feature with every action's by itself), each in
a process of its own, all at once. Each decides every example's slots, writes them (``-p``:
a distribution per slot, given its own earlier draws, read as it is drawn from: over its
sum, which VW's ``--regcbopt`` ties need), then learns the example's logged outcomes, so
each decision is made before its outcome is learned (progressive).

A CCB slot with a logged outcome (action ``a``, cost ``c``, probability ``p``) scores
``pi(a) / p * -c``, the candidate's probability of the logged action over the logging
policy's: under the conditional contextual bandit's model (a slot's reward depends on the
context, the slot and its action alone) its expectation is the candidate's reward in that
slot, whatever each policy's earlier slots drew, since the candidate's draws are its own. A
candidate's estimate is the ranking's: the mean over the examples with a logged outcome of
their slots' sum (as ``regcb-ope``'s ``ranking``), with each slot's IPS and SNIPS in rows
of their own. A slate (one reward ``r`` for its ``m`` slots, each slot's logged action
``a_j`` with probability ``p_j``) scores ``r (sum_j pi_j(a_j) / p_j - (m - 1))``, the
pseudo-inverse estimator (Swaminathan et al., NIPS 2017: unbiased when the reward is
additive over the slots and each policy draws each slot's action on its own, as both
commands do), over the slates whose every slot has a logged outcome. Intervals by batch
means (about 100 batches of consecutive examples). The baselines: uniform over each slot's
offered actions (a CCB slot's: given the logged earlier slots), and the logging policy (its
logged rewards).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import NamedTuple

import numpy as np

from regcb_stream.evaluation.estimates import VW_RUN, Batches, Row, estimate_row
from regcb_stream.evaluation.ope import logged_slots
from regcb_stream.io.dsjson import iter_slots_dsjson
from regcb_stream.io.vw_slots import FLAGS, SlotsExample, iter_slots

DEFAULT_VW = ("--epsilon 0.05", "--squarecb", "--regcb", "--regcb --regcbopt")


def compare_slots(path: str, regcb: list[str] | None = None, vw: list[str] | None = None,
                  *, kind: str = "ccb", interactions=(), dsjson: bool = False,
                  points: int = 100) -> list[Row]:
    """The rows of the comparison of the ``kind`` (``"ccb"`` or ``"slates"``) log at
    ``path``: each candidate's (a CCB ranking's, then its slots'; a slate's), the
    baselines last."""
    flag = FLAGS[kind]
    with open(path, encoding="utf-8") as lines:
        examples = list((iter_slots_dsjson if dsjson else iter_slots)(lines))
    other = next((example for example in examples if example.kind != kind), None)
    if other is not None:
        raise ValueError(f"line {other.line_no}: a {other.kind} example: {flag} compares "
                         f"{kind} logs")
    scored = [(i, j, outcome) for i, example in enumerate(examples)
              for j, outcome in _outcomes(example)]
    if not scored:
        raise ValueError("the log has no slot with an outcome (and a cost): nothing to "
                         "estimate" if kind == "ccb" else "the log has no slate with a "
                         "cost and every slot's outcome: nothing to estimate")
    batches = Batches(max(1, len(examples) // points), len(examples))
    score = _rows if kind == "ccb" else _slate_rows
    quadratic = " ".join(f"-q {spec}" for spec in interactions)
    with tempfile.TemporaryDirectory(prefix="regcb-compare-") as folder:
        runs = [_start(f"RegCB {flags}".strip(), [
            sys.executable, "-m", "regcb_stream", flag, "--quiet",
            *(["--dsjson"] if dsjson else []), *flags.split(), "-d", path, "-p"],
            os.path.join(folder, f"regcb{k}.p")) for k, flags in enumerate(regcb or [""])]
        runs += [_start(f"vw {flags}", [sys.executable, "-c", VW_RUN, (
            f"{flag} {flags} {quadratic} {'--dsjson' if dsjson else ''} --quiet "
            f"-d {path} -p")], os.path.join(folder, f"vw{k}.p"))
            for k, flags in enumerate(vw if vw is not None else DEFAULT_VW)]
        rows = []
        for name, predictions, process in runs:
            _, err = process.communicate()
            if process.returncode:
                raise RuntimeError(f"{name} failed: {err.strip()[-300:]}")
            slots = _read_slots(predictions, examples, name)
            rows += score(name, [slots[i][j].get(o.action, 0.0) / o.prob
                                 for i, j, o in scored], scored, batches)
    uniform = [1.0 / o.offered / o.prob for _, _, o in scored]
    rows += score("uniform random", uniform, scored, batches)
    rows += score("logging policy", [1.0] * len(scored), scored, batches)
    return rows


class _Outcome(NamedTuple):
    """A logged slot's outcome: its action (in the pool; a slate's slot: in its own
    actions), reward (a slate's slot: the slate's), probability and how many actions the
    slot offered (given the logged earlier slots)."""

    action: int
    reward: float
    prob: float
    offered: int


def _outcomes(example: SlotsExample):
    """Each slot with a logged outcome and a cost, as ``(slot, _Outcome)``: a slate's
    slots if it has a cost and each of them an outcome (none otherwise)."""
    logged = list(logged_slots(example))
    slate = example.kind == "slates"
    if slate and (example.cost is None or len(logged) < len(example.slots)):
        return
    for j, _, pool, label in logged:
        reward = -(example.cost if slate else label.cost)
        yield j, _Outcome(example.slots[j].outcome.action, reward, label.prob, len(pool))


def _start(name: str, command: list[str], predictions: str):
    """A candidate's process, writing its ``-p`` lines to ``predictions``."""
    if command[1] == "-c":  # (VW's flags: one argument)
        command = command[:-1] + [f"{command[-1]} {predictions}"]
    else:
        command = command + [predictions]
    return name, predictions, subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.PIPE, text=True)


def _read_slots(path: str, examples: list[SlotsExample], name: str) -> list[list[dict]]:
    """Each example's slots' distributions (``{action: probability}``) from ``-p`` lines:
    a line per slot (empty: no action left for it), then an empty line."""
    with open(path, encoding="utf-8") as lines:
        text = lines.read().split("\n")
    out, at = [], 0
    for example in examples:
        slots = text[at:at + len(example.slots)]
        at += len(example.slots) + 1
        if len(slots) < len(example.slots) or at > len(text) or text[at - 1] != "":
            raise RuntimeError(f"{name}: its predictions end before the example of line "
                               f"{example.line_no}, or are not a line per slot")
        out.append([_normalized(dict((int(a), float(p)) for a, p in (
            pair.split(":") for pair in line.split(",") if pair))) for line in slots])
    return out


def _normalized(pmf: dict) -> dict:
    """A slot's distribution as it is drawn from: over its sum (VW's sampler normalizes,
    and VW's ``--regcbopt`` writes probability 1 for each tied action)."""
    total = sum(pmf.values())
    return {a: p / total for a, p in pmf.items()} if total > 0 else pmf


def _rows(name: str, weights: list[float], scored: list, batches: Batches) -> list[Row]:
    """The ranking's row (the sum of each example's slots' terms) and each slot's."""
    weights = np.asarray(weights, dtype=float)
    rewards = np.array([o.reward for _, _, o in scored])
    positions = np.array([i for i, _, _ in scored], dtype=int)
    examples, at = np.unique(positions, return_inverse=True)
    totals = np.bincount(at, weights * rewards, len(examples))
    ranking = estimate_row(name, np.ones(len(examples)), totals, examples, batches)
    ranking.snips = ranking.snips_low = ranking.snips_high = None  # (per slot: below)
    slot_of = np.array([j for _, j, _ in scored])
    rows = [ranking]
    for j in np.unique(slot_of).tolist():
        mask = slot_of == j
        rows.append(estimate_row(f"  slot {j + 1}", weights[mask], rewards[mask],
                                 positions[mask], batches))
    return rows


def _slate_rows(name: str, weights: list[float], scored: list, batches: Batches
                ) -> list[Row]:
    """A slate's row: each slate's reward times the pseudo-inverse weight ``sum_j
    pi_j(a_j) / p_j - (m - 1)`` (``weights``: each slot's ``pi_j(a_j) / p_j``)."""
    positions = np.array([i for i, _, _ in scored], dtype=int)
    examples, first, at = np.unique(positions, return_index=True, return_inverse=True)
    m = np.bincount(at, minlength=len(examples))
    pseudo = np.bincount(at, np.asarray(weights, dtype=float), len(examples)) - (m - 1)
    rewards = np.array([o.reward for _, _, o in scored])[first]  # (each slate's, once)
    row = estimate_row(name, np.ones(len(examples)), pseudo * rewards, examples, batches)
    row.snips = row.snips_low = row.snips_high = None  # (weights that can be negative)
    return [row]
