"""The command as a Unix tool: paths checked first, Ctrl-C, closed pipes, outputs that cannot
be written, gzip input (damaged too), whitespace-only lines and -t as VW treats them, --help
and --version, memory reused."""

from __future__ import annotations

import fcntl
import gzip
import platform
import resource
import signal
import subprocess
import sys
import time

import pytest
from test_cli import TRAIN, cb_stream, needs, run_cli, vw_predictions

from regcb_stream.persist import load_model

COMMAND = [sys.executable, "-m", "regcb_stream"]


@pytest.mark.parametrize("flags, message", [
    (["-d", "nofile"], "-d nofile: cannot read it (No such file or directory)"),
    (["-d", "."], "-d .: is a directory, not a file"),
    (["-p", "/nonexistent/x"], "-p /nonexistent/x: cannot write it"),
    (["-i", "nofile"], "-i nofile: cannot read it"),
    (["-f", "/nonexistent/dir/m"], "-f /nonexistent/dir/m: the folder /nonexistent/dir does"),
])
def test_a_path_that_cannot_be_used_is_one_line_before_any_work(flags, message):
    result = run_cli(["--cb_explore", "2", *flags], stdin="1:0:0.5 | a\n")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"regcb-stream: error: {message}")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and "usage:" not in result.stderr


def test_a_corrupt_model_file_is_one_line(tmp_path):
    model = tmp_path / "m.regcb"
    model.write_bytes(b"PK\x03\x04 not really a zip \xff\xfe")
    result = run_cli(["-i", str(model)], stdin="1:0:0.5 | a\n")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "is not a regcb-stream model file" in result.stderr and "usage:" not in result.stderr


def test_abbreviations_help_and_version():
    assert "unrecognized arguments: --cb_expl" in run_cli(["--cb_expl", "4"]).stderr
    help_text = run_cli(["--help"]).stdout
    assert "exit status:" in help_text and "141" in help_text and "example:" in help_text
    assert "(default online)" in help_text and "(default 0)" in help_text
    assert run_cli(["--version"]).stdout.startswith("regcb-stream ")


