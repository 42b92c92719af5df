"""The README's ``>>>`` examples run and print what it says."""

from __future__ import annotations

import doctest
import pathlib

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples() -> None:
    pytest.importorskip("coba")
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted > 20
    assert result.failed == 0
