"""The sweep: one run per (stream, repetition, family, parameter), in parallel, resumable.

Each finished run is appended at once as one JSON line to the results file, keyed by its
``run_id``; a sweep started again skips the run ids already in the file, so an interrupted
sweep resumes where it stopped. Runs are scheduled repetition by repetition, longest first
within one (by a rough cost model), over a ``multiprocessing`` pool or a Dask cluster
(`cluster`), with a ``tqdm`` progress bar.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import pathlib
import time
from dataclasses import asdict, dataclass

from bench.harness import algorithms, cluster, problems, protocol
from bench.harness.baselines import supervised_curve


@dataclass(frozen=True)
class Task:
    """One run of the sweep."""

    stream: str
    rep: int
    family: str
    param: float | int | None
    max_train: int | None = None
    max_hold: int | None = None

    @property
    def run_id(self) -> str:
        """Key of the run in the results file.

        >>> Task("letter", 0, "vw-bag", 4).run_id
        'letter/0/vw-bag/4'
        """
        quick = f"/max{self.max_train}h{self.max_hold}" if self.max_train else ""
        return f"{self.stream}/{self.rep}/{self.family}/{self.param}{quick}"


def make_tasks(streams, reps, families, params_per_family=None, max_train=None,
               max_hold=None) -> list[Task]:
    """Every (stream, repetition, family, parameter), optionally thinning each grid to
    ``params_per_family`` values spread over it."""
    tasks = []
    for family in families:
        grid = algorithms.FAMILIES[family].grid
        if params_per_family and len(grid) > params_per_family:
            step = (len(grid) - 1) / (params_per_family - 1) if params_per_family > 1 else 0
            grid = tuple(grid[round(i * step)] for i in range(params_per_family))
        uci_only = algorithms.FAMILIES[family].uci_only
        tasks += [Task(s, r, family, p, max_train, max_hold)
                  for s in streams if not (uci_only and s not in problems.UCI_STREAMS)
                  for r in reps for p in grid]
    return tasks


def done_ids(path: pathlib.Path) -> set[str]:
    """Run ids already in a results file (a truncated last line is ignored)."""
    if not path.exists():
        return set()
    ids = set()
    for line in path.read_text().splitlines():
        try:
            ids.add(json.loads(line)["run_id"])
        except (json.JSONDecodeError, KeyError):
            continue
    return ids


def load_records(path: pathlib.Path) -> list[dict]:
    """Every complete record of a results file (the last one per run id)."""
    records: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[record["run_id"]] = record
    return list(records.values())


@functools.lru_cache(maxsize=6)
def _problem(stream: str, rep: int, max_train, max_hold) -> problems.Problem:
    return problems.load_problem(stream, rep, max_train, max_hold)


def run_task(task: Task) -> dict:
    """Run one task and return its record."""
    problem = _problem(task.stream, task.rep, task.max_train, task.max_hold)
    start, cpu = time.perf_counter(), time.process_time()
    if task.family == "supervised":
        points = protocol.checkpoints(len(problem.train))
        result = {"n_train": len(problem.train), "n_hold": len(problem.hold), "t": points,
                  **supervised_curve(problem, points)}
    else:
        algo = algorithms.build(task.family, task.param, problem, seed=task.rep)
        result = protocol.run_protocol(algo, problem, seed=task.rep)
    result["seconds"] = round(time.perf_counter() - start, 3)
    result["cpu_seconds"] = round(time.process_time() - cpu, 3)
    return {"run_id": task.run_id, **asdict(task), **result}


def estimate(task: Task) -> float:
    """Rough seconds of a task (from the data set's size; see ``algorithms``)."""
    n, hold, k, d = _shape(task.stream)
    n = min(n, task.max_train) if task.max_train else n
    hold = min(hold, task.max_hold) if task.max_hold else hold
    return algorithms.estimated_seconds(task.family, task.param, n, hold, k, d)


@functools.cache
def _shape(stream: str) -> tuple[int, int, int, int]:
    problem = problems.load_problem(stream, 0)
    return len(problem.train), len(problem.hold), problem.n_actions, problem.train.X.shape[-1]


def _init_worker() -> None:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:  # one BLAS thread per worker process: the workers are the parallelism
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass


def run_sweep(tasks: list[Task], path: pathlib.Path, jobs: int = 2, progress: bool = True,
              scheduler: str | None = None):
    """Run the tasks not yet in ``path``, appending each record as it finishes: in ``jobs``
    local processes, or on a Dask cluster (``scheduler``: its address, or ``"local"``).

    Returns
    -------
    dict
        ``{"ran": runs done now, "skipped": runs found in the file, "seconds": wall time}``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    done = done_ids(path)
    # repetition by repetition (a partial sweep has whole repetitions), longest runs first
    todo = sorted((t for t in tasks if t.run_id not in done),
                  key=lambda t: (t.rep, -estimate(t)))
    start = time.perf_counter()
    bar = _bar(len(todo), progress)
    with open(path, "a", encoding="utf-8") as out:
        records = _results(todo, jobs) if scheduler is None else cluster.results(
            todo, run_task, scheduler, jobs, _init_worker)
        for record in records:
            out.write(json.dumps(record) + "\n")
            out.flush()
            bar.update(1)
            bar.set_postfix_str(f"{record['stream']} {record['family']}", refresh=False)
    bar.close()
    return {"ran": len(todo), "skipped": len(tasks) - len(todo),
            "seconds": round(time.perf_counter() - start, 1)}


def _results(todo: list[Task], jobs: int):
    if jobs <= 1 or len(todo) <= 1:
        _init_worker()
        yield from map(run_task, todo)
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # inherited by the spawned workers
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs, initializer=_init_worker, maxtasksperchild=None) as pool:
        yield from pool.imap_unordered(run_task, todo, chunksize=1)


def _bar(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:  # the bench extra is not installed: no progress bar
        return _NoBar()
    return tqdm(total=total, disable=not enabled or total == 0, unit="run", smoothing=0.05,
                dynamic_ncols=True)


class _NoBar:
    """Stands in for a ``tqdm`` bar."""

    def update(self, n: int) -> None:
        pass

    def set_postfix_str(self, text: str, refresh: bool = False) -> None:
        pass

    def close(self) -> None:
        pass
