"""Model files: the whole learner state, saved atomically and loaded back.

A model file is a pickle of ``{"format", "version", "learner", "settings"}``: the learner
with its oracle statistics, epoch and label counters, hyperparameters and RNG state, and
the stream settings it was trained with (input format, interactions, constant feature), so
that a stream split in two with a save and a resume in between gives the same output as
one uninterrupted run. Like any pickle, load only model files you trust.

>>> import tempfile, pathlib
>>> from regcb_stream import RegCB
>>> path = pathlib.Path(tempfile.mkdtemp()) / "model.regcb"
>>> save_model(path, RegCB(beta=0.1), {"adf": True})
>>> learner, settings = load_model(path)
>>> learner.beta, settings
(0.1, {'adf': True})

"""

from __future__ import annotations

import os
import pickle

FORMAT = "regcb-stream model"
VERSION = 5  # 2: RidgeOracle folds rows lazily, learns a prior; 3: budget kinds, automatic budget;
# 4: the compiled ridge state (rows learned at once, the joint model in blocks); 5: hashed
# features (-b), the bounded ridge oracle


def save_model(path: str | os.PathLike, learner, settings: dict) -> None:
    """Write the model to a temporary file beside ``path``, then rename it over ``path``:
    a crash mid-write leaves the old file (or none), never a truncated one."""
    import tempfile  # here: it costs the command's start-up a few milliseconds

    folder, name = os.path.split(os.fspath(path))
    state = {"format": FORMAT, "version": VERSION, "learner": learner, "settings": settings}
    fd, tmp = tempfile.mkstemp(prefix=name + ".", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as out:
            pickle.dump(state, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_model(path: str | os.PathLike):
    """Return ``(learner, settings)`` from a model file, or raise ``ValueError`` saying why
    the file is not one."""
    try:
        with open(path, "rb") as source:
            state = pickle.load(source)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as error:
        raise ValueError(f"{path} is not a regcb-stream model file ({error})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a regcb-stream model file")
    if state.get("version") != VERSION:
        raise ValueError(f"{path} has model format version {state.get('version')}, "
                         f"this regcb-stream reads version {VERSION}")
    return state["learner"], state["settings"]
