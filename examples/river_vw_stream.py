"""Learn RegCB online from a logged VW stream with a River pipeline, and follow River stats.

    python examples/river_vw_stream.py                       # a logged vehicle stream
    python examples/river_vw_stream.py --oracle river        # a River regressor as the oracle
    python examples/river_vw_stream.py LOG --cb_explore 4    # your single-line VW log
    python examples/river_vw_stream.py LOG --cb_explore_adf  # your ADF VW log

Without a path, the vehicle set (``$REGCB_DATA`` or ``../shared/data``) is logged by a
uniform policy to a temporary VW file first. The policy is `RegCBPolicy` with a River
``StandardScaler`` pipeline on the contexts, and RegCB's exact ridge oracle (``--oracle
ridge``) or River's ``LinearRegression`` (plain SGD, rate 0.05/sqrt(t)) as the oracle
(``--oracle river``). Each example is read by ``iter_vw``; before learning it,

- the policy's probability of the logged action gives the inverse-propensity (IPS) estimate
  of the policy's reward at that point, ``pi(a|x) r / p`` with ``r = -cost``: its running
  mean (``stats.Mean``) is the progressive IPS value, next to a rolling window
  (``utils.Rolling``) and the logging policy's own mean reward;
- the oracle's predicted reward of the logged action is scored against the logged reward by
  River's ``metrics.MAE`` (progressive validation of the reward model).

The policy then learns the logged action's reward. Finally River's replay evaluator,
``bandit.evaluate_offline``, runs a fresh policy over the same log.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

from river import bandit, compose, linear_model, metrics, optim, preprocessing, stats, utils

from regcb_stream.integrations.river import RegCBPolicy, iter_vw


def make_policy(oracle: str = "default") -> RegCBPolicy:
    if oracle == "default":
        oracle = None  # RegCB's default oracle
    elif oracle == "river":
        rate = optim.schedulers.InverseScaling(0.05, power=0.5)
        oracle = linear_model.LinearRegression(optim.SGD(rate), intercept_lr=rate)
    return RegCBPolicy(
        "optimistic",
        preprocessor=compose.Pipeline(preprocessing.StandardScaler()),
        oracle=oracle,
        reward_range=(-1.0, 0.0),  # rewards are -cost, costs in [0, 1]
        seed=0,
    )


def learn_from_log(policy: RegCBPolicy, log, adf: bool, n_actions: int | None, every: int):
    value, rolling = stats.Mean(), utils.Rolling(stats.Mean, window_size=500)
    logged, error = stats.Mean(), metrics.MAE()
    print(f"{'examples':>8}  {'IPS value':>10}  {'rolling 500':>11}  {'logging policy':>14}  "
          f"{'reward MAE':>10}")
    for i, (context, actions, label) in enumerate(iter_vw(log, adf, n_actions), 1):
        if label is None or label.prob is None:
            continue
        reward = -label.cost
        pmf = policy.distribution(actions, context)
        ips = pmf[label.index] * reward / label.prob
        value.update(ips)
        rolling.update(ips)
        logged.update(reward)
        error.update(reward, policy.predict_rewards(actions, context)[label.index])
        policy.update(actions[label.index], context, reward, prob=label.prob)
        if i % every == 0:
            row = (value.get(), rolling.get(), logged.get(), error.get())
            print(f"{i:8d}  {row[0]:10.4f}  {row[1]:11.4f}  {row[2]:14.4f}  {row[3]:10.4f}")
    return value, error


def replay(policy: RegCBPolicy, log, adf: bool, n_actions: int | None):
    """River's replay: the policy learns only where it pulls the logged arm (valid for a
    uniform logging policy; single-line logs, whose arms are River-style ids)."""
    history = (
        (actions, context, actions[label.index], -label.cost)
        for context, actions, label in iter_vw(log, adf, n_actions)
        if label is not None and label.prob is not None
    )
    return bandit.evaluate_offline(policy, history, reward_stat=stats.Mean())


def vehicle_log(directory: str) -> pathlib.Path:
    from regcb_stream.datasets.logs import write_logged_stream
    from regcb_stream.datasets.uci import bandit_stream

    path = pathlib.Path(directory) / "vehicle_logged.dat"
    X, R = bandit_stream("vehicle", False, 0)
    write_logged_stream(path, X, R, adf=False, seed=0)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", nargs="?", help="VW text file (default: a logged vehicle stream)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cb_explore", type=int, metavar="K", help="single-line, K actions")
    mode.add_argument("--cb_explore_adf", action="store_true", help="multi-line ADF examples")
    parser.add_argument("--oracle", choices=("default", "ridge", "river"), default="default",
                        help="RegCB's default oracle, the paper's ridge, or River's "
                             "LinearRegression (SGD)")
    parser.add_argument("--every", type=int, default=100, help="print a row every N examples")
    args = parser.parse_args(argv)
    if args.log and not (args.cb_explore or args.cb_explore_adf):
        parser.error("give the log's format: --cb_explore K or --cb_explore_adf")
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or vehicle_log(tmp)
        adf, k = args.cb_explore_adf, args.cb_explore or (None if args.log else 4)
        policy = make_policy(args.oracle)
        value, error = learn_from_log(policy, log, adf, k, args.every)
        print(f"progressive IPS value of RegCB.Opt ({args.oracle} oracle): {value.get():.4f} "
              f"(reward = -cost); reward model {error}")
        print(f"River's per-arm table (of the logged updates):\n{policy!r}")
        if not adf:
            mean, n_used = replay(make_policy(args.oracle), log, adf, k)
            print(f"bandit.evaluate_offline (replay): {mean} over {n_used} matched examples")


if __name__ == "__main__":
    main()
