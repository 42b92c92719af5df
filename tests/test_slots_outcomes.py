"""The production loop of multi-slot decisions (``--ccb_explore_adf`` or ``--slates`` with
``--decision_log``, ``--reward_wait`` and ``--default_reward``): CCB and slates DSJSON
decision logs read back by our reader, regcb-ope and VW, and slot (or slate) rewards that
arrive later."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from test_slots import SLATES, ccb_stream
from vowpalwabbit import Workspace
from vowpalwabbit.pyvw import CCBLabelType

from regcb_stream.command.main import main
from regcb_stream.evaluation.ope import main as ope_main
from regcb_stream.io.decision_log import slot_outcome, slots_context_of, slots_line
from regcb_stream.io.dsjson import iter_slots_dsjson
from regcb_stream.io.slot_events import SlotReward, iter_slot_events
from regcb_stream.io.vw_slots import feature_dict, iter_slots
from regcb_stream.io.vw_text import VWParseError
from regcb_stream.persist import load_model

CCB = ["--ccb_explore_adf", "--dsjson"]
NO_COST = float(np.finfo(np.float32).max)  # VW's cost of an outcome without _label_cost


def event(t: int, user: int = 0, side: list[int] | None = None) -> str:
    """A CCB DSJSON event without outcomes: 4 actions, 3 slots (the first named "top",
    the third taking actions ``side``, by default 0, 2 and 3)."""
    return json.dumps({"EventId": f"e{t}", "c": {
        "User": {"id": f"u{user}"},
        "_multi": [{"Action": {"id": f"a{i}", "price": 1 + i}} for i in range(4)],
        "_slots": [{"_id": "top", "Slot": {"place": "top"}}, {"Slot": {"place": "mid"}},
                   {"Slot": {"place": "side"}, "_inc": side or [0, 2, 3]}]}})


def reward(t: int, slot, value: float) -> str:
    return json.dumps({"EventId": f"e{t}", "_slot": slot, "v": value})


def run(tmp_path, name: str, text: str, *flags) -> tuple[str, str]:
    """The -p output and the decision log of the command on ``text``."""
    data, out, log = (tmp_path / f"{name}.{ext}" for ext in ("json", "p", "log"))
    data.write_text(text)
    assert main(["-d", str(data), "-p", str(out), "--decision_log", str(log), "--quiet",
                 *flags]) == 0
    return out.read_text(), log.read_text()


def blocks(predictions: str) -> list[list[str]]:
    """Each example's -p lines (a slot's line: ``action:probability,...``)."""
    return [block.split("\n") for block in predictions.strip("\n").split("\n\n")]


# -- the decision log ----------------------------------------------------------------------

def test_the_log_of_ccb_text_reads_back_as_the_examples_with_the_printed_draws(tmp_path,
                                                                               capsys):
    text = ccb_stream(60, seed=4)
    data, out, log = tmp_path / "d.txt", tmp_path / "p.txt", tmp_path / "log.json"
    data.write_text(text)
    assert main(["--ccb_explore_adf", "-d", str(data), "-p", str(out), "--decision_log",
                 str(log), "--quiet"]) == 0
    lines = log.read_text().splitlines()
    examples, logged = list(iter_slots(text.splitlines())), list(iter_slots_dsjson(lines))
    assert len(lines) == len(logged) == len(examples) == 60
    labelled = 0
    for line, back, example, shown in zip(lines, logged, examples, blocks(out.read_text())):
        assert feature_dict(back.shared) == feature_dict(example.shared)
        assert [feature_dict(a) for a in back.actions] == [feature_dict(a)
                                                           for a in example.actions]
        assert [feature_dict(s.features) for s in back.slots] == [
            feature_dict(s.features) for s in example.slots]
        outcomes = json.loads(line)["_outcomes"]
        for entry, printed, given, read in zip(outcomes, shown, example.slots, back.slots):
            pairs = [pair.split(":") for pair in printed.split(",")]
            assert entry["_a"] == [int(a) for a, _ in pairs]  # the drawn action first
            assert entry["_p"] == pytest.approx([float(p) for _, p in pairs], abs=5e-7)
            if given.outcome.action == entry["_a"][0]:  # the input's label is the draw's
                labelled += 1
                assert read.outcome[:3] == (entry["_a"][0], given.outcome.cost,
                                            entry["_p"][0])
            else:
                assert read.outcome is None and "_label_cost" not in entry
    assert 0 < labelled < 150
    assert len({json.loads(line)["EventId"] for line in lines}) == 60
    without = tmp_path / "q.txt"  # the log draws nothing: -p is the same without it
    assert main(["--ccb_explore_adf", "-d", str(data), "-p", str(without), "--quiet"]) == 0
    assert without.read_text() == out.read_text()
    capsys.readouterr()
    assert ope_main(["-d", str(log), "--ccb_explore_adf", "--dsjson"]) == 0
    assert "slot 0 ips" in capsys.readouterr().out


def vw_features(ws, examples) -> list[collections.Counter]:
    """Each parsed example's (hash, value) features (shared, actions, slots)."""
    rows = [collections.Counter((h, round(v, 6)) for h, v in ex.iter_features())
            for ex in examples]
    return rows


