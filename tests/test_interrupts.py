"""Nothing lost: a Ctrl-C at any moment of a run (a block, the summary, the save) exits 130
with every whole block's prediction written and the model of that point saved, which resumed
on the rest of the stream gives the uninterrupted run byte for byte; concurrent saves to one
``-f`` leave one whole model of one of them. (`bench/experiments/interrupts.py` runs 200 of
each.)"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time

import pytest
from test_cli import cb_stream

from regcb_stream.persist import load_model

COMMAND = [sys.executable, "-m", "regcb_stream"]
FLAGS = ["--cb_explore", "4"]


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """A stream long enough to be interrupted, and its uninterrupted run's outputs."""
    folder = tmp_path_factory.mktemp("stream")
    data = folder / "cb.dat"
    data.write_text(cb_stream(30_000))
    run = subprocess.run([*COMMAND, *FLAGS, "-d", str(data), "-p", str(folder / "p"), "-f",
                          str(folder / "m"), "--quiet"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return data, (folder / "p").read_bytes(), (folder / "m").read_bytes()


def interrupted(data, folder, when, quiet: bool = True):
    """Run the stream and send SIGINT ``when`` seconds after its -p file appears (or, with
    ``when`` None, as soon as the closing summary does); the run's exit status and stderr."""
    predictions, model = folder / "p", folder / "m"
    process = subprocess.Popen([*COMMAND, *FLAGS, "-d", str(data), "-p", str(predictions),
                                "-f", str(model), *(["--quiet"] if quiet else [])],
                               stderr=subprocess.PIPE, text=True)
    if when is None:
        for line in process.stderr:
            if line.startswith("finished run"):
                break
    else:
        while not predictions.exists() and process.poll() is None:
            time.sleep(0.002)
        time.sleep(when)
    process.send_signal(signal.SIGINT)
    err = process.stderr.read()
    return process.wait(), err


def resumed(data, folder) -> tuple[bytes, bytes]:
    """The interrupted run's predictions and those of its model resumed on the lines after
    its last prediction, and the final model."""
    first = (folder / "p").read_bytes()
    done = sum(1 for line in first.split(b"\n") if line)  # (one prediction per example)
    rest = folder / "rest.dat"
    with open(data, "rb") as source:
        rest.write_bytes(b"".join(source.readlines()[done:]))
    run = subprocess.run([*COMMAND, "-i", str(folder / "m"), "-d", str(rest), "-p",
                          str(folder / "p2"), "-f", str(folder / "m2"), "--quiet"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return first + (folder / "p2").read_bytes(), (folder / "m2").read_bytes()


@pytest.mark.parametrize("when", [0.0, 0.15, 0.4, 0.8, 3.0])
def test_a_ctrl_c_anywhere_saves_the_model_and_resuming_gives_the_whole_run(
        stream, tmp_path, when):
    data, predictions, model = stream
    status, err = interrupted(data, tmp_path, when)
    assert status in (0, 130) and "Traceback" not in err, err
    if status == 130:
        assert "interrupted after" in err and "model saved to" in err
    load_model(tmp_path / "m")
    assert resumed(data, tmp_path) == (predictions, model)


def test_a_ctrl_c_during_the_summary_or_the_save_waits_for_the_save(stream, tmp_path):
    """The run is held inside its closing summary: its stderr is a pipe filled beforehand
    to leave room for the progress table only, so the summary's write blocks; then Ctrl-C,
    then the pipe is drained."""
    data, predictions, model = stream
    argv = [*COMMAND, *FLAGS, "-d", str(data), "-p", str(tmp_path / "p"), "-f",
            str(tmp_path / "m")]
    table = subprocess.run(argv, capture_output=True, text=True, check=True).stderr
    before = len(table[:table.index("finished run")].encode())
    read, write = os.pipe()
    size = fcntl.fcntl(write, fcntl.F_GETPIPE_SZ)
    os.write(write, b"x" * (size - before - 1))  # room for the table and a byte or two
    process = subprocess.Popen(argv, stderr=write)
    os.close(write)
    while not _writing_stderr(process.pid) and process.poll() is None:
        time.sleep(0.005)  # (until the summary's write, atomic, waits for room)
    process.send_signal(signal.SIGINT)
    with os.fdopen(read, "rb") as pipe:
        err = pipe.read().decode()[size - before - 1:]
    assert process.wait() == 130 and "Traceback" not in err, err[-3000:]
    assert "interrupted after 30000 examples" in err and "model saved to" in err
    assert (tmp_path / "p").read_bytes() == predictions
    assert (tmp_path / "m").read_bytes() == model


def _writing_stderr(pid: int) -> bool:
    """The process waits in a write to its stderr (Linux: its current system call, still
    the same 50 ms later)."""
    def writing() -> bool:
        with open(f"/proc/{pid}/syscall") as call:
            return call.read().startswith("1 0x2 ")
    return writing() and not time.sleep(0.05) and writing()


def test_concurrent_saves_to_one_path_leave_one_whole_model(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(2_000))
    models = {}
    for seed in (1, 2):  # each writer's model, alone
        path = tmp_path / f"alone{seed}"
        subprocess.run([*COMMAND, *FLAGS, "--random_seed", str(seed), "-d", str(data), "-f",
                        str(path), "--quiet"], check=True)
        models[seed] = path.read_bytes()
    assert models[1] != models[2]
    shared = tmp_path / "m"
    for _ in range(4):
        runs = [subprocess.Popen([*COMMAND, *FLAGS, "--random_seed", str(seed), "-d",
                                  str(data), "-f", str(shared), "--quiet"],
                                 stderr=subprocess.PIPE, text=True) for seed in (1, 2)]
        errors = [run.communicate()[1] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], errors
        assert shared.read_bytes() in models.values()
        assert sorted(os.listdir(tmp_path)) == ["alone1", "alone2", "cb.dat", "m"]
