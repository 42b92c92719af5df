"""The regcb-stream command: VW -p output, pipes, model files, bad input."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from vowpalwabbit import Workspace

from regcb_stream.command.main import main
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.persist import load_model

VW_TESTS = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "vw_tests"
TRAIN = VW_TESTS / "train-sets"


def needs(path: pathlib.Path) -> pathlib.Path:
    if not path.exists():
        pytest.skip(f"{path} is missing (VW's test files come with ../shared/vw_tests)")
    return path


def run_cli(args, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regcb_stream", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def vw_predictions(args: str, data: pathlib.Path, tmp_path) -> str:
    out = tmp_path / "vw.predict"
    Workspace(f"{args} --quiet -d {data} -p {out}").finish()
    return out.read_text()


def cb_stream(n: int, seed: int = 0, k: int = 4) -> str:
    """Single-line --cb_explore K text of a linear problem, logged uniformly."""
    X, _, R = LinearProblem.make(n_actions=k, dim=3, seed=seed).sample(n, seed=seed + 1)
    rng = np.random.default_rng(seed)
    lines = []
    for t, (x, r) in enumerate(zip(X, R)):
        a = int(rng.integers(k))
        label = f"{a + 1}:{1 - r[a]:g}:{1 / k:g} " if t % 5 else ""  # some unlabelled
        lines.append(label + "|x " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x)))
    return "\n".join(lines) + "\n"


def first_example(path: pathlib.Path, tmp_path, adf: bool) -> pathlib.Path:
    text = path.read_text()
    first = text.split("\n\n")[0] + "\n\n" if adf else text.splitlines()[0] + "\n"
    out = tmp_path / path.name
    out.write_text(first)
    return out


# -- -p output against the vowpalwabbit package --------------------------------------------


@pytest.mark.parametrize("name, vw_args", [
    ("cb_test.ldf", "--cb_explore_adf --regcb --noconstant"),
    ("cb_load.dat", "--cb_explore_adf --regcb -q UA --mellowness .001"),
])
def test_adf_predictions_byte_identical_to_vw_on_uniform_example(name, vw_args, tmp_path):
    data = first_example(needs(TRAIN / name), tmp_path, adf=True)
    ours = run_cli([*vw_args.split(), "-d", str(data), "-p", "-", "--quiet"])
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == vw_predictions(vw_args, data, tmp_path)


def test_single_line_predictions_byte_identical_to_vw(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text("1:1:0.5 tagA|f a b\n")
    ours = run_cli(["--cb_explore", "4", "--regcb", "-d", str(data), "-p", "-", "--quiet"])
    assert ours.stdout == vw_predictions("--cb_explore 4 --regcb", data, tmp_path)
    assert ours.stdout == "0:0.25,1:0.25,2:0.25,3:0.25 tagA\n\n"


def test_legacy_predictions_byte_identical_to_vw(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text("1:1:0.5 tagA|f a b\n")
    ours = run_cli(["--cb_explore", "4", "--cb_force_legacy", "-d", str(data), "-p", "-",
                    "--quiet"])
    vw = vw_predictions("--cb_explore 4 --first 1 --cb_force_legacy", data, tmp_path)
    assert ours.stdout == vw == "0.250000 0.250000 0.250000 0.250000  tagA\n"


def test_progress_table_matches_vw_while_distributions_agree(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text("|f a b\n2:0:0.25 |f a c\n|f b\n3:-0.5:0.5 tagx|f a\n")
    ours = run_cli(["--cb_explore", "4", "--regcb", "-d", str(data)])
    vw = subprocess.run(
        [sys.executable, "-c", f"from vowpalwabbit import Workspace\n"
         f"Workspace('--cb_explore 4 --regcb -d {data}').finish()"],
        capture_output=True, text=True).stderr
    table = vw[vw.index("average  since"):]
    ours_table = "".join(line for line in ours.stderr.splitlines(keepends=True)
                         if not line.startswith(("warning: line 4: cost -0.5 is outside",
                                                 "exploration budget = ", "oracle = ",
                                                 "changes detected = ",
                                                 "Num weight bits = ")))
    assert ours_table == table
    assert "exploration budget = mellowness" in ours.stderr  # ours: the budget in force
    assert "changes detected = 0" in ours.stderr  # and the change test's count
    assert "unknown" in table and "-0.12500" in table


# -- streaming, interactivity, determinism -------------------------------------------------


class Interactive:
    """The command as a process that gets one example at a time and answers each."""

    def __init__(self, *flags: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "regcb_stream", *flags, "-p", "-", "--quiet"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, text: str) -> str:
        """Send an example; its prediction line (VW's blank line after it is checked)."""
        self.process.stdin.write(text)
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert self.process.stdout.readline() == "\n"
        return line

    def close(self) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def test_interactive_pipe_protocol():
    """Write an unlabelled example, read its distribution, sample, send the label."""
    command = Interactive("--cb_explore", "3")
    rng = np.random.default_rng(0)
    try:
        for t in range(20):
            features = f"|x a:{t % 2} b:{1 - t % 2}"
            line = command.ask(features + "\n")
            pmf = {int(a): float(p) for a, p in (pair.split(":") for pair in line.split(","))}
            assert sorted(pmf) == [0, 1, 2] and abs(sum(pmf.values()) - 1) < 1e-5
            actions = sorted(pmf)
            action = int(rng.choice(actions, p=[pmf[a] / sum(pmf.values()) for a in actions]))
            cost = 0.0 if action == t % 2 else 1.0
            assert command.ask(f"{action + 1}:{cost}:{pmf[action]} {features}\n").count(":") == 3
    finally:
        assert command.close() == 0


def test_interactive_pipe_protocol_adf():
    """ADF: an example is decided as soon as its empty line arrives, with no flag."""
    command = Interactive("--cb_explore_adf", "-q", "sa")
    actions = ["|a x", "|a y", "|a z"]
    try:
        for t in range(12):
            shared = f"shared |s f:{t % 3}\n"
            line = command.ask(shared + "\n".join(actions) + "\n\n")
            pmf = dict(pair.split(":") for pair in line.strip().split(","))
            assert sorted(pmf) == ["0", "1", "2"]
            chosen = max(range(3), key=lambda k: float(pmf[str(k)]))
            labelled = [f"0:{float(k != t % 3)}:{pmf[str(k)]} {a}" if k == chosen else a
                        for k, a in enumerate(actions)]
            assert command.ask(shared + "\n".join(labelled) + "\n\n").count(":") == 3
    finally:
        assert command.close() == 0


def test_main_called_again_and_again_in_one_process_keeps_nothing(tmp_path):
    """``main(argv)`` in a process that goes on (a test, a harness, a service) freezes
    nothing out of the cyclic collector: each run's objects are collected (a 100,000-input
    fuzz run of one process per 50,000 calls had grown to 13 GiB when each call froze what
    it had made)."""
    import gc

    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(50))
    frozen = gc.get_freeze_count()
    for _ in range(3):
        assert main(["--cb_explore", "4", "-d", str(data), "--quiet"]) == 0
    assert gc.get_freeze_count() == frozen


