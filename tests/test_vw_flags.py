"""VW's flags that a VW user types out of habit (`regcb_stream.command.vw_flags`): each is
taken with VW's meaning, ignored as VW's contextual bandits ignore it, or refused in one line
naming what to use instead (exit status 2)."""

from __future__ import annotations

import pathlib

import pytest
from test_cli import TRAIN, needs, run_cli, vw_predictions
from vowpalwabbit import Workspace

from regcb_stream.command.main import main
from regcb_stream.command.vw_flags import FLAGS, VW_FLAGS, markdown

GUIDE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "guide" / "command-line.md"
ADF = "shared |s a b\n0:1:0.5 |a x\n|a y\n\n|s c\n|a x\n0:0:0.5 |a y\n\n"


def run(capsys, tmp_path, *flags, data: str = ADF, base=("--cb_explore_adf",)):
    """Exit status, -p output and stderr of a run of the command on ``data``."""
    path, out = tmp_path / "in.dat", tmp_path / "out.txt"
    path.write_text(data)
    out.unlink(missing_ok=True)
    try:
        status = main([*base, "-d", str(path), "-p", str(out), "--quiet", *flags])
    except SystemExit as stop:
        status = stop.code
    return status, out.read_text() if out.exists() else None, capsys.readouterr().err


def refused(capsys, tmp_path, *flags, **kwargs) -> str:
    """The one line a refused run prints, checked for exit status 2 and no output."""
    status, output, err = run(capsys, tmp_path, *flags, **kwargs)
    assert status == 2 and not output, (flags, err)
    assert err.count("\n") == 1 and err.startswith("regcb-stream: error: "), err
    return err


def typed(flag) -> list[str]:
    """A flag of the table as a user types it, with a value if it takes one."""
    value = {"E": "0.1", "N": "2", "K": "3", "ABC": "abc", "PORT": "26542"}.get(flag.value)
    return [flag.names[0], *([value] if flag.value else [])]


@pytest.mark.parametrize("flag", [f for f in VW_FLAGS if f.handling == "refused"],
                         ids=lambda f: f.names[0])
def test_a_refused_flag_names_what_to_use_instead_in_one_line(capsys, tmp_path, flag):
    err = refused(capsys, tmp_path, *typed(flag))
    assert f"VW's {flag.names[0]} is not taken: {flag.meaning}" in err


def test_explorers_are_refused_with_the_comparison_that_runs_them(capsys, tmp_path):
    err = refused(capsys, tmp_path, "--epsilon", "0.05")
    assert "regcb-stream explores by RegCB" in err
    assert "regcb-compare LOG --vw '--epsilon 0.05'" in err
    assert "regcb-ope" in refused(capsys, tmp_path, "--cb", "2")
    assert "regcb-compare" in refused(capsys, tmp_path, "--explore_eval")


@pytest.mark.parametrize("flag", [f for f in VW_FLAGS if f.handling == "ignored"],
                         ids=lambda f: f.names[-1])
def test_an_ignored_flag_changes_nothing(capsys, tmp_path, flag):
    plain = run(capsys, tmp_path)
    for name in flag.names:
        value = [] if flag.value is None else [str(tmp_path / "cache")]
        assert run(capsys, tmp_path, name, *value) == plain
    assert not (tmp_path / "cache").exists()  # no cache file is made


def test_unknown_flags_get_one_line_not_the_usage(capsys, tmp_path):
    err = refused(capsys, tmp_path, "--no_such_flag")
    assert "unrecognized arguments: --no_such_flag" in err and "usage:" not in err


def test_cb_type_mtr_is_what_regcb_runs(capsys, tmp_path):
    assert run(capsys, tmp_path, "--cb_type", "mtr") == run(capsys, tmp_path)
    for other in ("ips", "dr", "dm"):
        err = refused(capsys, tmp_path, "--cb_type", other)
        assert f"--cb_type {other}: VW's --regcb runs --cb_type mtr only" in err


def test_hash_strings_only(capsys, tmp_path):
    assert run(capsys, tmp_path, "--hash", "strings") == run(capsys, tmp_path)
    assert "--hash all: regcb-stream hashes as VW does by default" in refused(
        capsys, tmp_path, "--hash", "all")


def test_passes_one_only(capsys, tmp_path):
    assert run(capsys, tmp_path, "--passes", "1") == run(capsys, tmp_path)
    assert "a stream is one pass" in refused(capsys, tmp_path, "--passes", "2")


