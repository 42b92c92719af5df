"""``regcb-stream --dsjson`` against VW's ``--cb_explore_adf --dsjson`` (the installed
``vowpalwabbit``) on every DSJSON file of VW's tests and on cases written from what VW's
parser documents (``parse_example_json.cc``, its parser tests and regression files): the
same number of predictions, each over the same number of actions, and the same exit status.

VW reports a line it refuses and skips it (with ``--strict_parse``, it stops there); the
command stops there with an error naming the line, exit status 1 (with ``--lenient``, it
skips it): so the command predicts as VW ``--strict_parse`` does, and with ``--lenient``
as VW does.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_cli import TRAIN, needs, run_cli

NOT_DSJSON = {
    "cb_test256.json": "VW's plain JSON (--json: labels and _multi at the top of each line, "
                       "no 'c'), not DSJSON",
}
# the flags of VW's own tests on the files (test/core.vwtest.json), and ours of them
FLAGS = {
    "decisionservice.json": ("--epsilon 0.2 --quadratic GT -P 1", ["-q", "GT"]),
    "dsjson_cb.json": ("--epsilon 0.2 --quadratic GT", ["-q", "GT"]),
    "dsjson_cb_part1.json": ("--epsilon 0.2 --quadratic GT", ["-q", "GT"]),
    "dsjson_cb_part2.json": ("--epsilon 0.2 --quadratic GT", ["-q", "GT"]),
}


def widths(predictions: str) -> list[int]:
    """The number of actions of each prediction (``0:0.5,1:0.5`` lines, one per event)."""
    return [line.count(":") for line in predictions.splitlines() if line.strip()]


def vw(path, flags: str = "", errors: list | None = None) -> tuple[int, list[int]]:
    """VW's exit status (in a process of its own: VW aborts on some lines) and prediction
    widths on a file; the errors it reports appended to ``errors``."""
    out = path.with_suffix(".vw.p")
    done = subprocess.run([sys.executable, "-c", "import sys, vowpalwabbit; "
                           "vowpalwabbit.Workspace(sys.argv[1]).finish()",
                           f"--cb_explore_adf --dsjson {flags} -d {path} -p {out}"],
                          capture_output=True, text=True, timeout=120)
    if errors is not None:
        errors += [line for line in (done.stdout + done.stderr).splitlines()
                   if "error" in line]
    return done.returncode, widths(out.read_text()) if out.exists() else []


def ours(path, flags=(), lenient: bool = False) -> tuple[int, list[int]]:
    done = run_cli(["--dsjson", "--quiet", *flags, "-d", str(path), "-p", "-",
                    *(["--lenient"] if lenient else [])])
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, widths(done.stdout)


FILES = sorted(path.name for path in TRAIN.glob("*.json*")) if TRAIN.exists() else []


@pytest.mark.parametrize("name", FILES)
def test_vws_test_files(name):
    if name in NOT_DSJSON:
        pytest.skip(NOT_DSJSON[name])
    path = needs(TRAIN / name)
    vw_flags, our_flags = FLAGS.get(name, ("", []))
    expected = vw(path, vw_flags)
    assert expected[0] == 0 and expected[1]
    assert ours(path, our_flags) == expected


def test_the_shared_files_are_all_known():
    """A new DSJSON file among VW's tests is tested, with its flags if it has any."""
    assert set(FLAGS) | set(NOT_DSJSON) <= set(FILES) or not FILES


EVENT = {"_label_cost": -1.0, "_label_probability": 0.5, "_label_Action": 2,
         "_labelIndex": 1, "EventId": "e1", "Timestamp": "2019-01-08T00:00:00.6480000Z",
         "Version": "1", "a": [2, 1, 3], "p": [0.5, 0.25, 0.25],
         "c": {"_synthetic": False, "User": {"_age": 0, "tier": "gold"},
               "_multi": [{"_tag": "x", "i": {"id": "a"}}, {"i": {"id": "b"}},
                          {"i": {"id": "c"}}]},
         "VWState": {"m": "N/A"}, "_original_label_cost": -0.0}


def event(**changes) -> str:
    """`EVENT` with fields changed (None: removed), as a line."""
    changed = {**EVENT, **changes}
    return json.dumps({k: v for k, v in changed.items() if v is not None})


def context(**changes) -> dict:
    return {**EVENT["c"], **changes}


