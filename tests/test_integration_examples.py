"""The River and coba examples run end to end on small inputs and print what they promise."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from regcb_stream.datasets import uci
from regcb_stream.datasets.logs import logged_lines

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small_log(path: pathlib.Path, adf: bool, n: int = 300) -> pathlib.Path:
    """A uniform log of a 4-class linear problem, with large offsets (the scaler matters)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    best = np.argmax(X @ rng.normal(size=(3, 4)), axis=1)
    path.write_text("".join(logged_lines(50.0 + 10.0 * X, np.eye(4)[best], adf=adf, seed=1)))
    return path


@pytest.mark.parametrize("flags", [["--cb_explore", "4"], ["--cb_explore_adf"],
                                   ["--cb_explore", "4", "--oracle", "river"]])
def test_river_example_learns_from_a_vw_file(tmp_path, capsys, flags):
    example = load_example("river_vw_stream")
    log = small_log(tmp_path / "log.dat", adf="--cb_explore_adf" in flags)
    example.main([str(log), *flags, "--every", "100"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-2:] == ["reward", "MAE"]
    assert [row.split()[0] for row in out[1:4]] == ["100", "200", "300"]
    value, logged = float(out[3].split()[1]), float(out[3].split()[3])
    assert value > logged + 0.3  # the policy beats the uniform logging policy it learns from
    mae = [float(row.split()[-1]) for row in out[1:4]]
    final = float(out[4].split("reward model MAE: ")[1])  # River's metrics.MAE, printed
    assert mae[2] < mae[0] and final == pytest.approx(mae[2], abs=5e-5)
    assert any(line.startswith("bandit.evaluate_offline") for line in out) != (
        "--cb_explore_adf" in flags)


def test_coba_example_runs_regcb_next_to_vw(tmp_path, capsys):
    pytest.importorskip("coba", reason="coba is not installed (pip install 'regcb-stream[coba]')")
    try:
        uci.require("vehicle.tsv.gz")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    example = load_example("coba_experiment")
    out_png = tmp_path / "plot.png"
    example.main([str(out_png), "--take", "60", "--seeds", "1"])
    lines = capsys.readouterr().out.splitlines()
    table = lines[: len(example.LEARNERS)]
    assert [line[:34].strip() for line in table] == list(example.LEARNERS)
    assert all(line.endswith("(60 rounds)") for line in table)
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        assert lines[-1].startswith("plot skipped: matplotlib is not installed")
    else:
        assert lines[-1] == f"plot saved to {out_png}" and out_png.stat().st_size > 10_000
