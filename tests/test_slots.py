"""Several slots at once: RegCB.predict_slots / learn_slots and VW's ccb and slates text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vowpalwabbit import Workspace

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.evaluation.ope import UniformPolicy, evaluate_slots
from regcb_stream.io.dsjson import iter_slots_dsjson
from regcb_stream.io.vw_slots import iter_slots
from regcb_stream.io.vw_text import VWParseError
from regcb_stream.persist import load_model, save_model
from regcb_stream.slots import (
    Slot,
    SlotDecision,
    SlotRound,
    learn_slots,
    offered,
    predict_slots,
    replay_slots,
)

ACTIONS = [{f"item={i}": 1.0, f"kind={i % 2}": 1.0} for i in range(5)]


def ranking_round(rng: np.random.Generator) -> tuple[dict, list[float]]:
    """A user of type 0 or 1; action 2 + type is the best first slot, rewards per slot."""
    user = int(rng.integers(2))
    return {f"user={user}": 1.0}, [float(a == 2 + user) for a in range(5)]


def test_ccb_slots_choose_distinct_actions_with_valid_distributions():
    learner = RegCB(seed=3)
    decisions = predict_slots(learner, {"user=0": 1.0}, ACTIONS, [Slot(), Slot(), Slot()])
    chosen = [d.index for d in decisions]
    assert len(set(chosen)) == 3
    for j, decision in enumerate(decisions):
        assert isinstance(decision, SlotDecision)
        assert len(decision.offered) == len(ACTIONS) - j
        assert set(chosen[:j]).isdisjoint(decision.offered)
        assert decision.pmf.min() >= 0 and decision.pmf.sum() == pytest.approx(1.0)
        assert decision.prob == decision.pmf[decision.offered.index(decision.index)]


def test_a_slot_takes_only_the_actions_it_includes_and_none_when_none_is_left():
    learner = RegCB(seed=0)
    first, second, third = predict_slots(learner, 
        {"u": 1.0}, ACTIONS[:2], [Slot(include=[1, 4]), Slot(), Slot()])
    assert first.index == 1 and first.prob == 1.0
    assert second.index == 0 and second.offered == (0,)
    assert third is None


def test_slates_decide_each_slot_among_its_own_actions():
    learner = RegCB(seed=1)
    pools = [ACTIONS[:3], ACTIONS[3:]]
    decisions = predict_slots(learner, {"u": 1.0}, [], [Slot(actions=p) for p in pools])
    assert [len(d.offered) for d in decisions] == [3, 2]
    assert decisions[0].index < 3 and decisions[1].index < 2


def test_the_same_seed_gives_the_same_slots_and_a_model_file_resumes_them_exactly(tmp_path):
    def run(learner, rounds, rng):
        out = []
        for _ in range(rounds):
            context, rewards = ranking_round(rng)
            slots = [Slot({"h": 1.0}), Slot({"i": 1.0})]
            decisions = predict_slots(learner, context, ACTIONS, slots)
            learn_slots(learner, context, ACTIONS, slots, decisions,
                                [rewards[d.index] / (j + 1) for j, d in enumerate(decisions)])
            out.append([(d.index, d.prob) for d in decisions])
        return out

    whole = run(RegCB(seed=5), 60, np.random.default_rng(0))
    assert whole == run(RegCB(seed=5), 60, np.random.default_rng(0))
    rng, first = np.random.default_rng(0), RegCB(seed=5)
    head = run(first, 25, rng)
    save_model(tmp_path / "m.regcb", first, {})
    resumed, _ = load_model(tmp_path / "m.regcb")
    assert head + run(resumed, 35, rng) == whole


def test_learning_per_slot_finds_each_users_best_first_action():
    learner, rng = RegCB(seed=0), np.random.default_rng(1)
    for _ in range(400):
        context, rewards = ranking_round(rng)
        slots = [Slot(), Slot()]
        decisions = predict_slots(learner, context, ACTIONS, slots)
        learn_slots(learner, context, ACTIONS, slots, decisions,
                            [rewards[d.index] / (j + 1) for j, d in enumerate(decisions)])
    for user in (0, 1):
        first = predict_slots(learner, {f"user={user}": 1.0}, ACTIONS, [Slot(), Slot()])[0]
        assert first.pmf[first.offered.index(2 + user)] > 0.9


def logged_rounds(n: int, seed: int) -> list[SlotRound]:
    """Logged rounds of every form: pools of 3 to 5 actions (one with a feature more,
    some), 1 to 6 slots (more than the actions, some; with one feature or two), slots
    naming what they include, slates, slots without a label."""
    rng, rounds = np.random.default_rng(seed), []
    for _ in range(n):
        actions = ACTIONS[:int(rng.integers(3, 6))]
        if rng.random() < 0.05:  # an action with a feature more
            actions = [*actions[:-1], {**actions[-1], "new=1": 1.0}]
        slots = [Slot({f"s{j}": float(rng.normal()), **({"wide": 2.0} if rng.random() < 0.3
                                                       else {})}, None,
                      [0, 2] if rng.random() < 0.05 else None)
                 for j in range(int(rng.integers(1, 7)))]
        if rng.random() < 0.05:  # a slate
            slots = [Slot(actions=actions[:2]), Slot(actions=actions[1:3])]
        labels = [None if rng.random() < 0.2 else (
            int(rng.integers(2 if slot.actions else len(actions))), 0.5, float(rng.random()))
            for slot in slots]
        rounds.append(SlotRound({"u": float(rng.normal()), "v=1": 1.0}, actions, slots,
                                labels, float(rng.choice([1.0, 2.0]))))
    return rounds


@pytest.mark.parametrize("options", [{}, {"hash_bits": 18}, {"variant": "elimination"},
                                     {"budget": "auto"}, {"oracle": "bounded"},
                                     {"oracle": RidgeOracle(max_exact=2000)}])  # (hands over)
def test_replay_slots_decides_and_learns_as_predict_then_learn_slots_in_any_blocks(options):
    rounds = logged_rounds(300, 0)
    one, alone = RegCB(seed=4, **options), []
    for context, actions, slots, labels, weight in rounds:
        alone.append(predict_slots(one, context, actions, slots))
        learn_slots(one, context, actions, slots, [label and label[:2] for label in labels],
                    [label and label[2] for label in labels], weight)
    for size in (1, 16, len(rounds)):
        learner = RegCB(seed=4, **options)
        blocks = [replay_slots(learner, rounds[i:i + size])
                  for i in range(0, len(rounds), size)]
        decided = [slots for block in blocks for slots in block]
        assert [[d and (d.index, d.prob, d.offered, d.pmf.tolist()) for d in slots]
                for slots in decided] == [[d and (d.index, d.prob, d.offered, d.pmf.tolist())
                                           for d in slots] for slots in alone]
        assert learner.n_labels == one.n_labels
        assert learner.oracle_in_use == one.oracle_in_use


def test_unobserved_slots_are_left_out_and_lengths_must_agree():
    learner = RegCB(seed=0)
    slots = [Slot(), Slot()]
    decisions = predict_slots(learner, {"u": 1.0}, ACTIONS, slots)
    learn_slots(learner, {"u": 1.0}, ACTIONS, slots, decisions, [1.0, None])
    assert learner.n_labels == 1
    with pytest.raises(ValueError, match="one of each per slot"):
        learn_slots(learner, {"u": 1.0}, ACTIONS, slots, decisions, [1.0])


@pytest.mark.parametrize("index", [-1, 5, 1.5])
def test_a_logged_action_outside_the_slots_actions_is_refused_by_name(index):
    learner, slots = RegCB(seed=0), [Slot(), Slot()]
    message = f"slot 1: the logged action {index!r} is not an index among its 5 actions"
    with pytest.raises(ValueError, match=re.escape(message)):  # (slot 0 not learned)
        learn_slots(learner, {"u": 1.0}, ACTIONS, slots, [(0, 0.5), (index, 0.5)], [1.0, 0.0])
    assert learner.n_labels == 0
    replay_slots(learner, [SlotRound({"u": 1.0}, ACTIONS, slots, [None, None])])
    labels = learner.n_labels
    with pytest.raises(ValueError, match=re.escape(message)):  # (a block: nothing learned)
        replay_slots(learner, [SlotRound({"u": 1.0}, ACTIONS, slots,
                                         [(0, 0.5, 1.0), (index, 0.5, 0.0)])])
    assert learner.n_labels == labels


# -- VW's text formats ---------------------------------------------------------------------

CCB = """ccb shared 'ex1 |User b
ccb action |Action d
ccb action |Action e
ccb action |Action f
ccb slot 1:0.5:0.25 |Slot h
ccb slot 0:0:0.5,2:0.5 0,2 |Slot i
ccb slot |Slot j

