"""The README's test command is what CI runs: .ci/run runs the same nox sessions, and they are
noxfile.py's defaults (a bare `nox`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOX = re.compile(r"python3 -m nox -s ((?:[\w-]+ ?)+)$")


def _commands(text: str) -> list[list[str]]:
    return [m[1].split() for line in text.splitlines() if not line.lstrip().startswith("#")
            if (m := NOX.search(line.strip()))]


def test_the_readme_test_command_is_what_ci_and_a_bare_nox_run():
    readme = re.sub(r"\n# ", " ", (ROOT / "README.md").read_text())  # comment lines joined: wrapping moves words
    marked = readme.split("this is what CI runs\n", 1)
    assert len(marked) == 2, "the README's test command must follow the comment '... this is what CI runs'"
    readme_sessions = _commands(marked[1])[0]
    assert _commands((ROOT / ".ci/run").read_text()) == [readme_sessions]
    defaults = re.search(r"^nox\.options\.sessions = \[(.*)\]$", (ROOT / "noxfile.py").read_text(), re.M)[1]
    assert re.findall(r'"([\w-]+)"', defaults) == readme_sessions
    assert "zoo" in readme_sessions
