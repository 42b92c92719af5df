"""Where a benchmark's numbers come from: the commit of the code that produced them."""

from __future__ import annotations

import datetime
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]  # the repository


def code_version() -> str:
    """Commit of the repository, noting uncommitted changes to the package."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "regcb_stream")
    return commit + (" + uncommitted changes in regcb_stream/" if dirty else "")


def command_line() -> str:
    """This process's command as typed at the repository's root for a report's header:
    ``python -m bench.experiments.NAME ARGS`` (``python SCRIPT ARGS`` for a script)."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = ["-m", spec.name] if spec is not None else [sys.argv[0]]
    return " ".join(["python", *program, *sys.argv[1:]])


def stamp() -> str:
    """``code: <commit>; date: <now>`` for a report's header."""
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return f"code: {code_version()}; date: {now}"