ccb shared |User c
ccb action |Action d
ccb slot |Slot h
"""


def test_ccb_text_is_read_with_outcomes_inclusions_and_tags():
    first, second = iter_slots(CCB.splitlines())
    assert (first.kind, first.tag, len(first.actions), len(first.slots)) == ("ccb", "ex1", 3, 3)
    assert first.slots[0].outcome[:3] == (1, 0.5, 0.25)
    assert first.slots[1].outcome.probs == ((0, 0.5), (2, 0.5))
    assert first.slots[1].include == (0, 2) and first.slots[2].outcome is None
    assert first.shared == (("User", (("b", 1.0),)),) and second.line_no == 9


@pytest.mark.parametrize("text, detail", [
    ("ccb shared 1 |u a\nccb slot |s", "cannot carry a label"),
    ("ccb shared |u a\nccb action 0:1:1 |a", "cannot carry a label"),
    ("ccb shared |u a\nccb action |a\nccb slot 3:0:0.5 |s", "outside the slot's 1 actions"),
    ("ccb shared |u a\nccb action |a\nccb slot 0:0:0 |s", r"outside \(0, 1\]"),
    ("ccb shared |u a\nccb action |a\nccb action |b\nccb slot 0:0:0.5,1:0.2 |s",
     "add up to 1"),
    ("ccb shared |u a\nccb action |a", "at least one slot"),
    ("ccb shared |u a\nccb action |a\nccb slot |s\nccb slot |t", "an action for each slot"),
    ("ccb shared |u a\nslates action 0 |a\nccb slot |s", "must start with ccb"),
    ("ccb sharde |u a", "'ccb shared'"),
    ("slates shared 1 2 |u", "one cost at most"),
    ("slates shared |u\nslates action x |a\nslates slot |s", "slot is a number"),
    ("slates shared |u\nslates action 1 |a\nslates slot |s", "slot lines"),
    ("slates shared |u\nslates action 0 |a\nslates slot |s\nslates slot |t", "no action"),
    ("ccb shared |u a\nccb shared |u b\nccb action |a\nccb slot |s", "second shared"),
])
def test_bad_examples_are_refused_naming_the_line(text, detail):
    with pytest.raises(VWParseError, match=detail) as error:
        list(iter_slots(text.splitlines()))
    assert error.value.line_no >= 1
    skipped = []
    assert list(iter_slots([*text.splitlines(), "", *CCB.splitlines()],
                           on_error=skipped.append))[0].tag == "ex1"
    assert len(skipped) == 1


@st.composite
def slot_streams(draw):
    """Random CCB or slates text: the examples, and the kind."""
    kind = draw(st.sampled_from(["ccb", "slates"]))
    examples = []
    for _ in range(draw(st.integers(1, 6))):
        n_slots = draw(st.integers(1, 4))
        if kind == "ccb":
            n_actions = draw(st.integers(n_slots, 5))
            lines = ["ccb shared |User u%d" % draw(st.integers(0, 3))]
            lines += [f"ccb action |Action a{i}" for i in range(n_actions)]
            for j in range(n_slots):
                label = (f"{draw(st.integers(0, n_actions - 1))}:0:0.5 "
                         if draw(st.booleans()) else "")
                lines.append(f"ccb slot {label}|Slot s{j}")
        else:
            sizes = [draw(st.integers(1, 3)) for _ in range(n_slots)]
            lines = ["slates shared 0.5 |User u"]
            lines += [f"slates action {j} |Action a{j}_{i}" for j, n in enumerate(sizes)
                      for i in range(n)]
            lines += [f"slates slot {draw(st.integers(0, n - 1))}:0.5 |Slot s{j}"
                      for j, n in enumerate(sizes)]
        examples.append("\n".join(lines))
    return kind, "\n\n".join(examples) + "\n"


@settings(max_examples=25, deadline=None)
@given(slot_streams())
def test_every_example_and_slot_vw_predicts_is_read_with_vws_widths(tmp_path_factory, stream):
    """VW reads the same text: as many examples, slots and actions per slot as ours (VW's
    slot j excludes the actions its earlier slots chose: its first of each line)."""
    kind, text = stream
    folder = tmp_path_factory.mktemp("vw")
    (folder / "in.txt").write_text(text)
    flags = "--ccb_explore_adf" if kind == "ccb" else "--slates"
    Workspace(f"{flags} -d {folder / 'in.txt'} -p {folder / 'p.txt'} --quiet").finish()
    blocks = [b.split("\n") for b in (folder / "p.txt").read_text().strip("\n").split("\n\n")]
    examples = list(iter_slots(text.splitlines()))
    assert len(examples) == len(blocks)
    for example, block in zip(examples, blocks):
        assert len(example.slots) == len(block)
        slots = [Slot(None, None if kind == "ccb" else [
            a for a, s in zip(example.actions, example.action_slots) if s == j], line.include)
            for j, line in enumerate(example.slots)]
        taken: set[int] = set()
        for j, line in enumerate(block):
            _, indices = offered(example.actions, slots, j, taken)
            assert (len(line.split(",")) if line else 0) == len(indices)
            if line and kind == "ccb":
                taken.add(int(line.split(":")[0]))


# -- the command ---------------------------------------------------------------------------

def command(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regcb_stream", *args], input=stdin,
                          capture_output=True, text=True, timeout=300)


def ccb_stream(n: int, seed: int = 0, n_actions: int = 4, n_slots: int = 3) -> str:
    """Logged CCB text: user u0/u1, action 1 + user the best in every slot (cost 0 in the
    first, 1/2 in the second ...; 1 for the others)."""
    rng, examples = np.random.default_rng(seed), []
    for _ in range(n):
        user = int(rng.integers(2))
        lines = [f"ccb shared |User u{user}"]
        lines += [f"ccb action |Action a{i}" for i in range(n_actions)]
        for j, action in enumerate(rng.permutation(n_actions)[:n_slots]):
            cost = 1.0 - 1.0 / (j + 1) if action == 1 + user else 1.0
            lines.append(f"ccb slot {action}:{cost:g}:{1 / (n_actions - j):.6f} |Slot s{j}")
        examples.append("\n".join(lines))
    return "\n\n".join(examples) + "\n\n"


SLATES = """slates shared 0.8 |User a
slates action 0 |Action a0
slates action 0 |Action a1
slates action 0 |Action a2
slates action 1 |Action b0
slates action 1 |Action b1
slates slot 1:0.8 |Slot s0
slates slot 0:0.6 |Slot s1