# lines VW reads (or skips) without an error
READ = {
    # VW's parser regression b1848: an action's array of objects and null
    "array of objects and null": [event(c=context(_multi=[
        {"i": {"id": "a"}, "j": [{"_title": "t"}, {"RVisionTags": {"person": 0.99}}, None]},
        {"i": {"id": "b"}, "j": [{"a": 1}, None]}, {"i": {"id": "c"}}]))],
    "arrays mixing numbers, objects and null": [event(c=context(
        j=[1, None, {"a": 1}, 0, 2], k=[{"a": {"b": 1}}, 3], _multi=[{"x": [None, 1]}] * 3))],
    "nested objects": [event(c=context(User={"geo": {"city": {"name": "x", "n": 2}}}))],
    "nulls": [event(c=context(User=None, u=None, _multi=[None, {"x": 1}, {"x": 2},
                                                         {"x": None}]), EventId=None,
                    pdrop=None, _skipLearn=None, p=None, Timestamp=None)],
    "no shared features": [event(c={"_multi": [{"n": {"x": 4.6, "y": 1}}] * 3})],
    "default namespace": [event(c=context(timeofday="Afternoon", weather="Sunny",
                                          hot=True, cold=False, n=2))],
    "zero values": [event(c=context(A={"F": 0.0}, _multi=[{}, {"B": {"f": 0}}, {}]))],
    "_text": [event(c=context(_text="a b:c  d", _multi=[{"_text": "x y"}] * 3))],
    "pdrop": [event(pdrop=0.9), event(pdrop=0)],
    "labels": [event(_label_Cost=-1, _label_cost=None), event(_label_cost=None),
               event(_labelIndex=None, _label_cost=None, _label_probability=None,
                     _label_Action=None), event(_labelIndex=2), event(_label_cost=0.0)],
    "outcomes and metrics": [event(o=[{"v": 1.0, "EventId": "e1", "ActionTaken": False}],
                                   _ba=[1, 2], pdf=[{"left": 0, "right": 1}], _p=[1])],
    "skipped: _skipLearn": [event(_skipLearn=True), event(_skipLearn=False), event()],
    "skipped: no actions": [event(a=[]), event(a=None), event(a=[], c=None), event()],
    "skipped: reward lines": ['{"EventId": "e1", "v": 1.0}',
                              '{"EventId": "e1", "v": {"reward": 1.0, "value2": 1400.0}}',
                              event()],
    "skipped: not an object": ["[CHECKPOINT INFO LINE]", "", "[1, 2]", event()],
    "duplicate keys": ['{"_skipLearn": true, ' + event()[1:],
                       '{"_labelIndex": 0, ' + event()[1:]],
}
# lines VW refuses (skipped without --strict_parse)
REFUSED = {
    "pdrop 1": [event(pdrop=1)],
    "a string label probability": [event(_label_probability="0.5")],
    "a string label cost": [event(_label_cost="-1")],
    "label index out of range": [event(_labelIndex=3)],
    "a negative label index": [event(_labelIndex=-1)],
    "an array of strings": [event(c=context(j=["a", "b"]))],
    "an array of booleans": [event(c=context(j=[True]))],
    "nested arrays": [event(c=context(j=[[1, 2]]))],
    "an array holding a string after objects": [event(c=context(j=[{"a": 1}, "s"]))],
    "_multi holding a number": [event(c=context(_multi=[{"x": 1}, 3, {"x": 2}]))],
    "_multi holding null after an action": [event(c=context(_multi=[{"x": 1}, None, {}, {}]))],
    "_multi not an array": [event(c=context(_multi={"x": 1}))],
    "nested _multi": [event(c=context(_multi=[{"_multi": [{"x": 1}]}, {}, {}]))],
    "a number EventId": [event(EventId=5)],
    "a number Timestamp": [event(Timestamp=5)],
    "a string _skipLearn": [event(_skipLearn="true")],
    "a string pdrop": [event(pdrop="0.5")],
    "strings in a and p": [event(a=["x"])],
    "a string _original_label_cost": [event(_original_label_cost="x")],
    "a lone surrogate": [event(c=context(u={"f": "\ud800"}))],
    "trailing text": [event() + " x"],
    "two objects": [event() + event()],
}


def write(tmp_path, lines: list[str]):
    path = tmp_path / "case.json"
    path.write_text("\n".join([event(), *lines, event()]) + "\n", encoding="utf-8",
                    errors="surrogatepass")
    return path


@pytest.mark.parametrize("case", sorted(READ))
def test_what_vw_reads(case, tmp_path):
    path = write(tmp_path, READ[case])
    expected = vw(path)
    assert expected[0] == 0
    assert ours(path) == expected


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_vw_refuses(case, tmp_path):
    """VW reports the line and skips it; the command stops there with an error naming it
    (the predictions before it written), or with --lenient skips it as VW does."""
    path = write(tmp_path, REFUSED[case])
    errors = []
    assert vw(path, errors=errors) == (0, [3, 3]) and errors
    done = run_cli(["--dsjson", "--quiet", "-d", str(path), "-p", "-"])
    assert done.returncode == 1 and "error: line 2: " in done.stderr, done.stderr
    assert widths(done.stdout) == [3]
    assert ours(path, lenient=True) == (0, [3, 3])


def test_events_with_a_but_no_actions_are_skipped(tmp_path):
    """An event whose 'a' is not empty but whose 'c' has no actions (no 'c', no
    'c._multi', an empty one): VW makes its shared features extra actions of the next
    event (a defect: 5 actions where the next event has 3); the command skips and counts
    it, as VW skips an event without 'a'."""
    unlabelled = {"_labelIndex": None, "_label_cost": None, "_label_probability": None,
                  "_label_Action": None}
    lines = [event(c=None, **unlabelled), event(c={"u": {"x": 1}}, **unlabelled),
             event(c=context(_multi=[]), **unlabelled)]
    path = write(tmp_path, [f"{line}\n{event()}" for line in lines])
    assert vw(path)[1] != [3] * 5
    done = run_cli(["--dsjson", "-d", str(path), "-p", "-"])
    assert (done.returncode, widths(done.stdout)) == (0, [3] * 5)
    assert "DSJSON lines skipped as VW skips them = 3" in done.stderr