def test_ctrl_c_writes_every_whole_block_and_saves_the_model(tmp_path):
    model = tmp_path / "m.regcb"
    process = subprocess.Popen([*COMMAND, "--cb_explore", "4", "-p", "/dev/stdout", "-f",
                                str(model)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines = cb_stream(30).splitlines(keepends=True)
    for line in lines:  # one example at a time: each prediction comes back before the next
        process.stdin.write(line)
        process.stdin.flush()
        assert process.stdout.readline().strip() and process.stdout.readline() == "\n"
    time.sleep(0.2)  # waiting for input now
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted after 30 examples" in err and "model saved to" in err
    assert "Traceback" not in err
    learner, _ = load_model(model)
    assert learner.n_labels == sum(not line.startswith("|") for line in lines)


def test_a_closed_output_pipe_ends_the_run_quietly(tmp_path):
    data = tmp_path / "cb.dat"
    data.write_text(cb_stream(3000))
    shell = (f"set -o pipefail; {sys.executable} -m regcb_stream --cb_explore 4 -p /dev/stdout "
             f"--quiet < {data} | head -1")
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True)
    assert result.returncode == 141 and result.stdout.count("\n") == 1
    assert result.stderr == ""


def test_temporary_files_of_killed_saves_are_removed_but_not_those_of_saves_in_flight(
        tmp_path):
    data, model = tmp_path / "cb.dat", tmp_path / "m.regcb"
    data.write_text(cb_stream(50))
    stale, busy = tmp_path / "m.regcb.k9x2.tmp", tmp_path / "m.regcb.a7b3.tmp"
    stale.write_bytes(b"half a model")
    busy.write_bytes(b"a model being written")
    with open(busy, "rb") as writing:
        fcntl.flock(writing, fcntl.LOCK_EX)  # as a save in flight holds its file
        assert run_cli(["--cb_explore", "4", "-d", str(data), "-f", str(model), "--quiet"]
                       ).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cb.dat", "m.regcb", busy.name]


@pytest.mark.parametrize("flags, message", [
    (["-p", "/dev/full"], "-p /dev/full: cannot write it (No space left on device)"),
    (["--decision_log", "/dev/full"],
     "--decision_log /dev/full: cannot write it (No space left on device)"),
    (["-p", "-"], "-p -: cannot write it (No space left on device)"),  # stdout: /dev/full
])
def test_an_output_that_cannot_be_written_is_one_line_and_the_model_is_saved(
        tmp_path, flags, message):
    data, model = tmp_path / "cb.dat", tmp_path / "m.regcb"
    data.write_text(cb_stream(3000))
    with open("/dev/full", "w") as full:
        result = subprocess.run([*COMMAND, "--cb_explore", "4", "-d", str(data), "-f",
                                 str(model), "--quiet", *flags], stdout=full,
                                stderr=subprocess.PIPE, text=True)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == f"regcb-stream: error: {message}"
    assert "model saved to" in result.stderr and load_model(model)[0].n_labels > 0


def test_gzip_input_from_a_file_or_a_pipe(tmp_path):
    text = cb_stream(400)
    plain, packed = tmp_path / "cb.dat", tmp_path / "cb.dat.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()) + gzip.compress(b""))  # two members
    want = run_cli(["--cb_explore", "4", "-d", str(plain), "-p", "-", "--quiet"]).stdout
    assert run_cli(["--cb_explore", "4", "-d", str(packed), "-p", "-", "--quiet"]).stdout == want
    piped = subprocess.run([*COMMAND, "--cb_explore", "4", "-p", "-", "--quiet"],
                           input=packed.read_bytes(), capture_output=True)
    assert piped.stdout.decode() == want and want.count("\n\n") == 400
    packed.write_bytes(gzip.compress(text.encode())[:-30])  # cut short
    result = run_cli(["--cb_explore", "4", "-d", str(packed), "-p", "-", "--quiet"])
    assert result.returncode == 1 and "gzip input ends" in result.stderr


def damaged_gzip(path, text: str) -> str:
    """``text`` gzipped with its checksum damaged (every line decompresses, then the end
    fails), or with its second half cut off; what each case leaves readable."""
    data = bytearray(gzip.compress(text.encode()))
    data[-8] ^= 1
    path.with_suffix(".crc.gz").write_bytes(data)
    path.with_suffix(".cut.gz").write_bytes(data[:len(data) // 2])
    path.with_suffix(".head.gz").write_bytes(b"\x1f\x8bgarbage")


@pytest.mark.parametrize("case, line", [("crc", 401), ("cut", None), ("head", 1)])
def test_damaged_gzip_input_writes_the_intact_lines_then_names_the_first_lost(
        tmp_path, case, line):
    text = cb_stream(400)
    damaged_gzip(tmp_path / "cb", text)
    packed = tmp_path / f"cb.{case}.gz"
    result = run_cli(["--cb_explore", "4", "-d", str(packed), "-p", "-", "--quiet"])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "gzip input" in result.stderr
    written = result.stdout.count("\n\n")
    assert result.stderr.startswith(f"error: line {line or written + 1}: ")
    assert 0 < written or line == 1
    whole = run_cli(["--cb_explore", "4", "-p", "-", "--quiet"], stdin=text).stdout
    assert whole.startswith(result.stdout)  # the intact lines, decided as in one run
    for program in ("ope", "compare"):
        flags = (["-d", str(packed), "--cb_explore", "4"] if program == "ope" else
                 [str(packed), "--cb_explore", "4", "--quiet"])
        other = subprocess.run([sys.executable, "-m", f"regcb_stream.evaluation.{program}",
                                *flags], capture_output=True, text=True, timeout=300)
        assert other.returncode == 1 and "Traceback" not in other.stderr
        assert f"error: line {line or written + 1}: " in other.stderr, other.stderr


def test_a_line_without_end_is_refused_after_the_lines_before_it():
    head = "1:1:0.5 | a\n2:0:0.5 | b\n"
    endless = subprocess.run(
        f"(printf '{head}'; head -c 300000000 /dev/zero) | {sys.executable} -m regcb_stream"
        " --cb_explore 4 -p /dev/stdout --quiet", shell=True, capture_output=True, text=True,
        timeout=300, check=False)
    assert endless.returncode == 1 and endless.stdout.count("\n\n") == 2
    assert endless.stderr == ("error: line 3: longer than 256 MiB (no end of line); every line"
                              " before it was read\n")


@pytest.mark.parametrize("flags, text", [
    ("--cb_explore 2 --regcb", "1:0:0.5 | a b\n   \n2:1:0.5 | a\n"),
    ("--cb_explore_adf --regcb", "shared | s\n0:1:0.5 | a\n| b\n  \n| a\n| b\n\n"),
])
def test_whitespace_only_lines_as_vw_reads_them(tmp_path, flags, text):
    data = tmp_path / "ws.dat"
    data.write_text(text)
    ours = run_cli([*flags.split(), "-d", str(data), "-p", "-", "--quiet"])
    assert ours.returncode == 0 and ours.stdout == vw_predictions(flags, data, tmp_path)


def test_testonly_predicts_without_learning(tmp_path):
    train, test, model = tmp_path / "train.dat", tmp_path / "test.dat", tmp_path / "m.regcb"
    train.write_text(cb_stream(300, seed=1))
    test.write_text(cb_stream(200, seed=2))
    assert run_cli(["--cb_explore", "4", "-d", str(train), "-f", str(model), "--quiet"]
                   ).returncode == 0
    runs = [run_cli(["-i", str(model), "-t", "-d", str(test), "-p", "-"]) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout  # nothing learned between the two
    learning = run_cli(["-i", str(model), "-d", str(test), "-p", "-", "--quiet"]).stdout
    assert learning != runs[0].stdout
    assert "average loss" in runs[0].stderr


def test_a_refused_example_inside_a_block_keeps_the_predictions_before_it():
    """Not a parse error: the learner (an API user's, without ``allow_out_of_range``)
    refuses the third line's cost; the two predictions before it are written, the error
    names its line."""
    import io

    from regcb_stream import RegCB
    from regcb_stream.command.driver import Driver, ExampleError, StreamSettings
    from regcb_stream.command.progress import ProgressTable

    learner = RegCB(cross=False, reward_range=(-1.0, 0.0), hash_bits=18)
    out = io.StringIO()
    driver = Driver(learner, StreamSettings(adf=False, n_actions=2), out, ProgressTable(None))
    lines = ["1:0:0.5 | a b", "2:1:0.5 | c", "1:3:0.5 | a", "2:0:0.5 | b"]
    with pytest.raises(ExampleError, match="^line 3: reward -3.0 is outside"):
        driver.run(lines)
    assert out.getvalue().count("\n\n") == 2 and learner.n_labels == 2


@pytest.mark.parametrize("flags, stdin, message", [
    (["--cb_explore", "2", "--cb_min_cost", "1", "--cb_max_cost", "0"], "",
     "--cb_min_cost 1 must be below --cb_max_cost 0"),
    (["--cb_explore", "2", "--random_seed", "-5"], "", "--random_seed must be a number >= 0"),
    (["--cb_explore_adf"], "1:0:0.5 | a\n2:1:0.5 | b\n",
     "single-line data needs --cb_explore K"),
])
def test_messages_name_the_flag_or_say_what_is_likely_wrong(flags, stdin, message):
    result = run_cli(flags, stdin=stdin)
    assert result.returncode in (1, 2) and message in result.stderr, result.stderr


def test_regcb_is_elimination_and_the_default_is_regcbs_variant():
    text = cb_stream(300)
    runs = {flag: run_cli(["--cb_explore", "4", *flag.split(), "-p", "-", "--quiet"],
                          stdin=text).stdout for flag in ("", "--regcb", "--regcbopt")}
    assert runs[""] == runs["--regcbopt"] != runs["--regcb"]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc tuned for glibc only")
def test_a_long_stream_reuses_its_freed_memory(tmp_path):
    """Each block's buffers are reused, not page-faulted in anew: 8 times the events cost
    no more page faults (without ``keep_freed_memory``: about 14,000 more)."""
    lines = needs(TRAIN / "dsjson_cb.json").read_text().splitlines(keepends=True)

    def page_faults(events: int) -> int:
        data = tmp_path / f"{events}.json"
        data.write_text("".join(lines[i % len(lines)] for i in range(events)))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        with open(data) as stdin:
            subprocess.run([*COMMAND, "--dsjson", "--quiet"], stdin=stdin, check=True)
        return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before

    assert page_faults(40_000) - page_faults(5_000) < 2_000