"""


@pytest.mark.parametrize("flag, text", [("--ccb_explore_adf", ccb_stream(40)),
                                        ("--slates", SLATES * 5)])
def test_the_command_writes_vws_lines_per_slot(flag, text, tmp_path):
    """As many examples and slot lines as VW's -p, each slot's actions VW's (the pool less
    what the slot's earlier ones drew), every line a distribution; the same twice."""
    data = tmp_path / "in.txt"
    data.write_text(text)
    Workspace(f"{flag} -d {data} -p {tmp_path / 'vw.p'} --quiet").finish()
    ours = command(flag, "-d", str(data), "-p", "/dev/stdout", "--quiet")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == command(flag, "-d", str(data), "-p", "-", "--quiet").stdout
    theirs = (tmp_path / "vw.p").read_text().strip("\n").split("\n\n")
    blocks = ours.stdout.strip("\n").split("\n\n")
    assert len(blocks) == len(theirs) == text.count("\n\n")
    for block, example in zip(blocks, theirs):
        lines = block.split("\n")
        assert len(lines) == len(example.split("\n"))
        drawn = set()
        for line, vw_line in zip(lines, example.split("\n")):
            pmf = dict(map(float, pair.split(":")) for pair in line.split(","))
            assert len(pmf) == len(vw_line.split(",")) and sum(pmf.values()) == pytest.approx(
                1.0, abs=1e-5)
            if flag == "--ccb_explore_adf":
                assert drawn.isdisjoint(pmf)
                drawn.add(int(line.split(":")[0]))