def test_same_input_same_output_and_python_m_equals_console_script(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(300))
    args = ["--cb_explore", "4", "--regcbopt", "--mellowness", "0.01", "-d", str(data),
            "-p", "-", "--quiet"]
    first, second = run_cli(args), run_cli(args)
    assert first.returncode == 0 and first.stdout == second.stdout
    script = pathlib.Path(sys.executable).parent / "regcb-stream"
    if script.exists():
        assert subprocess.run([script, *args], capture_output=True, text=True).stdout == \
            first.stdout


# -- model files ----------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [
    ["--cb_explore", "4", "--regcb"],
    ["--cb_explore", "4", "--regcbopt", "--schedule", "sqrt2", "--beta", "1e-3"],
    ["--cb_explore", "4", "--regcbopt", "--auto_budget"],
    ["--cb_explore", "4", "--regcb", "--auto_budget", "0,0.01,0.1"],
])
def test_save_and_resume_equals_one_run(flags, tmp_path):
    lines = cb_stream(400).splitlines(keepends=True)
    whole, head, tail = (tmp_path / n for n in ("whole.dat", "head.dat", "tail.dat"))
    whole.write_text("".join(lines))
    head.write_text("".join(lines[:173]))
    tail.write_text("".join(lines[173:]))
    model = tmp_path / "model.regcb"
    one = run_cli([*flags, "-d", str(whole), "-p", "-", "--quiet"])
    part1 = run_cli([*flags, "-d", str(head), "-p", "-", "--quiet", "-f", str(model)])
    part2 = run_cli(["-i", str(model), "-d", str(tail), "-p", "-", "--quiet"])
    assert one.returncode == part1.returncode == part2.returncode == 0, part2.stderr
    assert part1.stdout + part2.stdout == one.stdout
    assert list(tmp_path.glob("*.tmp")) == []


