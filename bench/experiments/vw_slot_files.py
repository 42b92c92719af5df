"""VW's own CCB and slates test files through ``regcb-stream`` and through VW.

Every input of VW's ``test/train-sets`` named ``ccb_*`` (text ``.dat``, ``.data``, ``.txt``,
not the reference outputs ``*_invert_hash.txt``; DSJSON ``.json``, ``.dsjson``, with
``cb_as_ccb.json``) and ``slates_*`` (``.txt``, ``.dsjson``), from a clone of VW's
repository, is run by ``regcb-stream --ccb_explore_adf`` (``--slates``; ``--dsjson`` for
DSJSON) and by VW with the same flags (and ``--chain_hash`` for slates DSJSON, which VW
reads only so), both writing ``-p``. For each file: whether ours reads it without an
error, and whether both write as many examples, as many slot lines per example, and as
many actions on each slot line.

From the repository root (``--vw-repo``: a clone of VW's repository; without it, a
shallow clone of `VW_REPOSITORY` is made in a temporary folder)::

    .venv/bin/python -m bench.experiments.vw_slot_files [--vw-repo PATH]

Writes ``docs/results/vw_slot_files.md`` and prints it.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

from vowpalwabbit import Workspace

from bench.provenance import command_line, stamp

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPORT = ROOT / "docs" / "results" / "vw_slot_files.md"
VW_REPOSITORY = "https://github.com/VowpalWabbit/vowpal_wabbit"


def test_files(repo: pathlib.Path) -> list[pathlib.Path]:
    """VW's CCB and slates text inputs in ``test/train-sets``."""
    folder = repo / "test" / "train-sets"
    ccb = [p for p in folder.glob("ccb_*") if p.suffix in (".dat", ".data", ".txt", ".json",
                                                            ".dsjson")
           and not p.name.endswith("invert_hash.txt")]
    return sorted(ccb + [folder / "cb_as_ccb.json"]) + sorted(
        [*folder.glob("slates_*.txt"), *folder.glob("slates_*.dsjson")])


def shape(text: str) -> list[list[int]]:
    """The actions on each slot line of each example of a ``-p`` text."""
    return [[len(line.split(",")) if line else 0 for line in block.split("\n")]
            for block in text.strip("\n").split("\n\n")] if text.strip() else []


def check(path: pathlib.Path, folder: pathlib.Path) -> dict:
    json = path.suffix in (".json", ".dsjson")
    flag = ("--slates" if path.name.startswith("slates") else "--ccb_explore_adf") + (
        " --dsjson" if json else "")
    vw_out, ours_out = folder / "vw.p", folder / "ours.p"
    vw_out.write_text("")
    try:  # (VW reads slates DSJSON with --chain_hash only)
        chain = " --chain_hash" if json and flag.startswith("--slates") else ""
        Workspace(f"{flag}{chain} -d {path} -p {vw_out} --quiet").finish()
        vw_error = ""
    except RuntimeError as error:  # (VW refuses the file: what it wrote before stays)
        vw_error = str(error).splitlines()[0][:200]
    command = [sys.executable, "-m", "regcb_stream", *flag.split(), "-d", str(path), "-p",
               str(ours_out), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True)
    read = "yes" if done.returncode == 0 else "no"
    if done.returncode:  # (a bad line stops ours; --lenient skips it, as VW does)
        lenient = subprocess.run([*command, "--lenient"], capture_output=True, text=True)
        read = "with --lenient" if lenient.returncode == 0 else read
    ours, theirs = shape(ours_out.read_text()), shape(vw_out.read_text())
    return {"file": path.name, "flag": flag, "read": read,
            "error": done.stderr.strip()[:200], "vw_error": vw_error,
            "examples": (len(ours), len(theirs)),
            "slots": [len(b) for b in ours] == [len(b) for b in theirs],
            "widths": ours == theirs}


def report(rows: list[dict]) -> str:
    lines = ["# VW's CCB and slates test files, read by regcb-stream and by VW", "",
             f"- command: `{command_line()}`", f"- {stamp()}", "",
             "| file | flag | read | examples (ours, VW's) | slot lines equal | "
             "actions per slot equal |", "|---|---|:---:|---|:---:|:---:|"]
    for r in rows:
        yes = {True: "yes", False: "no"}
        lines.append(f"| `{r['file']}` | `{r['flag']}` | {r['read']} | "
                     f"{r['examples'][0]}, {r['examples'][1]} | {yes[r['slots']]} | "
                     f"{yes[r['widths']]} |")
    read = sum(r["read"] != "no" for r in rows)
    same = sum(r["read"] != "no" and r["slots"] and r["widths"] for r in rows)
    predicted = sum(bool(r["examples"][1]) for r in rows)
    lines += ["", f"{read} of {len(rows)} files read; on {same} of the {predicted} VW writes "
              "predictions for, VW's examples, slot lines and actions per slot (VW's draws "
              "and ours differ, so a CCB slot's actions are the same number, not the same "
              "actions). A bad line stops ours with its number and what is wrong; "
              "`--lenient` skips it, as VW does:", ""]
    lines += [f"- `{r['file']}`: ours: {r['error']}; VW: {r['vw_error'] or 'read on'}"
              for r in rows if r["read"] != "yes" or r["vw_error"]]
    lines += [f"- `{r['file']}`: VW reads no example of it and writes no prediction "
              f"(ours: {r['examples'][0]})" for r in rows
              if r["examples"][0] and not r["examples"][1]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vw-repo", type=pathlib.Path,
                        help="a clone of VW's repository (default: a shallow clone)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        repo = args.vw_repo or pathlib.Path(folder) / "vw"
        if args.vw_repo is None:
            subprocess.run(["git", "clone", "-q", "--depth", "1", VW_REPOSITORY, str(repo)],
                           check=True)
        rows = [check(path, pathlib.Path(folder)) for path in test_files(repo)]
    REPORT.write_text(report(rows))
    print(REPORT.read_text())


if __name__ == "__main__":
    main()
