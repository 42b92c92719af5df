"""Random Fourier features of dense contexts (``RegCB(random_features=D)``, and 64 by
default)."""

import math

import numpy as np
import pytest

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.defaults import MODEL_CLASSES
from regcb_stream.features.random_features import RandomFeatures
from regcb_stream.persist import dumps, loads

X, R = (a[:1500] for a in bandit_stream("pendigits", noisy=False, seed=0))
ACTIONS = list(range(R.shape[1]))


def per_example(learner, contexts, as_lists=False, rewards=R):
    played = []
    for x, r in zip(contexts, rewards):
        x = x.tolist() if as_lists else x
        action, prob, info = learner.predict(x, ACTIONS)
        learner.learn(x, action, float(r[action]), prob, **info)
        played.append((action, prob))
    return played


def test_a_block_maps_as_its_rows_one_at_a_time():
    features = RandomFeatures(16, scale=2.0, seed=4)
    block = features(X[:50])
    assert block.shape == (50, X.shape[1] + 16)
    for row, mapped in zip(X[:50], block):
        assert np.array_equal(features(row), mapped)
    with pytest.raises(ValueError, match="drawn for 16"):
        features(np.zeros(3))


class CountingFeatures(RandomFeatures):
    """The map, counting the blocks and rows it maps."""

    calls = 0

    def __call__(self, contexts):
        CountingFeatures.calls += 1
        return super().__call__(contexts)


def test_a_block_is_mapped_once_for_its_decisions_and_labels():
    """``predict_many`` then ``learn_many`` of the same contexts map them once; contexts
    changed in place, or another block, are mapped anew."""
    learner, actions = RegCB(seed=0, random_features=CountingFeatures(64, seed=0)), [0, 1, 2]
    block, rewards = X[:40].copy(), np.linspace(0.0, 1.0, 40)
    CountingFeatures.calls = 0
    index, _ = learner.predict_many(block, actions)
    learner.learn_many(block, index.tolist(), rewards)
    assert CountingFeatures.calls == 1
    block[3, 2] += 1.0  # the same array, other contexts
    learner.predict_many(block, actions)
    learner.predict_many(X[40:80], actions)
    assert CountingFeatures.calls == 3


def numpy_map(features: RandomFeatures, context: np.ndarray) -> np.ndarray:
    """The map's arithmetic in numpy expressions, one context (the compiled map's
    reference: the same operations in the same order, each product's terms in the order
    of the context's entries)."""
    waves = np.zeros(features.n_features)
    for x, row in zip(context, features.state()["w"]):
        waves = waves + x * row
    if features.normalize:
        square = 0.0
        for x in context.tolist():
            square += x * x
        factor = np.sqrt(context.size) / np.sqrt(square) if square > 0 else 0.0
        waves = waves * factor
        if features.radius:  # the log-length's waves
            shift = -features.radius * math.log(factor) if square > 0 else 0.0
            waves = waves + shift * features.state()["v"]
    return np.concatenate([context * features.state()["shrink"],
                           features.amplitude * (np.cos(waves + features.state()["b"])
                                                 - features.state()["offset"])])


@pytest.mark.skipif(not np.array_equal(np.cos(np.linspace(-50, 50, 10_001)), [
    math.cos(v) for v in np.linspace(-50, 50, 10_001)]), reason="numpy's cosine is its own")
@pytest.mark.parametrize("settings", [{}, {"normalize": False}, {"width": None},
                                      {"amplitude": 1, "width": 4, "scale": 3.0},
                                      {"radius": 0.0}, {"radius": 2.0}])
def test_the_compiled_map_computes_the_numpy_expressions_bit_for_bit(settings):
    rng = np.random.default_rng(7)
    contexts = rng.normal(size=(300, 16)) * rng.choice([1e-3, 1.0, 40.0], size=(300, 1))
    contexts[0] = 0.0
    features = RandomFeatures(64, seed=3, **settings)
    block = features(contexts)
    for context, mapped in zip(contexts, block):
        expected = numpy_map(features, context)
        assert np.array_equal(features(context).view(np.int64), expected.view(np.int64))
        assert np.array_equal(mapped.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("budget", [{}, {"budget": "auto"}])
def test_the_learner_equals_one_on_contexts_mapped_beforehand(budget):
    """Per example (float vectors on the compiled path, lists on the general one) and in
    blocks (``play``), the learner with random features plays as a learner without them
    on the contexts mapped by the same map (its seed is the learner's), with the same
    ridge and budget (the default oracle's l2 and the default budget are the linear
    model's without random features)."""
    mapped = RandomFeatures(32, seed=7)(X)
    ridge = RidgeOracle(l2=MODEL_CLASSES["random features"].l2, prior="auto")
    same = budget or {"mellowness": MODEL_CLASSES["random features"].mellowness}
    want = per_example(RegCB(seed=7, oracle=ridge, random_features=0, **same), mapped)
    assert per_example(RegCB(seed=7, random_features=32, **budget), X) == want
    assert per_example(RegCB(seed=7, random_features=32, **budget), X, as_lists=True) == want
    u = np.random.default_rng(1).random(len(X))
    got = RegCB(seed=7, random_features=32, **budget).play(X, ACTIONS, lambda t, i: R[t, i], u)
    linear = RegCB(seed=7, oracle=ridge, random_features=0, **same)
    expected = linear.play(mapped, ACTIONS, lambda t, i: R[t, i], u)
    assert np.array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1].pmf, expected[1].pmf)