def test_resume_with_conflicting_flags_is_refused(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(20))
    model = tmp_path / "model.regcb"
    assert run_cli(["--cb_explore", "4", "-d", str(data), "-f", str(model), "--quiet"]) \
        .returncode == 0
    refused = run_cli(["--cb_explore", "5", "-i", str(model), "-d", str(data), "--quiet"])
    assert refused.returncode == 2 and "--cb_explore 5 conflicts with --cb_explore 4" in \
        refused.stderr


def test_a_file_that_is_not_a_model_is_refused(tmp_path):
    bogus = tmp_path / "bogus.regcb"
    bogus.write_text("hello")
    refused = run_cli(["-i", str(bogus)], "")
    assert refused.returncode == 2 and "not a regcb-stream model file" in refused.stderr



def test_a_model_whose_saved_oracle_is_not_a_name_is_refused(tmp_path):
    """A model file whose saved ``--oracle`` is not one of the command's (a list here) is
    refused as damaged, naming the file, not a traceback at the progress table's head."""
    import io
    import zipfile

    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(20))
    model, damaged = tmp_path / "m.regcb", tmp_path / "damaged.regcb"
    assert main(["--cb_explore", "4", "-d", str(data), "-f", str(model), "--quiet"]) == 0
    with zipfile.ZipFile(model) as source, zipfile.ZipFile(damaged, "w") as out:
        for name in source.namelist():
            blob = source.read(name)
            if name == "header.npy":
                text = np.load(io.BytesIO(blob)).tobytes().decode()
                assert '["oracle", "ridge"]' in text
                buffer = io.BytesIO()
                np.save(buffer, np.frombuffer(text.replace(
                    '["oracle", "ridge"]', '["oracle", ["x"]]').encode(), np.uint8))
                blob = buffer.getvalue()
            out.writestr(name, blob)
    refused = run_cli(["-i", str(damaged), "-d", str(data)], "")
    assert refused.returncode == 2 and "damaged" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("value", ["1e400", "nan", "0", "-1"])
def test_oracle_memory_must_be_a_finite_positive_number(value):
    refused = run_cli(["--cb_explore", "4", "--oracle_memory", value], "")
    assert refused.returncode == 2 and "--oracle_memory" in refused.stderr
    assert "Traceback" not in refused.stderr


# -- bad input -------------------------------------------------------------------------------

GOOD = "1:0.5:0.25 |x a:1\n2:0:0.5 |x b:1\n"


@pytest.mark.parametrize("bad, mode, message", [
    ("1:x:0.5 |x a", "cb", "cost"),
    ("1:0.5:1.5 |x a", "cb", "probability"),
    ("1:0.5:0 |x a", "cb", "probability"),
    ("1:0.5:0.5:7 |x a", "cb", "label"),
    ("0:0.5:0.5 |x a", "cb", "action"),
    ("5:0.5:0.5 |x a", "cb", "action"),
    ("1:0.5:0.5 |x a:abc", "cb", "value"),
    ("shared |s a\n0:1:0.5 |x a\n0:0:0.5 |x b\n", "adf", "label"),
])
def test_bad_input_names_the_line_and_keeps_earlier_predictions(bad, mode, message, tmp_path):
    flags = ["--cb_explore", "4"] if mode == "cb" else ["--cb_explore_adf"]
    good = GOOD if mode == "cb" else "shared |s a\n|x a\n0:1:0.5 |x b\n\n"
    text = good + bad + "\n"
    bad_line = good.count("\n") + 1 + (2 if mode == "adf" else 0)
    result = run_cli([*flags, "-p", "-", "--quiet"], text)
    assert result.returncode == 1
    assert f"line {bad_line}" in result.stderr and message in result.stderr.lower()
    assert result.stdout.count("\n\n") == (2 if mode == "cb" else 1)  # earlier predictions
    lenient = run_cli([*flags, "-p", "-", "--lenient"], text + good)
    assert lenient.returncode == 0, lenient.stderr
    assert "warning" in lenient.stderr and "skipped examples = 1" in lenient.stderr
    assert lenient.stdout.count("\n\n") == (4 if mode == "cb" else 2)


