"""The production loop in the command: DSJSON decision logs (read back by VW's --dsjson
parser and by regcb-ope) and rewards that arrive after the decision (reward lines joined
by EventId, a window of waiting decisions, kept by -f/-i)."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest
from test_cli import TRAIN, needs, one_at_a_time
from test_dsjson import VW_CONSTANT
from vowpalwabbit import Workspace

from regcb_stream.command.main import main
from regcb_stream.evaluation.ope import main as ope_main
from regcb_stream.io.dsjson import iter_dsjson
from regcb_stream.io.hashing import mask

DSJSON = TRAIN / "dsjson_cb.json"


def adf_text(n: int, seed: int = 0) -> str:
    """ADF examples with named and default namespaces, digit names, repeated names, tags,
    scaled namespaces and labels on some examples."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        tag = f"'t{t} " if t % 3 == 0 else ""
        shared = (f"shared {tag}|User age:{rng.integers(18, 80)} tier{rng.integers(3)} "
                  f"7:0.5 7 |Geo:2 c{rng.integers(5)} | plain x:{rng.random():.3f}")
        lines = [shared]
        logged = rng.integers(4) if t % 2 == 0 else -1
        for a in range(4):
            label = f"0:{rng.integers(2)}:0.25 " if a == logged else ""
            lines.append(f"{label}|Item id{a} price:{1 + a} |j kind{a % 2} 12")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def vw_rows(ws, examples) -> list[collections.Counter]:
    """Each parsed example's (slot, value) features, VW's constant left out."""
    rows = [collections.Counter((h & mask(18), round(v, 6)) for h, v in ex.iter_features()
                                if h != VW_CONSTANT) for ex in examples]
    ws.finish_example(examples)
    return rows


def predictions(path) -> list[dict[int, float]]:
    """VW's ``-p`` lines as {action: probability}."""
    text = path.read_text().strip()
    return [{int(a): float(p) for a, p in (pair.split(":") for pair in
                                           line.split(" ")[0].split(","))}
            for line in text.splitlines() if line.strip()]


def test_the_decision_log_of_adf_text_reads_back_as_the_same_events(tmp_path, capsys):
    data, log, out = tmp_path / "d.dat", tmp_path / "log.json", tmp_path / "p.txt"
    data.write_text(adf_text(60))
    assert main(["--cb_explore_adf", "-q", "UI", "-d", str(data), "-p", str(out),
                 "--decision_log", str(log), "--quiet"]) == 0
    lines = log.read_text().splitlines()
    examples = data.read_text().strip().split("\n\n")
    assert len(lines) == len(examples) == 60
    text_ws = Workspace("--cb_explore_adf --quiet -b 18")
    json_ws = Workspace("--cb_explore_adf --dsjson --quiet -b 18")
    events = [event for _, event in iter_dsjson(lines)]
    for line, example, event, pmf in zip(lines, examples, events, predictions(out)):
        ours = vw_rows(json_ws, json_ws.parse(line))
        want = vw_rows(text_ws, text_ws.parse(example.splitlines()))
        assert ours == want  # the shared features, then each action's
        chosen = event.logged_actions[0] - 1
        assert sorted(event.logged_actions) == [1, 2, 3, 4]
        assert event.probabilities == pytest.approx([pmf[a - 1] for a in event.logged_actions],
                                                    abs=5e-7)  # (-p: 6 decimals)
        assert pmf[chosen] > 0
        tag = example.split("'")[1].split()[0] if "'" in example.splitlines()[0] else None
        assert event.event_id == tag or (tag is None and len(event.event_id) == 32)
        logged = [i for i, row in enumerate(example.splitlines()[1:]) if row.startswith("0:")]
        if event.label is not None:  # the input's label was for the drawn action
            assert logged == [chosen]
            assert event.label.prob == event.probabilities[0] == pytest.approx(pmf[chosen],
                                                                                abs=5e-7)
    assert len({e.event_id for e in events}) == 60
    assert 0 < sum(e.label is not None for e in events) < 30
    text_ws.finish()
    json_ws.finish()
    capsys.readouterr()
    assert ope_main(["-d", str(log), "--dsjson", "--policy", "uniform"]) == 0
    assert f"n = {sum(e.label is not None for e in events)}" in capsys.readouterr().out


