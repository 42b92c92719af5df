"""The tests' collection: the files under data/ are fixtures, not tests."""

collect_ignore_glob = ["data/*"]