def test_an_example_that_never_ends_is_an_error():
    text = "shared |s a\n" + "|x a\n" * 10_001
    result = run_cli(["--cb_explore_adf", "--quiet"], text)
    assert result.returncode == 1 and "line" in result.stderr


def test_bad_flags_exit_2():
    assert run_cli(["--quiet"]).returncode == 2
    assert run_cli(["--cb_explore", "0"]).returncode == 2
    assert run_cli(["--cb_explore_adf", "--cb_force_legacy"]).returncode == 2


def test_main_is_callable_in_process(tmp_path, capsys):
    data = tmp_path / "cb.dat"
    data.write_text(GOOD)
    assert main(["--cb_explore", "2", "-d", str(data), "-p", "-", "--quiet"]) == 0
    assert capsys.readouterr().out == "0:0.5,1:0.5\n\n1:1,0:0\n\n"


# -- epoch blocks ------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["online", "sqrt2", "doubling"])
def test_blocks_give_the_same_output_as_example_by_example(schedule, tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(600, seed=3))
    args = ["--cb_explore", "4", "--regcbopt", "--schedule", schedule, "-p", "-", "--quiet"]
    from_file = run_cli([*args, "-d", str(data)])  # a regular file: blocks
    piped = run_cli(args, data.read_text())  # stdin: as much as is there
    assert from_file.returncode == piped.returncode == 0
    assert from_file.stdout == piped.stdout
    assert from_file.stdout.count("\n\n") == 600


def test_a_bad_example_mid_block_keeps_the_predictions_before_it(tmp_path):
    lines = cb_stream(100).splitlines()
    lines[70] = "1:0.5:2 |x a"
    data = tmp_path / "cb.dat"
    data.write_text("\n".join(lines) + "\n")
    result = run_cli(["--cb_explore", "4", "--schedule", "doubling", "-d", str(data),
                      "-p", "-", "--quiet"])
    assert result.returncode == 1 and "line 71" in result.stderr
    assert result.stdout.count("\n\n") == 70


def adf_stream(n: int, seed: int = 0) -> str:
    """ADF text of a noisy linear problem with 3 or 4 actions, logged uniformly; every
    fifth example unlabelled."""
    rng = np.random.default_rng(seed)
    examples = []
    for t in range(n):
        k = 4 if t % 7 == 0 else 3
        x = rng.normal(size=3)
        played = int(rng.integers(k))
        lines = ["shared |s " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))]
        for a in range(k):
            cost = float(rng.random() < 0.5 + 0.4 * np.tanh(x[a % 3]))
            label = f"0:{cost:g}:{1 / k:.4f} " if a == played and t % 5 else ""
            lines.append(f"{label}|a act{a} w:{0.5 * a + 0.1:g}")
        examples.append("\n".join(lines) + "\n\n")
    return "".join(examples)


@pytest.mark.parametrize("schedule", ["online", "doubling"])
@pytest.mark.parametrize("oracle", ["ridge", "vw"])
def test_adf_blocks_give_the_same_output_as_example_by_example(schedule, oracle, tmp_path):
    data = tmp_path / "adf.dat"
    data.write_text(adf_stream(300))
    args = ["--cb_explore_adf", "-q", "sa", "--regcbopt", "--mellowness", "0.01", "--oracle",
            oracle, "--schedule", schedule, "-p", "-", "--quiet"]
    from_file = run_cli([*args, "-d", str(data)])  # a regular file: blocks
    piped = run_cli(args, data.read_text())  # stdin: example by example
    assert from_file.returncode == piped.returncode == 0, from_file.stderr
    assert from_file.stdout == piped.stdout
    assert from_file.stdout.count("\n\n") == 300


