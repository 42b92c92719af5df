"""Resumable benchmark runs: records kept one JSON line each, only the missing tasks run.

>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
>>> def square(task):
...     return {"x": task[0], "y": task[0] ** 2}
>>> records, ran = run_missing(path, [(1,), (2,)], square, lambda r: (r["x"],), jobs=1)
>>> ran, [r["y"] for r in records]
(2, [1, 4])
>>> records, ran = run_missing(path, [(2,), (3,)], square, lambda r: (r["x"],), jobs=1)
>>> ran, sorted(r["y"] for r in records)
(1, [4, 9])
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import pathlib
from typing import Callable, Sequence


def run_missing(path: str | pathlib.Path, tasks: Sequence[tuple], work: Callable,
                task_of: Callable[[dict], tuple], jobs: int = 2,
                order: Callable | None = None, context: str | None = None,
                initializer: Callable | None = None) -> tuple[list[dict], int]:
    """Run ``work(task)`` in a pool of ``jobs`` processes (one: in this one) for every task
    that no record of ``path`` is of (``task_of(record)``: the task a record answers),
    appending each record as it comes (an interrupted run resumes where it stopped).

    Returns
    -------
    records : list of dict
        The records of ``tasks`` (old and new; records of other tasks are left out).
    ran : int
        How many tasks ran now.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in path.open()] if path.exists() else []
    have = {_key(task_of(r)) for r in records}
    todo = sorted((t for t in tasks if _key(t) not in have), key=order) if order else [
        t for t in tasks if _key(t) not in have]
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(path.open("a"))
        if jobs > 1 and len(todo) > 1:
            pool = stack.enter_context(multiprocessing.get_context(context).Pool(
                jobs, initializer=initializer))
            results = pool.imap_unordered(work, todo)
        else:  # in this process
            results = map(work, todo)
        for record in results:
            out.write(json.dumps(record) + "\n")
            out.flush()
            records.append(record)
    wanted = {_key(t) for t in tasks}
    return [r for r in records if _key(task_of(r)) in wanted], len(todo)


def _key(task) -> str:
    return json.dumps(list(task))