def test_learning_rate_configures_vws_regressor_as_vw(capsys, tmp_path):
    data = needs(TRAIN / "cb_load.dat")
    flags = "--cb_explore_adf -q UA --regcb --mellowness .001"
    ours = run(capsys, tmp_path, *flags.split()[1:], "-l", "0.3", "--oracle", "vw",
               "--vw_compat", data=data.read_text())
    assert ours[0] == 0
    assert ours[1] == vw_predictions(f"{flags} -l 0.3", data, tmp_path)
    default = run(capsys, tmp_path, *flags.split()[1:], "--oracle", "vw", "--vw_compat",
                  data=data.read_text())
    assert default[1] != ours[1]  # (the rate changes the decisions)
    assert default == run(capsys, tmp_path, *flags.split()[1:], "--oracle", "vw",
                          "--vw_compat", "--power_t", "0.5", "--l2", "0",
                          "--learning_rate", "0.5", data=data.read_text())


def test_gd_flags_with_the_ridge_oracle_name_its_own(capsys, tmp_path):
    assert "--ridge_l2" in refused(capsys, tmp_path, "-l", "0.3")
    assert "--ridge_l2" in refused(capsys, tmp_path, "--l2", "0.01")
    assert "--oracle vw runs VW's default, --l2 0, only" in refused(
        capsys, tmp_path, "--l2", "0.01", "--oracle", "vw")
    assert "--oracle vw runs VW's default, --power_t 0.5, only" in refused(
        capsys, tmp_path, "--power_t", "0.4", "--oracle", "vw")
    assert "--power_t configures VW's regressor (--oracle vw); --oracle bounded has" in refused(
        capsys, tmp_path, "--power_t", "0.5", "--oracle", "bounded")
    assert "-l must be a number > 0" in refused(capsys, tmp_path, "-l", "0", "--oracle", "vw")


def test_the_guide_lists_every_vw_flag_as_the_table_says():
    assert markdown() in GUIDE.read_text()
    assert set(FLAGS) == {name for flag in VW_FLAGS for name in flag.names}


# -- --ignore, --keep, --ignore_linear: VW's namespace filters ---------------------------------


ADF_LOG = ("cb_load.dat", "--cb_explore_adf -q UA --regcb --mellowness .001")
DSJSON_LOG = ("decisionservice.json", "--cb_explore_adf --dsjson -q GT --regcb --mellowness .01")


@pytest.mark.parametrize("log, flags, filters", [
    *[(*ADF_LOG, f) for f in ("--ignore U", "--ignore x --ignore A", "--keep A", "--keep U",
                              "--ignore_linear U", "--ignore_linear UA")],
    *[(*DSJSON_LOG, f) for f in ("--ignore G", "--keep T", "--keep G --keep T",
                                 "--ignore_linear G", "--ignore_linear T")]])
def test_namespace_filters_make_vws_features(capsys, tmp_path, log, flags, filters):
    """The decisions of VW's regressor on the filtered features are VW's, line for line
    (ADF and DSJSON namespaces, with and without their crosses)."""
    data = needs(TRAIN / log)
    ours = run(capsys, tmp_path, *flags.split(), *filters.split(), "--oracle", "vw",
               "--vw_compat", data=data.read_text(), base=())
    assert ours[0] == 0, ours[2]
    assert ours[1] == vw_predictions(f"{flags} {filters}", data, tmp_path)
    unfiltered = run(capsys, tmp_path, *flags.split(), "--oracle", "vw", "--vw_compat",
                     data=data.read_text(), base=())
    assert unfiltered[1] != ours[1]  # (the filter changed the features)


def test_namespace_filters_on_single_lines_drop_what_the_text_would_not_have(capsys,
                                                                            tmp_path):
    lines = [f"{1 + i % 3}:{i % 2}:0.5 |x a:{1 + i % 5} b |y c:{1 + i % 7} |z d"
             for i in range(300)]  # (no zero values: the fast path registers their slots)
    text = "\n".join(lines) + "\n"
    base = ("--cb_explore", "3")

    def without(*namespaces):
        return "\n".join(" |".join(part for part in line.split(" |")
                                   if part[0] not in namespaces) for line in lines) + "\n"

    assert run(capsys, tmp_path, "--ignore", "y", data=text, base=base) == run(
        capsys, tmp_path, data=without("y"), base=base)
    assert run(capsys, tmp_path, "--keep", "x", data=text, base=base) == run(
        capsys, tmp_path, data=without("y", "z"), base=base)
    reference = run(capsys, tmp_path, "--keep", "x", "-q", "ww", data=text, base=base)
    assert reference == run(capsys, tmp_path, data=without("y", "z"), base=base)  # (-q:
    # the reference parser; without, the compiled pass's tokens filtered by initial)
    assert run(capsys, tmp_path, "--ignore_linear", "y", data=text, base=base) == run(
        capsys, tmp_path, data=without("y"), base=base)  # (no -q: y is not crossed)
    crossed = run(capsys, tmp_path, "-q", "xy", "--ignore_linear", "y", data=text, base=base)
    assert crossed[0] == 0 and crossed != run(capsys, tmp_path, "-q", "xy", data=text,
                                              base=base)