def one_at_a_time(args: list[str], examples: list[str]) -> str:
    """The ``-p`` output of examples written one at a time, each after the prediction of
    the one before was read (blocks of one example, whatever the machine's speed)."""
    process = subprocess.Popen([sys.executable, "-m", "regcb_stream", *args, "-p", "-",
                                "--quiet"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, bufsize=1)
    out = []
    try:
        for example in examples:
            process.stdin.write(example)
            process.stdin.flush()
            out += iter(process.stdout.readline, "\n")
            out.append("\n")
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    return "".join(out)


@pytest.mark.parametrize("schedule", ["online", "sqrt2"])
def test_a_log_whose_features_keep_coming_gives_one_output_however_it_is_cut(schedule,
                                                                            tmp_path):
    """An id on every shared line: the oracle grows, refreshes its inverse and hands over
    to the bounded ridge at the same examples in blocks of hundreds and of one."""
    rng = np.random.default_rng(1)
    examples = []
    for t in range(250):
        played, cost = int(rng.integers(4)), int(rng.random() < 0.3 + 0.1 * (t % 3))
        lines = [f"shared |s id{rng.integers(10**6)} g{t % 3}"]
        lines += [f"{f'0:{cost}:0.25 ' if a == played else ''}|a act{a}" for a in range(4)]
        examples.append("\n".join(lines) + "\n\n")
    data = tmp_path / "ids.dat"
    data.write_text("".join(examples))
    args = ["--cb_explore_adf", "-q", "sa", "--schedule", schedule]
    from_file = run_cli([*args, "-d", str(data), "-p", "-", "--quiet"])
    assert from_file.returncode == 0, from_file.stderr
    assert one_at_a_time(args, examples) == from_file.stdout
    summary = run_cli([*args, "-d", str(data), "-p", "/dev/null"]).stderr
    assert "bounded ridge" in summary  # (handed over on the way)


def test_optimistic_prior_flags(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(200))
    base = ["--cb_explore", "4", "--regcbopt", "--mellowness", "0.01", "-d", str(data),
            "-p", "-", "--quiet"]
    plain = run_cli(base)
    optimistic = run_cli([*base, "--ridge_prior", "optimistic", "--ridge_l2", "3"])
    assert plain.returncode == optimistic.returncode == 0
    assert optimistic.stdout.count("\n\n") == 200 and optimistic.stdout != plain.stdout
    refused = run_cli([*base, "--oracle", "vw", "--ridge_prior", "optimistic"])
    assert refused.returncode == 2 and "apply to the ridge oracles only" in refused.stderr
    assert run_cli([*base, "--ridge_l2", "0"]).returncode == 2


def test_adf_defaults_and_prior_flags(tmp_path):
    """ADF examples take RegCB()'s oracle (the prior settled by the actions' features);
    --ridge_prior and --ridge_l2 name another."""
    data = tmp_path / "adf.dat"
    data.write_text(adf_stream(120))
    base = ["--cb_explore_adf", "-d", str(data), "-p", "-", "--quiet"]
    outputs = {flags: run_cli([*base, *flags.split()]) for flags in (
        "", "--ridge_prior auto --ridge_l2 1", "--ridge_prior optimistic",
        "--ridge_prior midpoint", "--ridge_l2 3")}
    assert all(out.returncode == 0 for out in outputs.values())
    same = {out.stdout for flags, out in outputs.items() if "3" not in flags and "mid" not in flags}
    assert same == {outputs[""].stdout}  # each action has its own features (act0, ...)
    assert len({out.stdout for out in outputs.values()}) == 3


def test_a_bad_adf_example_mid_block_keeps_the_predictions_before_it(tmp_path):
    examples = adf_stream(100).split("\n\n")[:100]
    lines = examples[70].split("\n")
    lines[1] = "0:0.5:2 " + lines[1][lines[1].index("|"):]  # probability 2, first action
    examples[70] = "\n".join(lines)
    data = tmp_path / "adf.dat"
    data.write_text("\n\n".join(examples) + "\n\n")
    bad_line = sum(e.count("\n") + 2 for e in examples[:70]) + 2
    result = run_cli(["--cb_explore_adf", "--schedule", "doubling", "-d", str(data), "-p", "-",
                      "--quiet"])
    assert result.returncode == 1 and f"line {bad_line}" in result.stderr, result.stderr
    assert "probability" in result.stderr
    assert result.stdout.count("\n\n") == 70


@pytest.mark.parametrize("mode", ["cb", "adf"])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_bytes_that_are_not_utf8_fail_their_line(mode, via, tmp_path):
    if mode == "cb":
        flags, good, bad = ["--cb_explore", "4"], GOOD.encode(), b"1:0.5:0.25 |x \xff\xfe a\n"
    else:
        flags, good = ["--cb_explore_adf"], b"shared |s a\n|x a\n0:1:0.5 |x b\n\n"
        bad = b"shared |s a\n|x \xff\n0:1:0.5 |x b\n\n"
    data = tmp_path / "bad.dat"
    data.write_bytes(good + bad + good)
    for lenient in (False, True):
        args = [sys.executable, "-m", "regcb_stream", *flags, "-p", "-", "--quiet"]
        args += ["--lenient"] if lenient else []
        args += ["-d", str(data)] if via == "file" else []
        result = subprocess.run(args, input=data.read_bytes() if via == "stdin" else b"",
                                capture_output=True, timeout=60)
        stderr = result.stderr.decode()
        assert "not valid UTF-8" in stderr and "line" in stderr, stderr
        if lenient:
            assert result.returncode == 0 and result.stdout.count(b"\n\n") == 2 * (
                good.count(b"\n\n") if mode == "adf" else good.count(b"\n"))
        else:
            assert result.returncode == 1


@pytest.mark.parametrize("lenient", [False, True])
def test_a_bad_shared_line_mid_block_names_its_line(lenient, tmp_path):
    examples = adf_stream(100).split("\n\n")[:100]
    examples[70] = examples[70].replace("f1:", "f1:x", 1)  # shared lines are parsed per block
    data = tmp_path / "adf.dat"
    data.write_text("\n\n".join(examples) + "\n\n")
    bad_line = sum(e.count("\n") + 2 for e in examples[:70]) + 1
    result = run_cli(["--cb_explore_adf", "-q", "sa", "--schedule", "doubling", "-d", str(data),
                      "-p", "-", "--quiet"] + (["--lenient"] if lenient else []))
    assert f"line {bad_line}: 'shared |s f0:" in result.stderr, result.stderr
    assert "is not a number" in result.stderr
    assert result.returncode == (0 if lenient else 1)
    assert result.stdout.count("\n\n") == (99 if lenient else 70)


def test_adf_save_and_resume_equals_one_run(tmp_path):
    """The joint model in blocks (``-q sa`` crosses) is saved and resumed exactly."""
    rng = np.random.default_rng(3)
    examples = []
    for t in range(300):  # 8 actions over 6 features: blocks pay (see oracles/ridge.py)
        x, played = rng.normal(size=6), int(rng.integers(8))
        lines = ["shared |s " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))]
        for a in range(8):
            cost = float(rng.random() < 0.5 + 0.4 * np.tanh(x[a % 6]))
            lines.append((f"0:{cost:g}:0.125 " if a == played else "") + f"|a act{a}")
        examples.append("\n".join(lines))
    whole, head, tail = (tmp_path / n for n in ("whole.dat", "head.dat", "tail.dat"))
    whole.write_text("\n\n".join(examples))
    head.write_text("\n\n".join(examples[:137]) + "\n\n")
    tail.write_text("\n\n".join(examples[137:]))
    flags, model = ["--cb_explore_adf", "-q", "sa", "--regcb"], tmp_path / "model.regcb"
    one = run_cli([*flags, "-d", str(whole), "-p", "-", "--quiet"])
    part1 = run_cli([*flags, "-d", str(head), "-p", "-", "--quiet", "-f", str(model)])
    part2 = run_cli(["-i", str(model), "-d", str(tail), "-p", "-", "--quiet"])
    assert one.returncode == part1.returncode == part2.returncode == 0, part2.stderr
    assert part1.stdout + part2.stdout == one.stdout
    learner = load_model(model)[0]
    assert learner.model.oracle.state()["blocks"] is not None  # the run used the blocks


