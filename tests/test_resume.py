"""A resumed run (``-i``) keeps every setting of its model: split-and-resume is byte-identical
to one run, a conflicting flag is an error naming both values, and new exploration flags are
applied and reported. (`bench/experiments/reliability.py` runs the whole matrix of flags.)"""

from __future__ import annotations

import pytest
from test_cli import adf_stream, cb_stream, run_cli

#: a covering set of the matrix schedules x variants x oracles x --vw_compat x
#: --cb_force_legacy x --first_only x the automatic budget (each pair of values appears)
MATRIX = [
    "--cb_explore 4",
    "--cb_explore 4 --regcb --schedule sqrt2 --cb_force_legacy",
    "--cb_explore 4 --regcbopt --first_only --schedule doubling --oracle bounded",
    "--cb_explore 4 --regcbopt --oracle vw --vw_compat --first_only",
    "--cb_explore 4 --regcb --oracle vw --schedule sqrt2",
    "--cb_explore 4 --regcb --schedule sqrt2 --auto_budget",
    "--cb_explore 4 --auto_budget --cb_force_legacy --oracle bounded",
    "--cb_explore_adf -q sa --regcbopt --vw_compat --auto_budget --schedule doubling",
    "--cb_explore_adf -q sa --regcb --oracle vw --mellowness 0.01",
    "--cb_explore_adf --first_only --regcbopt --schedule sqrt2 --oracle bounded",
]


@pytest.mark.parametrize("flags", MATRIX)
def test_split_and_resume_is_one_run(tmp_path, flags):
    adf = "--cb_explore_adf" in flags
    lines = (adf_stream(120) if adf else cb_stream(240)).split("\n\n" if adf else "\n")
    cut = len(lines) // 2
    sep = "\n\n" if adf else "\n"
    first, second = sep.join(lines[:cut]) + sep, sep.join(lines[cut:])
    model = tmp_path / "m.regcb"
    whole = run_cli([*flags.split(), "-p", "-", "--quiet"], stdin=first + second)
    part1 = run_cli([*flags.split(), "-p", "-", "--quiet", "-f", str(model)], stdin=first)
    part2 = run_cli(["-i", str(model), "-p", "-", "--quiet"], stdin=second)
    assert whole.returncode == part1.returncode == part2.returncode == 0, part2.stderr
    assert part1.stdout + part2.stdout == whole.stdout
    again = run_cli([*flags.split(), "-i", str(model), "-p", "-", "--quiet"], stdin=second)
    assert again.stdout == part2.stdout and again.stderr == ""  # the same flags: no change


def test_the_automatic_budget_with_vws_regressor_is_refused_at_the_start():
    result = run_cli(["--cb_explore", "4", "--oracle", "vw", "--auto_budget"])
    assert result.returncode == 2 and "--auto_budget needs an ellipsoid oracle" in result.stderr


def trained(tmp_path, flags: str = "--cb_explore 4"):
    model = tmp_path / "m.regcb"
    assert run_cli([*flags.split(), "--quiet", "-f", str(model)], stdin=cb_stream(100)
                   ).returncode == 0
    return model


@pytest.mark.parametrize("flags, message", [
    ("--schedule sqrt2", "--schedule sqrt2 conflicts with online in the model file"),
    ("--oracle vw", "--oracle vw conflicts with ridge"),
    ("--random_seed 3", "--random_seed 3 conflicts with 0"),
    ("--cb_force_legacy", "--cb_force_legacy conflicts with not given"),
    ("--vw_compat", "--vw_compat conflicts with not given"),
    ("-b 20", "-b 20 conflicts with 18"),
    ("--cb_explore 3", "--cb_explore 3 conflicts with --cb_explore 4"),
])
def test_a_flag_that_conflicts_with_the_model_is_an_error_naming_both(tmp_path, flags,
                                                                       message):
    model = trained(tmp_path)
    result = run_cli(["-i", str(model), *flags.split(), "--quiet"], stdin=cb_stream(10))
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_new_exploration_flags_are_applied_and_reported(tmp_path):
    model = trained(tmp_path)
    result = run_cli(["-i", str(model), "--regcb", "--mellowness", "0.01"],
                     stdin=cb_stream(10))
    assert result.returncode == 0
    assert "resuming with elimination and mellowness 0.01" in result.stderr
    assert ("\noracle = exact ridge, 4 models of 68 features, penalty 1 chosen by evidence, "
            "1x on the random features\n"
            in result.stderr)


def test_a_resume_keeps_the_waiting_flags_and_refuses_others(tmp_path):
    """``--reward_wait`` and ``--default_reward`` are kept by the model like the other
    stream flags: a resume without them is the run with them; other values conflict."""
    from test_outcomes import run, unlabelled

    lines = unlabelled(rewards_after=30, n=120)[0].splitlines(keepends=True)
    half = next(i for i, line in enumerate(lines) if '"EventId": "e60"' in line
                and '"c"' in line)
    flags = ("--reward_wait", "50", "--default_reward", "0")
    whole = run(tmp_path, "whole", "".join(lines), *flags)
    model = tmp_path / "m.regcb"
    first = run(tmp_path, "first", "".join(lines[:half]), *flags, "-f", str(model))
    second = run(tmp_path, "second", "".join(lines[half:]), "-i", str(model))
    assert (first[0] + second[0], first[1] + second[1]) == whole
    for given, message in ((["--reward_wait", "40"], "--reward_wait 40 conflicts with 50"),
                           (["--reward_wait", "50", "--default_reward", "1"],
                            "--default_reward 1.0 conflicts with 0.0")):
        result = run_cli(["-i", str(model), *given, "--quiet"], stdin=lines[half])
        assert result.returncode == 2 and message in result.stderr, result.stderr
