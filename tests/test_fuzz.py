"""A slice of the fuzz benchmark (``bench/experiments/fuzz.py``, issue 44) on every target:
no traceback, every exit status documented, every refusal naming its line, flag, path or
parameter, every prediction a distribution. The benchmark runs 100,000 such inputs."""

from __future__ import annotations

import collections

import pytest

from bench.experiments import fuzz

pytestmark = pytest.mark.skipif(not fuzz.VW_DSJSON, reason="VW's test files (../shared)")


def test_a_slice_of_every_target_meets_the_bars() -> None:
    result = fuzz.work(seed=7, indices=range(0, 600), every=0)
    total = collections.Counter()
    for tally in result["counts"].values():
        total.update(tally)
    assert set(fuzz.SHARES) - {"compare"} <= set(result["counts"])
    assert total["inputs"] == 600
    assert result["failures"] == {}, list(result["failures"].items())[:3]


def test_the_checks_see_what_they_look_for() -> None:
    assert fuzz.valid_predictions("0:0.5,1:0.5 tag\n\n1:0.2,0:0.8\n\n")
    assert fuzz.valid_predictions("0.250000 0.750000  e12\n0.5 0.5 \n")
    assert fuzz.valid_predictions("0.250000 0.750000  346\n")
    assert not fuzz.valid_predictions("0.250000 0.850000  e12\n")
    assert not fuzz.valid_predictions("0.250000 0.850000 \n")
    assert fuzz.valid_predictions(" e0:4\n\n0:1 e:5\n\n")
    assert not fuzz.valid_predictions("0:1,1:1\n\n")
    assert not fuzz.valid_predictions("0:nan,1:0.5\n\n")
    case = fuzz.Case("flags", "regcb-stream", ["-d", "/tmp/x", "--cb_explore", "0"], {})
    assert fuzz.names_what("error: argument --cb_explore: must be positive", case)
    assert fuzz.names_what("error: line 3: bad label", case)
    assert fuzz.names_what("error: /tmp/x: cannot read it", case)
    assert not fuzz.names_what("error: something went wrong", case)
    assert not fuzz.names_what("error: 'utf-8' codec can't decode byte 0xff", case)
