"""VW's flags beyond RegCB's own, as data: what ``regcb-stream`` does with each.

A VW user types VW's flags out of habit. Each flag of `VW_FLAGS` is *taken* (VW's meaning,
where it has one for RegCB), *ignored* (it changes nothing in VW's contextual bandits either,
or nothing a one-pass stream has) or *refused*: the command stops with one line naming what
to use instead, exit status 2. The parser declares them from this table (`declare`), and the
command-line guide lists them (the tests check the guide against it).

>>> FLAGS["--epsilon"].handling
'refused'
"""

from __future__ import annotations

import argparse
from typing import NamedTuple


class VWFlag(NamedTuple):
    """A VW flag: its names, ``handling`` (taken, ignored or refused), what it does here
    (taken, ignored) or what to use instead (refused), and its value's name (None: a
    switch) and type."""

    names: tuple[str, ...]
    handling: str
    meaning: str
    value: str | None = None
    type: type = str
    many: bool = False  # may be given more than once (each value adds)


def _explorer(flag: str, example: str, value: str | None = None) -> VWFlag:
    """One of VW's explorers: ``regcb-compare`` runs it beside RegCB."""
    return VWFlag((flag,), "refused", f"regcb-stream explores by RegCB; to compare with "
                  f"VW's {flag} use regcb-compare LOG --vw '{example}'", value)


VW_FLAGS = (
    VWFlag(("--cb_type",), "taken", "mtr only, what VW's --regcb runs (a regression of the "
           "observed cost); VW's other cost estimators belong to its other explorers",
           "mtr"),
    VWFlag(("-l", "--learning_rate"), "taken", "--oracle vw: VW's learning rate (default "
           "0.5); the ridge oracles have none (their penalty: --ridge_l2)", "RATE", float),
    VWFlag(("--power_t",), "taken", "--oracle vw: 0.5 only, VW's default, the one it runs",
           "P", float),
    VWFlag(("--l2",), "taken", "--oracle vw: 0 only, VW's default (no weight decay); the "
           "ridge oracles' penalty is --ridge_l2", "L2", float),
    VWFlag(("--passes",), "taken", "1 only: a stream is one pass (to learn a log twice, "
           "give it twice: cat log.dat log.dat | regcb-stream ...)", "N", int),
    VWFlag(("--ignore",), "taken", "drop the namespaces whose names start with any of "
           "these characters (their features and crosses; not the constant)", "ABC",
           many=True),
    VWFlag(("--keep",), "taken", "drop every namespace but those whose names start with "
           "one of these characters (not the constant)", "ABC", many=True),
    VWFlag(("--ignore_linear",), "taken", "the namespaces whose names start with one of "
           "these characters are crossed by -q, not features of their own", "ABC",
           many=True),
    VWFlag(("--hash",), "taken", "strings only, VW's default, the hash regcb-stream computes",
           "strings"),
    VWFlag(("--readable_model",), "taken", "write the learned weights as text at the end, "
           "slot:weight lines (the format: docs/guide/command-line.md)", "FILE"),
    VWFlag(("--invert_hash",), "taken", "--readable_model with the feature names of the -d "
           "files, name:slot:weight lines", "FILE"),
    VWFlag(("--save_resume",), "ignored", "a model file of -f always resumes exactly"),
    VWFlag(("--holdout_off",), "ignored", "no holdout: every example is decided before it "
           "is learned (progressive validation), as in VW's contextual bandits"),
    VWFlag(("-c", "--cache"), "ignored", "no cache file is made: the text is read in one "
                                         "pass, as fast as a cache"),
    VWFlag(("--cache_file",), "ignored", "no cache file is made (see -c)", "FILE"),
    VWFlag(("-k", "--kill_cache"), "ignored", "no cache file is made (see -c)"),
    _explorer("--epsilon", "--epsilon 0.05", "E"),
    _explorer("--squarecb", "--squarecb"),
    _explorer("--cover", "--cover 4", "N"),
    _explorer("--bag", "--bag 4", "N"),
    _explorer("--first", "--first 10", "N"),
    _explorer("--softmax", "--softmax --lambda 10"),
    _explorer("--rnd", "--rnd 3", "N"),
    _explorer("--synthcover", "--synthcover"),
    VWFlag(("--cb",), "refused", "regcb-stream learns while it explores (--cb_explore K); "
           "to evaluate a policy on a logged stream use regcb-ope", "K"),
    VWFlag(("--cb_adf",), "refused", "regcb-stream learns while it explores "
           "(--cb_explore_adf); to evaluate a policy on a logged stream use regcb-ope"),
    VWFlag(("--explore_eval",), "refused", "regcb-compare LOG replays RegCB and VW's "
           "explorers on a logged stream by explore-eval; regcb-ope estimates a policy"),
    VWFlag(("--cbify",), "refused", "regcb-stream reads contextual-bandit examples; "
           "benchmarks on classification data: python -m bench", "K"),
    VWFlag(("--cubic",), "refused", "regcb-stream crosses two namespaces (-q AB)", "ABC"),
    VWFlag(("--audit",), "refused", "regcb-stream prints no audit; --invert_hash FILE "
           "writes each weight with its features' names, --decision_log FILE every decision "
           "with its context and probabilities"),
    VWFlag(("--daemon",), "refused", "regcb-stream serves a pipe: producer | regcb-stream "
           "... -p /dev/stdout answers each example as it arrives"),
    VWFlag(("--port",), "refused", "regcb-stream serves a pipe, not a socket: producer | "
           "regcb-stream ... -p /dev/stdout", "PORT"),
    VWFlag(("-P", "--progress"), "refused", "the progress table has VW's default rows, at "
           "examples 1, 2, 4, 8, ... (--quiet: none)", "N"),
    VWFlag(("--chain_hash",), "refused", "regcb-stream hashes DSJSON's string features as VW "
           "does without --chain_hash"),
    VWFlag(("--json",), "refused", "regcb-stream reads VW text and --dsjson (Decision "
           "Service JSON)"),
)
FLAGS = {name: flag for flag in VW_FLAGS for name in flag.names}