def test_a_saved_learner_goes_on_as_the_uninterrupted_one():
    whole = RegCB(seed=2, random_features=16)
    want = per_example(whole, X)
    first = RegCB(seed=2, random_features=16)
    head = per_example(first, X[:700])
    resumed, _ = loads(dumps(first, {}))
    assert head + per_example(resumed, X[700:], rewards=R[700:]) == want


def test_nonlinear_rewards_are_learned_with_them_and_not_without():
    """Rewards of an XOR of two context signs: no linear score separates them."""
    rng = np.random.default_rng(0)
    contexts = rng.normal(size=(3000, 2))
    best = (contexts[:, 0] > 0) ^ (contexts[:, 1] > 0)
    rewards = np.stack([best, ~best], axis=1).astype(float)

    def progressive(learner):
        total = 0.0
        for x, r in zip(contexts, rewards):
            action, prob, info = learner.predict(x, [0, 1])
            learner.learn(x, action, r[action], prob, **info)
            total += r[action]
        return total / len(contexts)

    linear = progressive(RegCB(seed=0, random_features=0))
    assert progressive(RegCB(seed=0)) > linear + 0.2


def test_the_map_vanishes_at_the_origin_and_scales_wide_contexts_down():
    wide = np.random.default_rng(3).normal(size=(5, 64))
    features = RandomFeatures(8, seed=1, width=16)
    out = features(wide)
    np.testing.assert_allclose(out[:, :64], wide * 0.5)  # sqrt(16 / 64)
    assert np.array_equal(features(np.zeros(64)), np.zeros(72))
    assert np.array_equal(RandomFeatures(8, seed=1, width=None)(wide)[:, 64:], out[:, 64:])
    np.testing.assert_allclose(RandomFeatures(8, seed=1)(wide)[:, :64], wide * 0.5 ** 1.5)


def test_the_features_are_those_of_the_contexts_direction():
    features = RandomFeatures(8, seed=2, width=None, radius=0.0)
    out, scaled = features(X[:20]), features(X[:20] * 30.0)
    np.testing.assert_allclose(scaled[:, 16:], out[:, 16:], atol=1e-12)
    np.testing.assert_array_equal(scaled[:, :16], X[:20] * 30.0)
    plain = RandomFeatures(8, seed=2, width=None, normalize=False, amplitude=0.35)
    plain(X[:1])  # draws the map
    waves = X[:20] @ plain.state()["w"]
    b = plain.state()["b"]
    np.testing.assert_allclose(plain(X[:20])[:, 16:], 0.35 * (np.cos(waves + b) - np.cos(b)))


def test_with_a_radius_a_contexts_length_shifts_its_waves():
    """``radius``: the waves of the direction plus ``radius v log(|x| / sqrt(d))``; at the
    standardized length the direction's alone, and a scale of every context a shift of
    every wave's phase."""
    d = X.shape[1]
    direction = RandomFeatures(8, seed=2, width=None, radius=0.0)
    features = RandomFeatures(8, seed=2, width=None, radius=1.5)
    at_length = X[:20] * (np.sqrt(d) / np.linalg.norm(X[:20], axis=1))[:, None]
    np.testing.assert_allclose(features(at_length), direction(at_length), atol=1e-12)
    assert not np.allclose(features(X[:20]), direction(X[:20]))
    state, a = features.state(), features.amplitude
    waves = at_length @ state["w"]  # the direction's
    for scale in (0.1, 30.0):
        shift = 1.5 * np.log(np.linalg.norm(X[:20] * scale, axis=1) / np.sqrt(d))
        np.testing.assert_allclose(
            features(X[:20] * scale)[:, d:],
            a * (np.cos(waves + shift[:, None] * state["v"] + state["b"]) - np.cos(state["b"])),
            atol=1e-12)


def test_dict_contexts_of_the_same_numbers_get_the_same_model_as_arrays():
    """A dict context is the dense vector of its names: the same decisions as the array of
    the same numbers, hashed or not; names first seen later are linear features alone."""
    dicts = [{f"f{j}": float(v) for j, v in enumerate(x)} for x in X[:300]]
    arrays = per_example(RegCB(seed=1), X[:300])
    assert per_example(RegCB(seed=1), dicts) == arrays
    assert per_example(RegCB(seed=1, hash_bits=18), dicts) == arrays
    learner = RegCB(seed=1)
    per_example(learner, [{**d, **({"late": 1.0} if t > 100 else {})}
                          for t, d in enumerate(dicts)])
    assert learner.model_class == "random features"
    assert learner.encoder.dim == 1 + 16 + 64 + 1