def test_the_decision_log_of_dsjson_keeps_each_events_context(tmp_path):
    data, log = needs(DSJSON), tmp_path / "log.json"
    assert main(["--dsjson", "-d", str(data), "--decision_log", str(log), "--quiet"]) == 0
    source = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    written = [json.loads(line) for line in log.read_text().splitlines()]
    assert [w["EventId"] for w in written] == [s["EventId"] for s in source]
    assert [w["c"] for w in written] == [s["c"] for s in source]
    assert all(abs(sum(w["p"]) - 1) < 1e-9 for w in written)


def test_the_decision_log_of_single_line_input(tmp_path):
    data, log = tmp_path / "d.dat", tmp_path / "log.json"
    data.write_text("1:0:0.5 'a |s x:2 y\n2:1:0.5 |s z\n |s x\n")
    assert main(["--cb_explore", "3", "-d", str(data), "--decision_log", str(log),
                 "--quiet"]) == 0
    events = [event for _, event in iter_dsjson(log.read_text().splitlines())]
    assert [len(e.actions) for e in events] == [3, 3, 3] and events[0].event_id == "a"
    assert events[0].shared == (("s", (("x", 2.0), ("y", 1.0))),)
    assert events[1].actions[1] == ((" ", (("action2", 1.0),)),)


def unlabelled(rewards_after: int = 1, seed: int = 0, n: int = 200) -> tuple[str, list]:
    """dsjson_cb.json's events without their labels, each event's reward line (its
    logged action and reward, ``-cost``) ``rewards_after`` events later."""
    events = [json.loads(line) for line in needs(DSJSON).read_text().splitlines()
              if line.strip()]
    rng = np.random.default_rng(seed)
    out, due = [], []
    for t in range(n):
        event = dict(events[rng.integers(len(events))])
        label = (event.pop("_labelIndex"), -event.pop("_label_cost"))
        for key in ("_label_probability", "_label_Action", "_original_label_cost"):
            event.pop(key, None)
        event["EventId"] = f"e{t}"
        out.append(json.dumps(event))
        due.append((t + rewards_after, {"EventId": f"e{t}", "_labelIndex": label[0],
                                        "v": label[1]}))
        out += [json.dumps(r) for when, r in due if when == t]
    out += [json.dumps(r) for when, r in due if when >= n]
    return "\n".join(out) + "\n", events


def run(tmp_path, name: str, text: str, *flags) -> tuple[str, str]:
    data, out, log = (tmp_path / f"{name}.{ext}" for ext in ("json", "p", "log"))
    data.write_text(text)
    assert main(["--dsjson", "-d", str(data), "-p", str(out), "--decision_log", str(log),
                 "--quiet", *flags]) == 0
    return out.read_text(), log.read_text()


def test_rewards_joined_right_away_learn_as_the_joined_log(tmp_path):
    """With a fixed budget, each reward learned before the next decision gives the
    decisions of the log with the labels in place (the oracle's weight is 1 either way)."""
    text, _ = unlabelled(rewards_after=0)
    joined = []
    for line in text.splitlines():
        record = json.loads(line)
        if "c" in record:
            joined.append(record)
        else:
            joined[-1] |= {"_labelIndex": record["_labelIndex"],
                           "_label_cost": -record["v"], "_label_probability": 0.5}
    flags = ("--mellowness", "0.1", "--cb_min_cost", "-1", "--cb_max_cost", "0")
    waiting, _ = run(tmp_path, "waiting", text, "--reward_wait", "10", *flags)
    at_once, _ = run(tmp_path, "joined", "\n".join(map(json.dumps, joined)) + "\n", *flags)
    assert waiting == at_once