def test_vw_reads_the_log_as_the_examples_and_learns_from_it(tmp_path):
    """VW's --ccb_explore_adf --dsjson parser: the features of VW's text parser on the
    input, a slot per slot, each labelled slot's outcome."""
    text = ccb_stream(30, seed=5)
    _, log = run(tmp_path, "text", text, "--ccb_explore_adf")
    text_ws = Workspace("--ccb_explore_adf --quiet")
    json_ws = Workspace("--ccb_explore_adf --dsjson --quiet")
    for line, example in zip(log.splitlines(), text.strip().split("\n\n")):
        ours, theirs = json_ws.parse(line), text_ws.parse(example.splitlines())
        assert vw_features(json_ws, ours) == vw_features(text_ws, theirs)
        entries = json.loads(line)["_outcomes"]
        slots = [ex.get_label().outcome for ex in ours
                 if ex.get_label().type == CCBLabelType.SLOT]
        assert len(slots) == len(entries) == 3
        for outcome, entry in zip(slots, entries):
            pairs = [(a.action, a.score) for a in outcome.action_probs]
            assert pairs == [(a, pytest.approx(p)) for a, p in zip(entry["_a"], entry["_p"])]
            cost = entry.get("_label_cost", NO_COST)  # (VW learns nothing of a slot of none)
            assert outcome.cost == pytest.approx(cost)
        json_ws.learn(ours)
        json_ws.finish_example(ours)
        text_ws.finish_example(theirs)
    json_ws.finish()
    text_ws.finish()


def test_the_log_of_dsjson_keeps_each_events_context_and_slot_ids(tmp_path):
    events = [event(0), event(1, side=[9]),  # (e1's third slot: no action it may take)
              '{"EventId":"cb","c":{"u":{"f":1},"_multi":[{"a":1},{"b":1}]}}']
    _, log = run(tmp_path, "ev", "\n".join(events) + "\n", *CCB)
    written = [json.loads(line) for line in log.splitlines()]
    assert [w["c"] for w in written[:2]] == [json.loads(e)["c"] for e in events[:2]]
    assert written[2]["c"]["_slots"] == [{}]  # (a CB event: one slot)
    ids = [[o["_id"] for o in w["_outcomes"]] for w in written]
    assert ids == [["top", "e0-1", "e0-2"], ["top", "e1-1", "e1-2"], ["cb-0"]]
    assert written[1]["_outcomes"][2] == {"_id": "e1-2"}  # (no draw)
    assert [w["VWState"] for w in written] == [{"m": "0"}] * 3
    assert len(list(iter_slots_dsjson(log.splitlines()))) == 3