def test_a_dict_of_the_first_contexts_names_takes_the_dense_calls_with_the_same_numbers():
    """From the second example on, a dict of exactly the first context's names (in its
    order) is decided and learned as the array of its values (`named_vector`): the same
    numbers as the general path, which other dicts keep taking (names in another order,
    a value that is not a number, a name first seen later), and a model file keeps it."""
    names = tuple(f"f{j}" for j in range(16))
    dicts = [dict(zip(names, map(float, x))) for x in X[:300]]
    arrays = per_example(RegCB(seed=1), X[:300])
    learner = RegCB(seed=1)
    assert per_example(learner, dicts[:150], rewards=R[:150]) == arrays[:150]
    assert learner.encoder.vector_names() == names
    assert learner.encoder.named_vector(dict(reversed(dicts[150].items()))) is None
    assert learner.encoder.named_vector({**dicts[150], "f3": "1"}) is None
    with pytest.raises(TypeError, match="'f3' has value '1'"):
        learner.predict({**dicts[150], "f3": "1"}, ACTIONS)
    loaded, _ = loads(dumps(learner, {}))
    reordered = [dict(reversed(d.items())) if t % 2 else d for t, d in enumerate(dicts[150:])]
    assert per_example(loaded, reordered, rewards=R[150:300]) == arrays[150:]
    per_example(loaded, [{**dicts[0], "late": 1.0}], rewards=R[:1])
    assert loaded.encoder.vector_names() is None and loaded.encoder.vector_width is None


def test_a_named_dense_context_is_read_alike_compiled_and_in_python():
    """`named_vector` of the compiled fast case (floats, ints, bools, str names) and of the
    Python path agree on every form: the same vector bit for bit, or both None."""
    from regcb_stream.features import encoder as encoder_module

    learner = RegCB(seed=1)
    per_example(learner, [dict(zip(("a", "b", "c"), map(float, x[:3]))) for x in X[:20]])
    encoder = learner.encoder
    forms = [{"a": 0.5, "b": -2.0, "c": 3.0}, {"a": 1, "b": True, "c": -7},
             {"a": 10**400, "b": 1.0, "c": 1.0}, {"a": float("inf"), "b": 1.0, "c": 1.0},
             {"a": float("nan"), "b": 1.0, "c": 1.0}, {"a": "1", "b": 1.0, "c": 1.0},
             {"a": np.float32(0.1), "b": np.int64(3), "c": -0.0}, {"b": 1.0, "a": 1.0, "c": 1.0},
             {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0, "d": 1.0}, {"a": None, "b": 1, "c": 1}]
    assert encoder.named_vector(forms[0]).tolist() == [0.5, -2.0, 3.0]
    for context in forms:
        compiled = encoder.named_vector(context)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(encoder_module, "_features", None)  # (Python's path)
            python = encoder.named_vector(context)
        assert (compiled is None) == (python is None), context
        if python is not None:
            assert compiled.tobytes() == python.tobytes(), context


def test_indicator_dicts_and_joint_actions_keep_the_linear_model():
    """Dicts whose values are all 1 (words, one-hot categories), action feature dicts and
    an oracle given: as with random_features=0."""
    words = [{f"w{int(v * 4) % 9}": 1.0, f"v{j % 5}": 1.0} for j, v in enumerate(X[:300, 0])]
    assert per_example(RegCB(seed=1), words) == per_example(
        RegCB(seed=1, random_features=0), words)
    items = [{"item": float(a)} for a in ACTIONS]
    pmfs = []
    for learner in (RegCB(seed=1), RegCB(seed=1, random_features=0)):
        for t, x in enumerate(X[:50]):
            learner.learn(x, items[t % 3], float(R[t, t % 3]), 0.5)
        pmfs.append(learner.pmf(X[50], items))
    assert pmfs[0] == pmfs[1]
    for oracle in ("vw", "ridge", RidgeOracle(prior="optimistic")):
        assert RegCB(seed=1, oracle=oracle).encoder.expand is None
    assert RegCB(seed=1).encoder.expand.n_features == 64
    assert RegCB(oracle=RidgeOracle(l2=None, prior="auto")).encoder.expand is not None


def test_features_asked_for_apply_to_dicts_and_bad_settings_are_refused():
    learner = RegCB(random_features=8)
    learner.predict({"f": 1.0}, ["a", "b"])
    assert learner.encoder.dim == 1 + 1 + 8
    with pytest.raises(ValueError, match="not to actions given as feature dicts"):
        RegCB(random_features=8).pmf([1.0, 2.0], [{"a": 1.0}, {"b": 1.0}])
    for bad in ({"random_features": -1}, {"random_features": 2.5}, {"random_scale": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RegCB(**bad)


@pytest.mark.filterwarnings("error")
def test_a_value_that_is_not_finite_is_named_without_a_warning():
    learner = RegCB(seed=0)
    learner.predict(X[0], ACTIONS)
    for bad in (np.nan, np.inf):
        context = X[1].copy()
        context[3] = bad
        with pytest.raises(ValueError, match=f"context feature 3 is {bad}"):
            learner.predict(context, ACTIONS)
        with pytest.raises(ValueError, match=f"context feature 3 is {bad}"):
            learner.learn(context, 0, 1.0, 0.5)
