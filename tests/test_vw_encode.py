"""The block encoders of VW feature text give exactly what the reference parser gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regcb_stream.io.adf_encode import AdfEncoder
from regcb_stream.io.vw_encode import TextEncoder
from regcb_stream.io.vw_features import FieldError, flatten, flatten_adf, parse_namespaces
from regcb_stream.io.vw_text import iter_adf

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAME = st.text("abcxyzAB019_=-.^*#é", min_size=1, max_size=5)
ASCII_NAME = st.text("abcxyzAB019_=-.^*#", min_size=1, max_size=5)
NUMBER = st.one_of(
    st.integers(-999, 999).map(str),
    st.floats(-1e4, 1e4).map(lambda x: f"{x:.6g}"),
    st.sampled_from(["0", "1e-3", ".5", "2.", "-0", "+3", "1E2", "1e-50", "3e40", "1_0",
                     "nan", "inf", "abc", "", "0x1", "1e", "١", "1e+", "--1", "1.5.2", ".",
                     "5e-324", "3.4028235e38", "1.1754944e-38", "1e-400", "00012", "-.5e-2",
                     "1" * 70]),
)
NAMESPACE = st.one_of(st.just(""), NAME, st.tuples(NAME, NUMBER).map(":".join))


class Registry:
    """Columns for keys, and keys back from columns."""

    def __init__(self):
        self.columns: dict[str, int] = {}

    def __call__(self, keys: list[str]) -> list[int]:
        return [self.columns.setdefault(key, len(self.columns) + 1) for key in keys]

    def decode(self, index: np.ndarray, value: np.ndarray) -> dict[str, float]:
        names = {column: key for key, column in self.columns.items()}
        return {names[c]: v for c, v in zip(index.tolist(), value.tolist()) if v != 0}


def reference(body: str, interactions=()) -> dict[str, float] | FieldError:
    try:
        return {k: v for k, v in flatten(parse_namespaces(body), interactions, False).items()
                if v != 0}
    except FieldError as error:
        return error


@st.composite
def template_block(draw):
    """Lines that repeat a few name sequences with fresh values, and some odd lines."""
    templates = draw(st.lists(st.lists(st.tuples(NAMESPACE, st.lists(ASCII_NAME, max_size=4)),
                                       min_size=1, max_size=3), min_size=1, max_size=3))
    lines = []
    for _ in range(draw(st.integers(1, 24))):
        namespaces = draw(st.sampled_from(templates))
        parts = []
        for head, names in namespaces:
            feats = [f"{name}:{draw(NUMBER)}" if draw(st.booleans()) else name
                     for name in names]
            parts.append(" ".join([head, *feats]))
        lines.append(" |".join(parts))
    odd = draw(st.lists(st.tuples(st.integers(0, len(lines) - 1),
                                  st.sampled_from(["a:1\tb", "é:1", ":3", "a:1 a:2", "a b:.5",
                                                   "a:1|t:2 b"])),
                        max_size=3))
    for i, text in odd:
        lines[i] = "s " + text
    return lines


@FUZZ
@given(template_block())
def test_text_encoder_equals_the_reference_parser(bodies):
    registry = Registry()
    encoded = TextEncoder(registry).encode(bodies)
    for i, body in enumerate(bodies):
        expected = reference(body)
        if isinstance(expected, FieldError):
            assert encoded.errors[i].rule == expected.rule
            assert encoded.errors[i].detail == expected.detail
            continue
        assert i not in encoded.errors
        got = registry.decode(encoded.rows.index[i], encoded.rows.value[i])
        assert got == expected
        assert encoded.n_features[i] == len(expected)


def test_text_encoder_takes_the_template_path_for_a_regular_stream():
    registry = Registry()
    rng = np.random.default_rng(0)
    bodies = [f"s f0:{x:.6g} f1:{y:.6g} g" for x, y in rng.normal(size=(50, 2))]
    bodies[7] = "s f0:1 f1:abc g"
    encoded = TextEncoder(registry).encode(bodies)
    assert list(encoded.errors) == [7] and encoded.errors[7].rule == "feature_value"
    assert TextEncoder(registry).n_templates == 0
    encoder = TextEncoder(registry)
    encoder.encode(bodies[:7] + bodies[8:])
    assert encoder.n_templates == 1  # one name sequence, resolved once
    for i in (0, 49):
        assert registry.decode(encoded.rows.index[i], encoded.rows.value[i]) == reference(
            bodies[i])


def test_text_encoder_with_interactions_crosses_like_the_reference():
    registry = Registry()
    bodies = [f"u a:{i} b |v c:2" for i in range(1, 12)]
    encoded = TextEncoder(registry, ["uv"]).encode(bodies)
    for i, body in enumerate(bodies):
        assert registry.decode(encoded.rows.index[i], encoded.rows.value[i]) == reference(
            body, ["uv"])


ADF = st.lists(st.lists(st.tuples(st.sampled_from(["s", "sx", "a", "ab", ""]),
                                  st.lists(st.tuples(NAME, st.floats(-9, 9).filter(bool)),
                                           max_size=3)),
                        min_size=1, max_size=2), min_size=2, max_size=4)


def features(namespaces) -> tuple:
    return tuple((ns or " ", tuple((n, float(v)) for n, v in feats))
                 for ns, feats in namespaces if feats)


@FUZZ
@given(ADF, st.sampled_from([(), ("sa",), ("ss", "aa"), ("::",), ("s:",)]),
       st.lists(st.floats(-5, 5).filter(bool), min_size=1, max_size=4))
def test_adf_encoder_equals_the_reference_flattening(lines, interactions, scales):
    shared, actions = features(lines[0]), [features(line) for line in lines[1:]]
    registry = Registry()
    encoder = AdfEncoder(registry, interactions)
    for scale in scales:  # the same layout with new shared values: the template path
        values = tuple((ns, tuple((n, v * scale) for n, v in feats)) for ns, feats in shared)
        rows, n_features = encoder.encode(values, actions)
        expected = flatten_adf(values, actions, interactions, constant=False)
        assert n_features == sum(map(len, expected)) + len(expected)
        for r, row in enumerate(expected):
            got = registry.decode(rows.index[r], rows.value[r])
            want = {k: v for k, v in row.items() if v != 0}
            assert got.keys() == want.keys()
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_adf_encoder_on_vw_test_file_equals_reference():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1].parent / "shared/vw_tests/train-sets/cb_load.dat"
    if not path.exists():
        pytest.skip(f"{path} not available")
    registry = Registry()
    encoder = AdfEncoder(registry, ["UA"])
    for example in iter_adf(path.read_text().splitlines()):
        rows, _ = encoder.encode(example.shared, example.actions)
        for r, row in enumerate(flatten_adf(example.shared, example.actions, ["UA"], False)):
            assert registry.decode(rows.index[r], rows.value[r]) == pytest.approx(row)


@FUZZ
@given(template_block(), st.sampled_from([(), ("sa",), ("::",)]))
def test_adf_block_encoder_equals_the_example_encoder(bodies, interactions):
    actions = ((("a", (("i", 1.0),)),), (("a", (("j", 2.0),)), ("b", (("k", 0.5),))))
    shared = [None, *bodies]  # an example without a shared line, too
    registry = Registry()
    block = AdfEncoder(registry, interactions).encode_block(shared, [actions] * len(shared))
    single = AdfEncoder(registry, interactions)
    for i, body in enumerate(shared):
        try:
            features = None if body is None else parse_namespaces(body)
        except FieldError as error:
            assert block.errors[i].detail == error.detail
            continue
        assert i not in block.errors
        rows, n_features = single.encode(features, actions)
        assert block.n_features[i] == n_features
        encoded = block.rows.without_intercept()
        for r in range(len(actions)):
            got = registry.decode(encoded.index[i, r], encoded.value[i, r])
            want = registry.decode(rows.index[r], rows.value[r])
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300)


DIGITS = st.integers(0, 2**60)


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(DIGITS, st.integers(-30, 30)).map(lambda m: f"{m[0]}e{m[1]}"),
    st.tuples(DIGITS, st.integers(0, 25)).map(
        lambda m: f"{str(m[0])[:-m[1]] or '0'}.{str(m[0])[-m[1]:] if m[1] else '0'}"),
    st.sampled_from(["9007199254740992", "9007199254740993", "0.1", "1e22", "1e23",
                     "123456789012345678e-22", "-0.0", "0.0078125"])))
def test_compiled_numbers_are_pythons_floats(text):
    """The compiled readers' decimal numbers (``_readers.h``: Clinger's fast path for a
    mantissa up to 2^53 and powers of ten up to 10^22, strtod beyond) round as float()."""
    from regcb_stream.io import _dsjson, _scan
    *_, values, slow = _scan.hashes([f"s f:{text}"])
    value = float(text)
    if not np.frombuffer(slow, bool)[0]:  # (outside float32's normal range: the reference's)
        assert np.frombuffer(values, float)[0] == value
    event, = _dsjson.events([f'{{"_labelIndex": 0, "_label_cost": {text}, '
                             f'"_label_probability": 0.5, "c": {{"_multi": [{{"x": 1}}]}}}}'])
    assert event is None or event[3] == value