def test_a_log_line_of_the_api_reads_back():
    c = slots_context_of((("u", (("f", 1.0),)),), [(("a", (("x", 1.0),)),),
                                                  (("a", (("y", 2.0),)),)],
                         [((("s", (("h", 1.0),)),), "top", (1,)), ((), None, None)])
    line = slots_line("e9", c, [slot_outcome("top", [(1, 1.0)], -0.5),
                                slot_outcome("e9-1", [(0, 1.0)])], 7)
    example, = iter_slots_dsjson([line])
    assert example.tag == "e9" and example.slots[0].include == (1,)
    assert example.slots[0].outcome[:3] == (1, -0.5, 1.0) and example.slots[1].outcome is None
    ws = Workspace("--ccb_explore_adf --dsjson --quiet")
    parsed = ws.parse(line)
    assert [ex.get_label().type for ex in parsed] == [
        CCBLabelType.SHARED, CCBLabelType.ACTION, CCBLabelType.ACTION, CCBLabelType.SLOT,
        CCBLabelType.SLOT]
    ws.learn(parsed)
    ws.finish_example(parsed)
    ws.finish()


# -- rewards that come later ---------------------------------------------------------------

def slot_reward(user: int, slot: int, action: int) -> float:
    """Action 1 + user is the best in every slot, worth less further down."""
    return float(action == 1 + user) / (slot + 1)


def closed_loop(n: int, flags: list[str]) -> tuple[str, str]:
    """Events written one at a time to the command over a pipe, each slot's reward (of
    the action it drew) written as soon as its -p lines are read: the input and -p."""
    process = subprocess.Popen([sys.executable, "-m", "regcb_stream", *CCB, "-p", "-",
                                "--quiet", *flags], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, bufsize=1)
    watchdog = threading.Timer(240, process.kill)
    watchdog.start()
    sent, shown = [], []
    try:
        for t in range(n + 1):
            sent.append(event(t, user=t % 2))
            process.stdin.write(sent[-1] + "\n")
            process.stdin.flush()
            lines = [process.stdout.readline() for _ in range(4)]
            assert lines[3] == "\n"
            shown += lines
            if t == n:  # (the last one waits: its -p shows what was learned)
                break
            for j, line in enumerate(lines[:3]):
                drawn = int(line.split(":")[0])
                sent.append(reward(t, "top" if j == 0 else j, slot_reward(t % 2, j, drawn)))
                process.stdin.write(sent[-1] + "\n")
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        process.kill()
    return "\n".join(sent) + "\n", "".join(shown)


def test_slot_rewards_learned_later_are_the_log_learned_at_once(tmp_path):
    """Each slot's reward read after its decision, before the next: the decisions of the
    log with the rewards in place, learned as the input's outcomes (the same draws, the
    same -p, the same log), and the same run again from the file."""
    text, shown = closed_loop(40, ["--reward_wait", "5"])
    delayed, log = run(tmp_path, "delayed", text, *CCB, "--reward_wait", "5")
    assert delayed == shown
    assert len(log.splitlines()) == 40
    assert all("_label_cost" in o for line in log.splitlines()
               for o in json.loads(line)["_outcomes"])
    last = text.splitlines()[-1]
    inline, relogged = run(tmp_path, "inline", log + last + "\n", *CCB)
    assert inline == delayed and relogged.startswith(log)  # (and the last event's line)
    best = [int(b[0].split(":")[0]) == 1 + t % 2 for t, b in enumerate(blocks(shown))]
    assert sum(best[-10:]) >= 6  # (it learns: each user's best action tops the ranking)


def rewards_later(n: int, late: int, unrewarded: int = 7) -> str:
    """Events, each slot's reward ``late`` events after it (every ``unrewarded``-th event
    gets none); the slots by id or index."""
    lines, due = [], collections.defaultdict(list)
    for t in range(n):
        lines.append(event(t, user=t % 2))
        if t % unrewarded:
            due[t + late] += [reward(t, "top" if (t + j) % 2 else j, (t + j) % 3 / 2)
                              for j in range(3)]
        lines += due.pop(t, [])
    lines += [r for t in sorted(due) for r in due[t]]
    return "\n".join(lines) + "\n"


