"""The Python API's golden cases (`test_golden.py`): each function runs ``RegCB`` and
its companions through their public names and returns ``(name, hash)``.

Run as a script, in a process of its own with BLAS on one thread (the tests do so), it
prints the hashes as JSON: a product of several BLAS threads sums in another order, and
the state a test process has built (an earlier test's thread limits) must not decide them.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tempfile

import numpy as np

from regcb_stream import RegCB

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_golden import digest, letter, logged_text  # noqa: E402


def one_by_one(learner, X, actions, R, seed: int = 0):
    """``predict`` and ``learn`` round by round; the draws and probabilities."""
    played, probs = [], []
    for x, r in zip(X, R):
        action, prob, info = learner.predict(x, actions)
        learner.learn(x, action, float(r[actions.index(action)]), prob, **info)
        played.append(actions.index(action))
        probs.append(prob)
    return np.array(played), np.array(probs)


def decision_parts(decision):
    return decision.pmf, decision.prediction, decision.low, decision.high


def regcb_defaults_round_by_round():
    X, R = letter(3000)
    learner = RegCB()
    played, probs = one_by_one(learner, X, list(range(26)), R)
    return "api RegCB() letter predict/learn", digest(played, probs, learner.pmf(
        X[0], list(range(26))), str(learner.oracle_in_use), str(learner.budget_in_force))


def regcb_defaults_play_and_replay():
    X, R = letter(3000)
    learner = RegCB(seed=3)
    played, decision = learner.play(X, list("abcdefghijklmnopqrstuvwxyz"),
                                    lambda t, i: R[t, i])
    logged = np.random.default_rng(1).integers(26, size=3000)
    logged[::7] = -1
    replayed = RegCB().replay(X, list(range(26)), logged, R[np.arange(3000), logged],
                              np.full(3000, 1 / 26))
    return "api RegCB() letter play and replay", digest(played, *decision_parts(decision),
                                                        *decision_parts(replayed))


def regcb_defaults_on_dict_contexts():
    X, R = letter(2000)
    contexts = [{f"f{j}": v for j, v in enumerate(x) if v > -0.5} for x in X.tolist()]
    learner = RegCB()
    played, probs = one_by_one(learner, contexts, list(range(26)), R)
    hashed = RegCB(hash_bits=6, variant="elimination")
    played_h, probs_h = one_by_one(hashed, contexts, list(range(26)), R)
    return "api RegCB() dict contexts", digest(played, probs, played_h, probs_h)


def regcb_block_api():
    X, R = letter(3000)
    actions = list(range(26))
    learner = RegCB("elimination", schedule="sqrt2", seed=5)
    parts = []
    for start in range(0, 3000, 250):
        block = slice(start, start + 250)
        index, probs = learner.predict_many(X[block], actions)
        parts += [learner.pmf_many(X[block], actions), index, probs]
        learner.learn_many(X[block], [actions[i] for i in index.tolist()],
                           R[block][np.arange(250), index], probs)
    return "api block forms", digest(*parts)


def regcb_action_feature_dicts():
    X, R = letter(1000)
    own = [{f"a{j}": 1.0} for j in range(26)]
    shared = [{"v": (j + 1) / 26, "w": (j % 3) / 2} for j in range(26)]
    contexts = [{f"f{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    out = []
    for actions in (own, shared):
        learner = RegCB()
        for context, r in zip(contexts, R):
            decision = learner.decide(context, actions)
            index = int(np.argmax(decision.pmf))
            learner.learn(context, actions[index], float(r[index]), float(decision.pmf[index]))
            out += decision_parts(decision)
    return "api action feature dicts", digest(*out)


def joint_blocks_of_every_width():
    """The joint model's inverse in blocks (VW's ``-q sa`` rows) with shared parts of 1 to
    40 columns: the compiled kernels' vectors of 4 and 8 entries, their partial ends, their
    chains side by side."""
    from test_compiled import arrowhead_stream

    out = []
    for s in (1, 2, 3, 4, 5, 7, 9, 16, 17, 27, 28, 29, 30, 31, 32, 33, 35, 40):
        rows, played, rewards, dim = arrowhead_stream(400, 12, s, seed=s)
        for variant in ("optimistic", "elimination"):
            learner = RegCB(variant, seed=0)
            learner.encoder.columns("a", list(range(dim - 1)))
            decision = learner.replay([{}] * len(played), rows, played, rewards)
            assert learner.model.oracle.state().get("blocks") is not None, s
            out += [decision.pmf, decision.prediction]
    return "api joint blocks of every width", digest(*out)


SETTINGS = {
    "select_model": {"select_model": True},
    "auto budget": {"budget": "auto"},
    "forget": {"forget": 0.999},
    "doubling elimination": {"variant": "elimination", "schedule": "doubling"},
    "vw oracle": {"oracle": "vw", "random_features": 0},
    "bounded oracle": {"oracle": "bounded"},
    "paper ridge": {"oracle": "ridge", "beta": 1e-3, "warm_start_epochs": 2},
    "summed budget": {"budget": "summed", "beta": 0.5, "schedule": "sqrt2"},
    "theory budget": {"budget": "theory", "horizon": 2000, "schedule": "doubling"},
}


def settings_play(name, params):
    X, R = letter(2000)
    learner = RegCB(**params)
    played, decision = learner.play(X, list(range(26)), lambda t, i: R[t, i])
    one = RegCB(**params)
    played_one, probs = one_by_one(one, X[:300], list(range(26)), R[:300])
    return f"api settings {name}", digest(played, *decision_parts(decision), played_one,
                                          probs, str(learner.model_selection),
                                          str(learner.budget_selection))


def regcb_change_test_fires_on_a_drift():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5))
    W = rng.normal(size=(2, 4, 5))
    scores = np.where(np.arange(4000)[:, None] < 2000, X @ W[0].T, X @ W[1].T)
    R = (scores == scores.max(axis=1, keepdims=True)).astype(float)
    learner = RegCB()
    played, decision = learner.play(X, list(range(4)), lambda t, i: R[t, i])
    assert learner.changes_detected >= 1
    return "api change test", digest(played, *decision_parts(decision),
                                     str(learner.changes_detected))


def regcb_delayed_rewards():
    X, R = letter(2000)
    actions = list(range(26))
    learner = RegCB(seed=2)
    learner.wait_for_rewards(window=30, default_reward=0.0)
    waiting, out = [], []
    rng = np.random.default_rng(0)
    for t, x in enumerate(X):
        action, prob = learner.decide_event(f"e{t}", x, actions)
        out += [action, prob]
        waiting.append((f"e{t}", float(R[t, action])))
        if rng.random() < 0.4:
            for event_id, reward in waiting[:-3] if rng.random() < 0.5 else waiting[:1]:
                learner.reward_event(event_id, reward)
            waiting = waiting[-3:] if len(waiting) > 3 else waiting[1:]
    return "api delayed rewards", digest(np.array(out, float), str(learner.events),
                                         learner.pmf(X[0], actions))


def regcb_saved_and_loaded_mid_stream():
    tmp_path = pathlib.Path(tempfile.mkdtemp())
    from regcb_stream.persist import load_model, save_model

    X, R = letter(2000)
    actions = list(range(26))
    whole = RegCB(seed=4)
    played, probs = one_by_one(whole, X, actions, R)
    first = RegCB(seed=4)
    played_a, probs_a = one_by_one(first, X[:900], actions, R[:900])
    save_model(tmp_path / "m.regcb", first, {})
    second, _ = load_model(tmp_path / "m.regcb")
    played_b, probs_b = one_by_one(second, X[900:], actions, R[900:])
    assert (np.r_[played_a, played_b] == played).all() and (np.r_[probs_a, probs_b]
                                                            == probs).all()
    return "api save and load", digest(played, probs)


def parallel_replay_equals_serial():
    from regcb_stream.stream import parallel

    X, R = letter(3000)
    logged = np.random.default_rng(1).integers(26, size=3000)
    log = parallel.ArrayLog(X, list(range(26)), logged, R[np.arange(3000), logged],
                            np.full(3000, 1 / 26))
    serial = RegCB(schedule="doubling").replay(*log(0, 3000))
    spread = parallel.replay(RegCB(schedule="doubling"), log, 3000, tasks=3, min_spread=1)
    assert (spread == serial.pmf).all()
    return "api parallel replay", digest(spread, *decision_parts(serial))


def other_oracles():
    from river import linear_model
    from sklearn.linear_model import Ridge

    from regcb_stream.oracles import BinSearchOracle, RiverOracle, TreesOracle
    from regcb_stream.oracles.binsearch import ridge_penalty

    X, R = letter(600)
    out = []
    for oracle in (RiverOracle(linear_model.BayesianLinearRegression()),
                   RiverOracle(linear_model.LinearRegression()),
                   TreesOracle(n_estimators=10),
                   BinSearchOracle(Ridge(1.0, fit_intercept=False), alpha=1e-4,
                                   penalty=ridge_penalty(1.0))):
        n, k = (40, 4) if isinstance(oracle, BinSearchOracle) else (600, 26)
        learner = RegCB(oracle=oracle, schedule="sqrt2")
        played, decision = learner.play(X[:n, :6], list(range(k)), lambda t, i: R[t, i])
        out += [played, *decision_parts(decision)]
    return "api other oracles", digest(*out)


def river_policy_and_ope():
    from regcb_stream.evaluation.ope import UniformPolicy, evaluate
    from regcb_stream.integrations.river import RegCBPolicy

    X, R = letter(1500)
    policy = RegCBPolicy(seed=0)
    arms = list(range(26))
    pulled = []
    for x, r in zip(X, R):
        context = {f"f{j}": v for j, v in enumerate(x.tolist())}
        arm = policy.pull(arms, context)
        policy.update(arm, context, float(r[arm]))
        pulled.append(arm)
    examples = list(iter_logged(X[:500], R[:500]))
    estimates = [evaluate(p, examples) for p in (policy, UniformPolicy())]
    return "api river policy and ope", digest(np.array(pulled), str(estimates))


def iter_logged(X, R):
    import io

    from regcb_stream.integrations.river import iter_vw

    return iter_vw(io.StringIO(logged_text(X, R, adf=False)), n_actions=R.shape[1])


CASES = [regcb_defaults_round_by_round, regcb_defaults_play_and_replay,
         regcb_defaults_on_dict_contexts, regcb_block_api, regcb_action_feature_dicts,
         joint_blocks_of_every_width,
         *(lambda name=name: settings_play(name, SETTINGS[name]) for name in SETTINGS),
         regcb_change_test_fires_on_a_drift, regcb_delayed_rewards,
         regcb_saved_and_loaded_mid_stream, parallel_replay_equals_serial, other_oracles,
         river_policy_and_ope]


if __name__ == "__main__":
    print(json.dumps(dict(case() for case in CASES)))