def declare(parser: argparse.ArgumentParser) -> None:
    """Add `VW_FLAGS` to ``parser``: the taken and ignored in a group of their own, the
    refused hidden from ``--help`` (the guide lists them)."""
    group = parser.add_argument_group(
        "VW's other flags (docs/guide/command-line.md lists the refused)")
    for flag in VW_FLAGS:
        if flag.handling == "taken":
            group.add_argument(*flag.names, type=flag.type, metavar=flag.value,
                               help=flag.meaning, action="append" if flag.many else None)
        elif flag.handling == "ignored":
            group.add_argument(*flag.names, nargs=0 if flag.value is None else None,
                               metavar=flag.value, action=_Ignored,
                               help=f"ignored: {flag.meaning}")
        else:
            parser.add_argument(*flag.names, nargs=0 if flag.value is None else "?",
                                action=_Refused, help=argparse.SUPPRESS)


class _Ignored(argparse.Action):
    """A flag that changes nothing here: taken and dropped."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        pass


class _Refused(argparse.Action):
    """A flag this tool does not take: one line naming the alternative, exit status 2."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"VW's {option_string} is not taken: {FLAGS[option_string].meaning}")


def markdown() -> str:
    """`VW_FLAGS` as the command-line guide's table (the tests check the guide has it)."""
    rows = ["| VW flag | here | what it does, or what to use instead |", "|---|---|---|"]
    for flag in VW_FLAGS:
        names = ", ".join(f"`{name}{'' if flag.value is None else ' ' + flag.value}`"
                          for name in flag.names)
        rows.append(f"| {names} | {flag.handling} | {flag.meaning.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"