# -- flag errors: one line, exit status 2, in the flags' words (issue 44, items 7 and 13) ------


def one_line_refusal(args, stdin: str = "") -> str:
    result = run_cli(args, stdin)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "usage:" not in result.stderr and "Traceback" not in result.stderr
    return result.stderr


@pytest.mark.parametrize("spec", ["a", "abc"])
def test_a_cross_of_other_than_two_namespaces_is_a_flag_error(spec):
    err = one_line_refusal(["--cb_explore", "4", "-q", spec], "|s x\n")
    assert f"-q {spec}: regcb-stream crosses two namespaces" in err


def test_vw_compat_keeps_vws_shared_ties():
    err = one_line_refusal(["--cb_explore", "4", "--oracle", "vw", "--vw_compat", "--ties",
                            "clipped"], "|s x\n")
    assert "--ties clipped: --vw_compat keeps VW's ties" in err


def test_cluster_flags_that_cannot_run_are_flag_errors(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(20))
    base = ["--cb_explore", "4", "-d", str(data), "--scheduler", "local", "--schedule", "sqrt2"]
    assert "not with --oracle vw" in one_line_refusal([*base, "--oracle", "vw"])
    assert "not --auto_budget" in one_line_refusal([*base, "--auto_budget"])
    err = one_line_refusal(["--cb_explore", "4", "-d", str(data), "--workers", "3"])
    assert "--workers 3 applies with --scheduler local" in err


