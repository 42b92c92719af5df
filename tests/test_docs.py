"""The README and the guides as a user meets them: every ``>>>`` example runs and prints
what it says, every ``console`` block's commands run (in a folder holding the example logs,
with ``../shared`` beside it: a document's blocks share a folder, and the scripts it shows
as ``python`` blocks opening with ``# NAME.py``) and print what they show, every local link
leads somewhere,
the defaults table is `regcb_stream.defaults`'s, and every number of the results table is in
the report it links to."""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from regcb_stream.datasets import examples
from regcb_stream.defaults import MODEL_CLASSES

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs" / "guide").glob("*.md"))
DOCS = [README, *GUIDES]
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
BLOCK = re.compile(r"```console\n(.*?)```", re.S)
SCRIPT = re.compile(r"```python\n# (\w+\.py)\b(.*?)```", re.S)  # a file a console block runs


def ids(paths):
    return [str(path.relative_to(ROOT)) for path in paths]


@pytest.mark.parametrize("path", DOCS, ids=ids(DOCS))
def test_python_examples_run_as_written(path, workdir, monkeypatch):
    if "coba" in path.read_text():
        pytest.importorskip("coba")
    monkeypatch.chdir(workdir)  # (the example logs, and ../shared beside)
    result = doctest.testfile(str(path), module_relative=False, optionflags=FLAGS,
                              encoding="utf-8")
    assert result.failed == 0


def console_blocks(path: pathlib.Path) -> list[list[tuple[str, str]]]:
    """Each console block's commands (``$ ...``) and the output shown after each."""
    blocks = []
    for text in BLOCK.findall(path.read_text(encoding="utf-8")):
        steps: list[list] = []
        for line in text.splitlines():
            if line.startswith("$ "):
                steps.append([line[2:], []])
            elif steps:
                steps[-1][1].append(line)
        blocks.append([(command, "\n".join(shown) + "\n" if shown else "")
                       for command, shown in steps])
    return blocks


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with the example logs of ``make demo`` and ``../shared`` beside it."""
    top = tmp_path_factory.mktemp("docs")
    examples.write(top / "work" / "examples" / "data")
    if (ROOT.parent / "shared").exists():
        (top / "shared").symlink_to(ROOT.parent / "shared")
    return top / "work"


@pytest.mark.parametrize("path", [p for p in DOCS if console_blocks(p)],
                         ids=ids([p for p in DOCS if console_blocks(p)]))
def test_console_examples_run_as_written(path, workdir):
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}:{os.environ['PATH']}"}
    checker = doctest.OutputChecker()
    folder = workdir / path.stem  # a folder per document: its blocks one session
    shutil.copytree(workdir / "examples", folder / "examples")
    for name, text in SCRIPT.findall(path.read_text(encoding="utf-8")):
        (folder / name).write_text(f"# {name}{text}")  # (as a user saves it)
    for block in console_blocks(path):
        for command, shown in block:
            if "../shared" in command and not (workdir.parent / "shared").exists():
                pytest.skip("../shared is missing")
            done = subprocess.run(["bash", "-c", command.replace("../shared",
                                                                 str(workdir.parent / "shared"))],
                                  cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
            if shown:
                assert checker.check_output(shown, done.stdout, FLAGS), (
                    f"{command}\nshown:\n{shown}\ngot:\n{done.stdout}")


def test_local_links_lead_somewhere():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.name}: {target}"


def test_the_readme_defaults_table_is_the_defaults():
    rows = {}
    for line in README.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] in MODEL_CLASSES:
            rows[cells[0]] = cells
    assert rows.keys() == MODEL_CLASSES.keys()
    for name, (_, what, l2, prior, mellowness, chosen) in rows.items():
        row = MODEL_CLASSES[name]
        penalty = l2 if isinstance(row.l2, str) else float(l2)
        assert (penalty, prior, float(mellowness)) == (row.l2, row.prior, row.mellowness)
        assert f"({row.report.removeprefix('docs/')})" in chosen.replace("docs/", "")


def test_every_result_of_the_readme_is_in_its_report():
    table = README.read_text().split("## Results", 1)[1].split("##", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "](" in line]
    assert 5 <= len(rows) <= 10
    for line in rows:
        claim, number, report = (cell.strip() for cell in line.strip("|").split("|"))
        target = ROOT / re.search(r"\]\(([^)]+)\)", report).group(1)
        assert number in target.read_text(), f"{claim}: {number} not in {target.name}"


@pytest.mark.parametrize("path", GUIDES, ids=ids(GUIDES))
def test_every_measured_number_of_a_guide_is_in_the_report_it_cites(path):
    """A paragraph that cites reports (``../results/x.md``) quotes only their numbers."""
    for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
        reports = re.findall(r"\]\((\.\./results/[^)#]+\.md)\)", paragraph)
        if not reports or paragraph.startswith("```"):
            continue
        text = "".join((path.parent / report).read_text(encoding="utf-8") for report in reports)
        prose = re.sub(r"`[^`]*`|\]\([^)]*\)", "", paragraph)  # (code and links aside)
        for number in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", prose):
            assert number in text, f"{path.name}: {number} is in none of {reports}"