def test_waiting_slot_decisions_are_kept_by_f_and_i(tmp_path):
    text = rewards_later(30, late=3)
    lines = text.splitlines(keepends=True)
    half = lines.index(event(15, user=1) + "\n")
    flags = [*CCB, "--reward_wait", "4", "--default_reward", "0.25"]
    whole = run(tmp_path, "whole", text, *flags)
    model = tmp_path / "m.regcb"
    first = run(tmp_path, "first", "".join(lines[:half]), *flags, "-f", str(model))
    assert load_model(model)[0].events["waiting"] == 4
    second = run(tmp_path, "second", "".join(lines[half:]), "-i", str(model))
    assert (first[0] + second[0], first[1] + second[1]) == whole
    assert whole == run(tmp_path, "again", text, *flags)  # (deterministic)


@pytest.mark.parametrize("default, labels, costs", [
    (["--default_reward", "0.5"], 9, [[-1.0, -0.5, -0.5], [-0.5] * 3, [-0.0, -0.5, -1.0]]),
    ([], 4, [[-1.0, None, None], [None] * 3, [-0.0, -0.5, -1.0]]),
])
def test_the_oldest_times_out_with_the_default_reward_or_none(tmp_path, capsys, default,
                                                                labels, costs):
    text = "\n".join([event(0), reward(0, "top", 1), event(1), event(2), event(3),
                      reward(2, 0, 0), reward(2, "e2-1", 0.5), reward(2, 2, 1)]) + "\n"
    data, model, log = tmp_path / "d.json", tmp_path / "m.regcb", tmp_path / "log.json"
    data.write_text(text)
    assert main([*CCB, "-d", str(data), "--reward_wait", "2", *default, "-f", str(model),
                 "--decision_log", str(log)]) == 0
    timed_out = "defaulted 2, dropped 0" if default else "defaulted 0, dropped 2"
    assert (f"decided 4, rewarded 1, {timed_out}, waiting 1, unmatched rewards 0"
            in capsys.readouterr().err)
    assert load_model(model)[0].n_labels == labels
    written = [json.loads(line) for line in log.read_text().splitlines()]
    assert [w["EventId"] for w in written] == ["e0", "e1", "e2"]
    assert [[o.get("_label_cost") for o in w["_outcomes"]] for w in written] == costs


def test_rewards_of_no_waiting_slot_are_counted_and_ignored(tmp_path, capsys):
    """An unknown event, a slot it does not have (index, id), a slot that drew nothing,
    a slot rewarded already; a decision is done when its slots that drew are rewarded."""
    text = "\n".join([event(0, side=[9]), reward(7, 0, 1), reward(0, 3, 1),
                      reward(0, "nope", 1), reward(0, 2, 1), reward(0, "top", 1),
                      reward(0, 0, 0), reward(0, 1, 1), event(1)]) + "\n"
    data, log = tmp_path / "d.json", tmp_path / "log.json"
    data.write_text(text)
    assert main([*CCB, "-d", str(data), "--reward_wait", "5", "--decision_log",
                 str(log)]) == 0
    assert ("decided 2, rewarded 1, defaulted 0, dropped 0, waiting 1, unmatched rewards 5"
            in capsys.readouterr().err)
    written, = (json.loads(line) for line in log.read_text().splitlines())
    assert [o.get("_label_cost") for o in written["_outcomes"]] == [-1.0, -1.0, None]


