"""``regcb-stream --scheduler``: a labelled log replayed on a local Dask cluster writes the
serial run's predictions, progress table and model file, byte for byte."""

from __future__ import annotations

import contextlib
import pathlib
import shutil

import pytest
from test_harness import need

from regcb_stream.command import main
from regcb_stream.datasets import logs, uci
from regcb_stream.stream import parallel

pytest.importorskip("dask.distributed")

VW_TESTS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "vw_tests" / "train-sets"


@pytest.fixture(autouse=True)
def short_epochs_spread(monkeypatch):
    """Epochs of 1,000 labels and more go to the workers (a test log is short)."""
    monkeypatch.setattr(parallel, "MIN_SPREAD", 1000)


def letter_text(path: pathlib.Path, n: int, adf: bool) -> pathlib.Path:
    need("letter.tsv.gz")
    X, R = uci.long_stream("letter", n)
    logs.write_logged_stream(path, X, R, adf=adf)
    return path


def run(tmp_path, name: str, flags: list[str], capsys) -> tuple:
    """The command's exit status, predictions, stderr and model file (the same file
    names each run: stderr may name them)."""
    (tmp_path / name).mkdir()
    predictions, model = tmp_path / name / "p", tmp_path / name / "model"
    with contextlib.chdir(tmp_path / name):
        status = main.main([*flags, "-p", "p", "-f", "model"])
    stderr = capsys.readouterr().err
    saved = model.read_bytes() if model.exists() else None
    return status, predictions.read_text(), stderr, saved


def same_as_serial(tmp_path, flags: list[str], capsys, workers: int = 2) -> tuple:
    serial = run(tmp_path, "serial", flags, capsys)
    spread = run(tmp_path, "spread", [*flags, "--scheduler", "local", "--workers",
                                      str(workers)], capsys)
    assert spread == serial
    return serial


@pytest.mark.parametrize("schedule", ["sqrt2", "doubling"])
def test_single_line_text_is_the_serial_run(tmp_path, capsys, schedule):
    log = letter_text(tmp_path / "letter.txt", 6_000, adf=False)
    status, predictions, stderr, _ = same_as_serial(
        tmp_path, ["--cb_explore", "26", "--schedule", schedule, "-d", str(log)], capsys)
    assert status == 0 and len(predictions.splitlines()) == 2 * 6_000


def test_adf_with_interactions_is_the_serial_run(tmp_path, capsys):
    log = letter_text(tmp_path / "letter.adf", 3_000, adf=True)
    same_as_serial(tmp_path, ["--cb_explore_adf", "-q", "sa", "--schedule", "doubling",
                              "-d", str(log)], capsys, workers=3)


def test_a_glob_of_dsjson_files_is_the_serial_run_on_them(tmp_path, capsys):
    for part in ("dsjson_cb_part1.json", "dsjson_cb_part2.json"):
        if not (VW_TESTS / part).exists():
            pytest.skip(f"{VW_TESTS / part} is missing")
        shutil.copy(VW_TESTS / part, tmp_path / part)
    pattern = str(tmp_path / "dsjson_cb_part*.json")
    status, predictions, _, _ = same_as_serial(
        tmp_path, ["--dsjson", "--schedule", "sqrt2", "-d", pattern], capsys)
    joined = tmp_path / "joined.json"
    joined.write_text("".join((tmp_path / p).read_text() for p in (
        "dsjson_cb_part1.json", "dsjson_cb_part2.json")))
    one_file = run(tmp_path, "joined", ["--dsjson", "--schedule", "sqrt2", "-d",
                                        str(joined)], capsys)
    assert (status, predictions) == one_file[:2] and status == 0


def test_the_runs_spread_their_long_epochs(tmp_path):
    """The cluster does the work: every epoch of 1,000 labels or more goes to workers."""
    from regcb_stream.command import configure, log_replay
    from regcb_stream.command.driver import Driver
    from regcb_stream.command.progress import ProgressTable
    from regcb_stream.stream.cluster import connect

    log = letter_text(tmp_path / "letter.txt", 6_000, adf=False)
    args = main.build_parser().parse_args(["--cb_explore", "26", "--schedule", "sqrt2"])
    learner, settings = configure.setup(args)
    trace = []
    with connect("local", 2) as client:
        log_replay.replay(Driver(learner, settings, None, ProgressTable(None)), [str(log)],
                          client, trace)
    assert [parts > 0 for labels, parts, *_ in trace] == [
        labels >= 1000 for labels, *_ in trace]
    assert sum(labels for labels, *_ in trace) == learner.n_labels == 6_000


def test_a_bad_line_in_a_spread_part_stops_as_the_serial_run(tmp_path, capsys):
    lines = letter_text(tmp_path / "letter.txt", 5_000, adf=False).read_text().splitlines()
    lines[4_321] = "3:0:1.5 |s f0:1"  # a probability above 1, in the epoch 2,852-4,875
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    status, predictions, stderr, model = same_as_serial(
        tmp_path, ["--cb_explore", "26", "--schedule", "sqrt2", "-d", str(bad)], capsys)
    assert status == 1 and model is None and "line 4322" in stderr
    assert len(predictions.splitlines()) == 2 * 4_321  # every example before it written


def test_an_unlabelled_example_is_an_error_naming_its_line(tmp_path, capsys):
    lines = letter_text(tmp_path / "letter.txt", 3_000, adf=False).read_text().splitlines()
    lines[2_500] = lines[2_500].split(" ", 1)[1]  # " |s ...": no label
    log = tmp_path / "unlabelled.txt"
    log.write_text("\n".join(lines) + "\n")
    status, _, stderr, _ = run(tmp_path, "spread", [
        "--cb_explore", "26", "--schedule", "sqrt2", "-d", str(log), "--scheduler", "local"],
        capsys)
    assert status == 1 and "line 2501" in stderr and "every example labelled" in stderr


@pytest.mark.parametrize("flags, message", [
    (["--schedule", "sqrt2"], "not stdin"),
    (["--schedule", "online", "-d", "x"], "--schedule sqrt2 or doubling"),
    (["--schedule", "sqrt2", "-d", "x", "-t"], "not with -t"),
    (["--schedule", "sqrt2", "-d", "x", "--lenient"], "not with --lenient"),
])
def test_what_scheduler_refuses(capsys, flags, message):
    with pytest.raises(SystemExit):
        main.main(["--cb_explore", "2", *flags, "--scheduler", "local"])
    assert message in capsys.readouterr().err