def test_the_command_learns_each_users_best_first_slot(tmp_path):
    data = tmp_path / "in.txt"
    data.write_text(ccb_stream(600, seed=1))
    out = command("--ccb_explore_adf", "-d", str(data), "-p", "-", "--quiet").stdout
    last = [block.split("\n")[0] for block in out.strip("\n").split("\n\n")[-100:]]
    users = [line.split("|User u")[1][0] for line in data.read_text().split("\n")
             if line.startswith("ccb shared")][-100:]
    best = sum(line.startswith(f"{1 + int(user)}:") for line, user in zip(last, users))
    assert best >= 80


def test_a_model_file_resumes_the_slots_exactly(tmp_path):
    text = ccb_stream(60, seed=2)
    cut = text.index("\n\n", len(text) // 2) + 2
    whole = command("--ccb_explore_adf", "-p", "-", "--quiet", stdin=text).stdout
    model = tmp_path / "m.regcb"
    head = command("--ccb_explore_adf", "-p", "-", "--quiet", "-f", str(model),
                   stdin=text[:cut]).stdout
    tail = command("-i", str(model), "-p", "-", "--quiet", stdin=text[cut:])
    assert tail.returncode == 0, tail.stderr
    assert head + tail.stdout == whole
    other = command("--slates", "-i", str(model), "--quiet", stdin=SLATES)
    assert other.returncode == 2 and "--slates conflicts with --ccb_explore_adf" in other.stderr


@pytest.mark.parametrize("args, message", [
    (["--ccb_explore_adf", "--readable_model", "m.txt"],
     "--readable_model: not with --ccb_explore_adf"),
    (["--slates", "-q", "UA"], "-q: not with --slates"),
    (["--ccb_explore_adf", "--slates"], "not allowed with argument"),
])
def test_flags_the_slots_do_not_take_are_refused(args, message):
    done = command(*args, stdin=SLATES)
    assert done.returncode == 2 and message in done.stderr


def test_a_bad_example_stops_naming_its_line_and_lenient_skips_it():
    bad = "ccb shared |u\nccb action |a\nccb slot 5:0:0.5 |s\n\n"
    text = ccb_stream(2) + bad + ccb_stream(1, seed=3)
    done = command("--ccb_explore_adf", "-p", "-", "--quiet", stdin=text)
    assert done.returncode == 1 and "line 21" in done.stderr and "outside" in done.stderr
    assert done.stdout.count("\n\n") == 2  # the examples before it are written
    lenient = command("--ccb_explore_adf", "--lenient", "-p", "-", stdin=text)
    assert lenient.returncode == 0 and lenient.stdout.count("\n\n") == 3
    slates = command("--ccb_explore_adf", "-p", "-", "--quiet", stdin=SLATES)
    assert slates.returncode == 1 and "reads ccb examples" in slates.stderr


def test_a_cost_outside_the_range_is_learned_with_one_warning():
    text = SLATES.replace("slates shared 0.8", "slates shared -1") * 3
    done = command("--slates", "-p", "-", "--quiet", stdin=text)
    assert done.returncode == 0 and done.stderr.count("warning") == 1
    assert "line 1: cost -1 is outside [cb_min_cost, cb_max_cost] = [0, 1]" in done.stderr


def ccb_json(n: int, seed: int = 0) -> str:
    """CCB DSJSON events: 3 actions, 2 slots (the second may take actions 0 and 2 only)."""
    rng, lines = np.random.default_rng(seed), []
    for t in range(n):
        first, second = int(rng.integers(3)), int(rng.choice([0, 2]))
        event = {"EventId": f"e{t}", "c": {
            "User": {"id": f"u{t % 2}"},
            "_multi": [{"Action": {"id": f"a{i}"}} for i in range(3)],
            "_slots": [{"_id": "top", "Slot": {"place": "top"}},
                       {"_id": "side", "Slot": {"place": "side"}, "_inc": [0, 2]}]},
            "_outcomes": [{"_label_cost": -float(first == t % 2), "_a": [first],
                           "_p": [1 / 3]},
                          {"_label_cost": 0.0, "_a": [second], "_p": [0.5]}]}
        lines.append(json.dumps(event))
    return "\n".join(lines) + "\n"


def test_ccb_dsjson_is_read_as_vw_reads_it():
    example, = iter_slots_dsjson(ccb_json(1).splitlines())
    assert example.kind == "ccb" and example.tag == "e0" and len(example.actions) == 3
    assert example.slots[1].include == (0, 2) and example.slots[1].outcome.prob == 0.5
    cb_event = ('{"_label_cost":-1,"_label_probability":0.2,"_labelIndex":1,"a":[2,1],'
                '"c":{"F":"1","_multi":[{"F":"2"},{"F":"3"}]},"p":[0.2,0.8],"pdrop":0.5}')
    one, = iter_slots_dsjson([cb_event])
    assert len(one.slots) == 1 and one.slots[0].outcome[:3] == (1, -1.0, 0.2)
    assert one.weight == 2.0
    for bad, detail in (('"_outcomes":[{"_label_cost":0,"_a":[0,1],"_p":[1]}]', "as many"),
                        ('"_outcomes":[{"_label_cost":0,"_a":[0],"_p":[0]}]', r"\(0, 1\]"),
                        ('"_outcomes":[{},{}]', "2 outcomes for 1 slots")):
        line = '{"c":{"_multi":[{"a":1},{"b":1}],"_slots":[{"s":1}]},' + bad + "}"
        with pytest.raises(VWParseError, match=detail):
            list(iter_slots_dsjson([line]))


def test_the_command_reads_ccb_dsjson_with_vws_widths(tmp_path):
    data = tmp_path / "events.json"
    data.write_text(ccb_json(30))
    Workspace(f"--ccb_explore_adf --dsjson -d {data} -p {tmp_path / 'vw.p'} --quiet").finish()
    ours = command("--ccb_explore_adf", "--dsjson", "-d", str(data), "-p", "-", "--quiet")
    assert ours.returncode == 0, ours.stderr

    def slots(text):  # each example's (top's width, side's width, what side could take)
        out = []
        for block in text.strip("\n").split("\n\n"):
            top, side = block.split("\n")
            drawn = int(top.split(":")[0])
            out.append((len(top.split(",")), len(side.split(",")), len({0, 2} - {drawn})))
        return out

    ours_slots, vw_slots = slots(ours.stdout), slots((tmp_path / "vw.p").read_text())
    assert len(ours_slots) == len(vw_slots) == 30
    assert all(top == 3 and side == left for top, side, left in ours_slots + vw_slots)
    event = ('{"_label_cost":0.5,"c":{"u":1,"_multi":[{"_slot_id":0,"f":1},{"_slot_id":0,'
             '"f":2},{"_slot_id":0,"f":3},{"_slot_id":1,"f":4},{"_slot_id":1,"f":5}],'
             '"_slots":[{"s":1},{"s":2}]},"_outcomes":[{"_a":[2,0,1],"_p":[0.5,0.25,0.25]},'
             '{"_a":[1],"_p":[1]}]}\n')
    slate, = iter_slots_dsjson([event])
    assert (slate.kind, slate.action_slots, slate.cost) == ("slates", (0, 0, 0, 1, 1), 0.5)
    assert slate.slots[0].outcome[:3] == (2, 0.0, 0.5)
    slates = command("--slates", "--dsjson", "-p", "-", "--quiet", stdin=event * 3)
    assert slates.returncode == 0, slates.stderr
    assert [len(line.split(",")) for line in slates.stdout.split("\n") if line] == [3, 2] * 3


def test_the_command_answers_each_example_as_it_arrives():
    """VW's interactive protocol: write an unlabelled example, read its slots' lines, then
    write it again with each slot's outcome (the reward of the drawn action)."""
    process = subprocess.Popen([sys.executable, "-m", "regcb_stream", "--ccb_explore_adf",
                                "-p", "-", "--quiet"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, bufsize=1)
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    try:
        for t in range(15):
            lines = [f"ccb shared |User u{t % 2}", *(f"ccb action |Action a{i}" for i in range(3))]
            process.stdin.write("\n".join([*lines, "ccb slot |Slot s0", "ccb slot |Slot s1"])
                                + "\n\n")
            process.stdin.flush()
            slots = [process.stdout.readline(), process.stdout.readline()]
            assert process.stdout.readline() == "\n"
            drawn = [tuple(line.split(",")[0].split(":")) for line in slots]
            assert drawn[0][0] != drawn[1][0]
            labels = [f"ccb slot {a}:{float(int(a) != t % 2)}:{p} |Slot s{j}"
                      for j, (a, p) in enumerate(drawn)]
            process.stdin.write("\n".join([*lines, *labels]) + "\n\n")
            process.stdin.flush()
            assert len([process.stdout.readline() for _ in range(3)]) == 3
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        process.kill()


# -- off-policy evaluation of slot logs ----------------------------------------------------

def test_slot_estimates_of_the_logging_policy_are_the_logged_means():
    """With the logging policy as the target (uniform over what each slot was offered),
    every weight is 1: each slot's IPS is its mean logged reward, the ranking's their sum,
    the slate's pseudo-inverse the mean slate reward."""
    examples = list(iter_slots(ccb_stream(300, seed=5).splitlines()))
    estimates = evaluate_slots(UniformPolicy(), examples)
    rewards = np.array([[-line.outcome.cost for line in e.slots] for e in examples])
    for j in range(3):
        assert estimates[f"slot {j}"]["ips"].value == pytest.approx(rewards[:, j].mean(), rel=1e-5)
    assert estimates["ranking"].value == pytest.approx(rewards.sum(axis=1).mean(), rel=1e-5)
    slates = list(iter_slots((SLATES.replace("1:0.8", "1:0.333333").replace(
        "0:0.6", "0:0.5") * 4).splitlines()))
    assert evaluate_slots(UniformPolicy(), slates)["slate"].value == pytest.approx(-0.8,
                                                                                   abs=1e-5)


def test_regcb_ope_scores_a_slot_model_per_slot(tmp_path):
    log, model = tmp_path / "log.txt", tmp_path / "m.regcb"
    log.write_text(ccb_stream(400, seed=6))
    assert command("--ccb_explore_adf", "-d", str(log), "-f", str(model),
                   "--quiet").returncode == 0
    ope = [sys.executable, "-m", "regcb_stream.evaluation.ope", "-d", str(log)]
    learned = subprocess.run([*ope, "--policy-model", str(model)], capture_output=True,
                             text=True)
    uniform = subprocess.run([*ope, "--ccb_explore_adf"], capture_output=True, text=True)
    assert learned.returncode == uniform.returncode == 0, learned.stderr + uniform.stderr

    def value(out, row):
        return float(next(line for line in out.splitlines() if line.startswith(row)).split()[
            len(row.split())])

    assert value(learned.stdout, "slot 0 ips") > value(uniform.stdout, "slot 0 ips") + 0.3
    empty = subprocess.run([*ope[:-1], "-", "--ccb_explore_adf"], input="ccb shared |u\nccb "
                           "action |a\nccb slot |s\n", capture_output=True, text=True)
    assert empty.returncode == 1 and "no slot with an outcome" in empty.stderr