@pytest.mark.parametrize("line, detail", [
    ('{"EventId": "e0", "v": 1}', 'names its slot: "_slot"'),
    ('{"EventId": "e0", "v": 1, "_slot": -1}', '"_slot" is -1, not a slot'),
    ('{"EventId": "e0", "v": 1, "_slot": true}', '"_slot" is true'),
    ('{"EventId": "e0", "v": 1, "_slot": 0.5}', '"_slot" is 0.5'),
    ('{"EventId": "e0", "v": "1", "_slot": 0}', 'reward "v" is a string'),
    ('{"v": 1, "_slot": 0}', 'needs its decision\'s "EventId"'),
    ('{"EventId": "e0", "v": 1, "_slot": 0, "_labelIndex": 1}', "_labelIndex"),
])
def test_a_bad_reward_line_is_an_error_naming_it_or_skipped_with_lenient(tmp_path, capsys,
                                                                         line, detail):
    data = tmp_path / "d.json"
    data.write_text(event(0) + "\n" + line + "\n" + event(1) + "\n")
    assert main([*CCB, "-d", str(data), "--reward_wait", "5", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert "error: line 2:" in error and detail in error and "Traceback" not in error
    assert main([*CCB, "-d", str(data), "--reward_wait", "5", "--lenient"]) == 0
    err = capsys.readouterr().err
    assert "warning: skipping example: line 2:" in err and "skipped examples = 1" in err
    with pytest.raises(VWParseError, match=re.escape(detail)):
        list(iter_slot_events([line]))


def test_reward_lines_are_read_by_index_or_id():
    lines = [event(0), reward(0, "top", 1), reward(0, 2, 0.5)]
    (example, c), first, second = iter_slot_events(lines)
    assert example.tag == "e0" and c["_slots"][0]["_id"] == "top"
    assert (first, second) == (SlotReward("e0", 1.0, "top", 2), SlotReward("e0", 0.5, 2, 3))
    with pytest.raises(VWParseError, match="context"):  # (without rewards: an event)
        list(iter_slot_events(lines, rewards=False))


@pytest.mark.parametrize("flags, message", [
    (["--ccb_explore_adf", "--reward_wait", "3"], "give --dsjson"),
    (["--slates", "--reward_wait", "3"], "give --dsjson"),
    ([*CCB, "--reward_wait", "3", "-t"], "not with -t"),
])
def test_flags_of_the_loop_the_slots_do_not_take(flags, message, capsys):
    with pytest.raises(SystemExit):
        main(flags)
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


# -- slates ----------------------------------------------------------------------------------

SLATE = ["--slates", "--dsjson"]


def slate_event(t: int, user: int = 0) -> str:
    """A slates DSJSON event without outcomes: a slot of 3 actions, then one of 2."""
    return json.dumps({"EventId": f"s{t}", "c": {
        "User": {"id": f"u{user}"},
        "_multi": [{"_slot_id": slot, "Action": {"id": f"a{slot}{i}"}}
                   for slot, n in enumerate((3, 2)) for i in range(n)],
        "_slots": [{"Slot": {"place": "top"}}, {"Slot": {"place": "side"}}]}})


def slate_reward(t: int, value: float) -> str:
    return json.dumps({"EventId": f"s{t}", "v": value})


def test_the_log_of_slates_text_reads_back_and_vw_learns_it(tmp_path, capsys):
    """Each slate's line: the example's features, each action's slot, each slot's draw
    first as -p printed it, and the slate's cost where the input's outcomes are the
    draws; -p the same without the log; VW's --slates --dsjson and regcb-ope read it."""
    text = SLATES.replace("slates slot 1:0.8", "slates slot 1:0.5,0:0.25,2:0.25") * 30
    shown, log = run(tmp_path, "slates", text, "--slates")
    lines, examples = log.splitlines(), list(iter_slots(text.splitlines()))
    logged = list(iter_slots_dsjson(lines))
    assert len(lines) == len(logged) == len(examples) == 30
    labelled = 0
    for line, back, example, printed in zip(lines, logged, examples, blocks(shown)):
        assert back.kind == "slates" and back.action_slots == example.action_slots
        assert [feature_dict(a) for a in back.actions] == [feature_dict(a)
                                                           for a in example.actions]
        written = json.loads(line)
        for entry, slot_line in zip(written["_outcomes"], printed):
            pairs = [pair.split(":") for pair in slot_line.split(",")]
            assert "_id" not in entry and entry["_a"] == [int(a) for a, _ in pairs]
        drawn = [entry["_a"][0] for entry in written["_outcomes"]]
        if drawn == [slot.outcome.action for slot in example.slots]:
            labelled += 1
            assert written["_label_cost"] == back.cost == example.cost
        else:
            assert "_label_cost" not in written and back.cost is None
    assert 0 < labelled < 30
    without = tmp_path / "q.txt"
    data = tmp_path / "slates.json"
    assert main(["--slates", "-d", str(data), "-p", str(without), "--quiet"]) == 0
    assert without.read_text() == shown
    ws = Workspace("--slates --dsjson --quiet")
    for line in [line for line in lines if "_label_cost" in line]:  # (VW reads no
        parsed = ws.parse(line)  # unlabelled slates DSJSON, its own test file's included)
        assert len(parsed) == 1 + 5 + 2  # (shared, actions, slots)
        assert all(ex.get_label().labeled for ex in parsed)
        ws.learn(parsed)
        ws.finish_example(parsed)
    ws.finish()
    capsys.readouterr()
    assert ope_main(["-d", str(tmp_path / "slates.log"), "--slates", "--dsjson"]) == 0
    assert "slate" in capsys.readouterr().out


def slates_later(n: int, late: int, unrewarded: int = 5) -> str:
    """Slate events, each one's reward ``late`` events after it (every ``unrewarded``-th
    gets none)."""
    lines, due = [], collections.defaultdict(list)
    for t in range(n):
        lines.append(slate_event(t, user=t % 2))
        if (t + 1) % unrewarded:
            due[t + late].append(slate_reward(t, float(t % 2)))
        lines += due.pop(t, [])
    lines += [r for t in sorted(due) for r in due[t]]
    return "\n".join(lines) + "\n"


def test_slate_rewards_learned_later_are_the_log_learned_at_once(tmp_path):
    """A slate's reward read right after its decision: every slot learns it with its drawn
    action (the log's ``_label_cost``); the log read back labelled gives the same -p."""
    text = slates_later(30, late=0, unrewarded=10 ** 6)
    delayed, log = run(tmp_path, "delayed", text, *SLATE, "--reward_wait", "3")
    written = [json.loads(line) for line in log.splitlines()]
    assert [w["_label_cost"] for w in written] == [-float(t % 2) for t in range(30)]
    inline, relogged = run(tmp_path, "inline", log, *SLATE)
    assert inline == delayed and relogged == log


def test_waiting_slates_time_out_and_are_kept_by_f_and_i(tmp_path):
    text = slates_later(24, late=3)
    lines = text.splitlines(keepends=True)
    half = lines.index(slate_event(12) + "\n")
    flags = [*SLATE, "--reward_wait", "2", "--default_reward", "0.5"]
    whole = run(tmp_path, "whole", text, *flags)
    costs = [json.loads(line).get("_label_cost") for line in whole[1].splitlines()]
    assert len(costs) == 24 and set(costs) <= {-0.0, -1.0, -0.5} and -0.5 in costs
    model = tmp_path / "m.regcb"
    first = run(tmp_path, "first", "".join(lines[:half]), *flags, "-f", str(model))
    assert load_model(model)[0].events["waiting"] == 2
    second = run(tmp_path, "second", "".join(lines[half:]), "-i", str(model))
    assert (first[0] + second[0], first[1] + second[1]) == whole


def test_a_slates_reward_naming_a_slot_is_an_error_naming_its_line(tmp_path, capsys):
    data = tmp_path / "d.json"
    data.write_text(slate_event(0) + "\n" + '{"EventId": "s0", "_slot": 0, "v": 1}\n')
    assert main([*SLATE, "-d", str(data), "--reward_wait", "5", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert "error: line 2:" in error and "whole slate" in error and "Traceback" not in error