def test_a_model_keeps_its_filters(capsys, tmp_path):
    model = tmp_path / "m.regcb"
    assert run(capsys, tmp_path, "--ignore", "a", "-f", str(model))[0] == 0
    err = refused(capsys, tmp_path, "-i", str(model), "--keep", "a", base=())
    assert "--keep a conflicts with --ignore a in the model file" in err
    assert run(capsys, tmp_path, "-i", str(model), "--ignore", "a", base=())[0] == 0


# -- --readable_model, --invert_hash: the learned weights as VW writes them --------------------


def vw_weights(args: str, data: pathlib.Path, tmp_path, flag: str) -> list[str]:
    """VW's weight lines of ``flag`` (``hash:weight``, ``name:hash:weight``; VW's
    adaptive and normalizer sums after the weight left out)."""
    out = tmp_path / "vw.weights"
    Workspace(f"{args} --quiet -d {data} {flag} {out}").finish()
    lines = out.read_text().split("l2_state 1\n", 1)[1].splitlines()
    return [line.rsplit(" ", 2)[0] for line in lines]


@pytest.mark.parametrize("log, flags", [
    ("cb_test.ldf", "--cb_explore_adf --regcb --noconstant"),
    ("cb_load.dat", "--cb_explore_adf -q UA --regcb --mellowness .001"),
    ("decisionservice.json", "--cb_explore_adf --dsjson -q GT --regcb --ignore_linear G")])
@pytest.mark.parametrize("flag", ["--readable_model", "--invert_hash"])
def test_the_weights_of_vws_regressor_are_vws(capsys, tmp_path, log, flags, flag):
    data = needs(TRAIN / log)
    path = tmp_path / "weights.txt"
    status = run(capsys, tmp_path, *flags.split(), "--oracle", "vw", "--vw_compat", flag,
                 str(path), data=data.read_text(), base=())[0]
    assert status == 0
    header, weights = path.read_text().split("model 0 offset 0\n")
    assert header.startswith("regcb-stream readable model\nbits 18\n")
    ours, vws = (by_slot(lines) for lines in (weights.splitlines(),
                                              vw_weights(flags, data, tmp_path, flag)))
    assert list(ours) == list(vws)  # the same slots, in the same order
    for slot, (names, weight) in vws.items():
        assert names <= ours[slot][0]  # (VW names a slot once: by its first feature)
        assert ours[slot][1] == pytest.approx(weight, rel=1e-5)  # (float32 sums)


def by_slot(lines: list[str]) -> dict[int, tuple[set[str], float]]:
    """Weight lines (``slot:weight`` or ``name:slot:weight``) as slot -> (names, weight)."""
    out: dict[int, tuple[set[str], float]] = {}
    for line in lines:
        *name, slot, weight = line.rsplit(":", 2) if line.count(":") > 1 else [
            *line.split(":")]
        out.setdefault(int(slot), (set(), float(weight)))[0].update(name)
    return out


def test_the_ridge_oracles_weights_predict_its_costs(capsys, tmp_path):
    """One block per model (--cb_explore K), the constant named, the offset the prior."""
    path = tmp_path / "weights.txt"
    data = "".join(f"{1 + i % 2}:{(i // 2) % 2}:0.5 |x a:{1 + i % 3} b\n" for i in range(40))
    status = run(capsys, tmp_path, "--invert_hash", str(path), data=data,
                 base=("--cb_explore", "2"))[0]
    assert status == 0
    blocks = path.read_text().split("\nmodel ")[1:]
    assert [block.split("\n")[0] for block in blocks] == ["0 offset 0", "1 offset 0"]
    names = [sorted(line.split(":")[0] for line in block.splitlines()[1:]) for block in blocks]
    assert names == [["Constant", "x^a", "x^b"]] * 2


def test_weights_from_stdin_are_by_slot_and_a_bad_path_is_refused_first(tmp_path):
    path = tmp_path / "weights.txt"
    result = run_cli(["--cb_explore", "2", "--invert_hash", str(path), "--quiet"],
                     "1:1:0.5 |x a\n2:0:0.5 |x a\n")
    assert result.returncode == 0
    assert "Constant:" in path.read_text() and "x^a" not in path.read_text()
    result = run_cli(["--cb_explore", "2", "--readable_model", str(tmp_path / "no" / "w")],
                     "|x a\n")
    assert result.returncode == 2 and "--readable_model" in result.stderr