def test_delayed_rewards_are_deterministic_and_counted(tmp_path, capsys):
    text, _ = unlabelled(rewards_after=7)
    text += '{"EventId": "nobody", "v": 1}\n'
    first = run(tmp_path, "a", text, "--reward_wait", "5", "--default_reward", "0")
    assert first == run(tmp_path, "b", text, "--reward_wait", "5", "--default_reward", "0")
    data = tmp_path / "c.json"
    data.write_text(text)
    assert main(["--dsjson", "-d", str(data), "--reward_wait", "5", "--default_reward",
                 "0"]) == 0
    summary = capsys.readouterr().err
    assert ("decided 200, rewarded 5, defaulted 195, dropped 0, waiting 0, unmatched "
            "rewards 196") in summary
    log = [json.loads(line) for line in first[1].splitlines()]
    labelled = [e for e in log if "_label_cost" in e]
    assert len(log) == 200 and len(labelled) >= 195  # (the timed out: the drawn action's)
    assert all(e["_label_probability"] == e["p"][0] > 0 for e in labelled)


def test_a_decision_to_make_needs_no_logged_actions(tmp_path, capsys):
    """With ``--reward_wait``, an event without a label and without ``a`` (a request: the
    action is not chosen yet) is decided as the same event with the logged ``a`` and
    ``p``, which are only kept for metrics; without rewards read, VW skips such a line.
    One request at a time through a pipe is answered at once."""
    text, _ = unlabelled(rewards_after=3, n=60)
    requests = []
    for line in text.splitlines():
        record = json.loads(line)
        requests.append(json.dumps({k: v for k, v in record.items() if k not in ("a", "p")}))
    requests = "\n".join(requests) + "\n"
    assert requests != text and '"a"' not in requests
    assert (run(tmp_path, "request", requests, "--reward_wait", "10")
            == run(tmp_path, "logged", text, "--reward_wait", "10"))
    data = tmp_path / "requests.json"
    data.write_text(requests)
    assert main(["--dsjson", "-d", str(data), "-p", str(tmp_path / "none.p")]) == 0
    assert "DSJSON lines skipped as VW skips them = 120" in capsys.readouterr().err
    first = requests.splitlines()[0] + "\n"
    assert one_at_a_time(["--dsjson", "--reward_wait", "10"], [first]).count("\n\n") == 1


@pytest.mark.parametrize("forget", [[], ["--forget", "0.99"]])
def test_waiting_decisions_are_kept_by_f_and_i(tmp_path, forget):
    """(Forgetting: the lies and their rewards keep their decisions' times across files.)"""
    text, _ = unlabelled(rewards_after=30, n=120)
    lines = text.splitlines(keepends=True)
    half = next(i for i, line in enumerate(lines) if '"EventId": "e60"' in line
                and '"c"' in line)
    whole = run(tmp_path, "whole", text, "--reward_wait", "50", *forget)
    model = tmp_path / "m.regcb"
    first = run(tmp_path, "first", "".join(lines[:half]), "--reward_wait", "50", "-f",
                str(model), *forget)
    second = run(tmp_path, "second", "".join(lines[half:]), "--reward_wait", "50", "-i",
                 str(model))
    assert (first[0] + second[0], first[1] + second[1]) == whole


@pytest.mark.parametrize("flags, message", [
    (["--dsjson", "--default_reward", "0"], "--default_reward applies with --reward_wait"),
    (["--cb_explore_adf", "--reward_wait", "3"], "give --dsjson"),
    (["--dsjson", "--reward_wait", "3", "-t"], "not with -t"),
    (["--dsjson", "--reward_wait", "0"], "an integer >= 1"),
])
def test_bad_flags(flags, message, capsys):
    with pytest.raises(SystemExit):
        main(flags)
    assert message in capsys.readouterr().err


def test_reward_lines_without_waiting_are_skipped_and_repeated_ids_name_their_line(
        tmp_path, capsys):
    """Without --reward_wait, reward lines are what VW has them: events without actions,
    skipped and counted."""
    text, _ = unlabelled(rewards_after=1, n=3)
    data = tmp_path / "d.json"
    data.write_text(text)
    assert main(["--dsjson", "-d", str(data)]) == 0
    assert "DSJSON lines skipped as VW skips them = 3" in capsys.readouterr().err
    event = text.splitlines()[0]
    data.write_text(event + "\n" + event + "\n")
    assert main(["--dsjson", "-d", str(data), "--reward_wait", "5", "--quiet"]) == 1
    assert "line 2: event id 'e0' is already waiting" in capsys.readouterr().err