def test_api_errors_are_printed_in_the_flags_words():
    err = one_line_refusal(["--cb_explore", "4", "--mellowness", "-1"])
    assert "--mellowness must be a finite number > 0; got -1" in err
    assert "parameter" not in err and "None" not in err
    err = one_line_refusal(["--cb_explore", "4", "--auto_budget", "--oracle", "vw"])
    assert "--auto_budget needs an ellipsoid oracle" in err and "not --oracle vw" in err


def test_a_resume_conflict_names_the_flags(tmp_path):
    data, model = tmp_path / "cb.dat", tmp_path / "m.regcb"
    data.write_text(cb_stream(20))
    assert run_cli(["--cb_explore", "4", "-d", str(data), "-f", str(model), "--quiet"]) \
        .returncode == 0
    err = one_line_refusal(["--cb_explore_adf", "-i", str(model)])
    assert f"--cb_explore_adf conflicts with --cb_explore 4 in the model file {model}" in err
    err = one_line_refusal(["--cb_explore", "4", "-q", "ab", "-i", str(model)])
    assert "-q ab conflicts with no -q" in err


@pytest.mark.parametrize("flags, budget", [
    (["--dsjson"], "mellowness 0.01 or 0.001 (by the model class: no example showed it)"),
    (["--cb_explore", "4"],
     "mellowness 0.003 or 0.0003 (by the model class: no example showed it)"),
    (["--cb_explore", "4", "--oracle", "bounded"], "mellowness 0.0003"),
    (["--cb_explore_adf", "--oracle", "vw"], "mellowness 0.1"),
    (["--cb_explore", "4", "--mellowness", "0.2"], "mellowness 0.2")])
def test_a_run_without_examples_reports_the_budget_its_flags_name(flags, budget):
    result = run_cli(flags, "")
    assert result.returncode == 0
    assert f"exploration budget = {budget}\n" in result.stderr


def test_carriage_returns_a_bom_and_empty_lines_are_read_as_vw_reads_them(tmp_path):
    """A stream with Windows line ends, a byte-order mark and empty lines gives the
    predictions of the clean stream, and a bad line is named by its number in the file."""
    lines = cb_stream(300, seed=5).splitlines()
    messy = ["\ufeff" + lines[0], *lines[1:150], "", *lines[150:]]
    clean, dirty = tmp_path / "clean.dat", tmp_path / "dirty.dat"
    clean.write_text("\n".join(lines) + "\n")
    dirty.write_bytes(("\r\n".join(messy) + "\r\n").encode())
    args = ["--cb_explore", "4", "-p", "-", "--quiet", "-d"]
    assert run_cli([*args, str(dirty)]).stdout == run_cli([*args, str(clean)]).stdout
    messy[200] = "1:0.5:2 |x a"
    dirty.write_bytes(("\r\n".join(messy) + "\r\n").encode())
    result = run_cli([*args, str(dirty)])
    assert result.returncode == 1 and "line 201" in result.stderr
