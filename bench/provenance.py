"""Where a benchmark's numbers come from: the commit of the code that produced them."""

from __future__ import annotations

import datetime
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def code_version() -> str:
    """Commit of the repository, noting uncommitted changes to the package."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "regcb_stream")
    return commit + (" + uncommitted changes in regcb_stream/" if dirty else "")


def stamp() -> str:
    """``code: <commit>; date: <now>`` for a report's header."""
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return f"code: {code_version()}; date: {now}"
