"""Job 5: the downstream example (examples/custom_kernels) built against every runtime wheel and run beside
every runtime of the leg."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .cells import Cell, run_cell_script
from .common import EXAMPLE, EXAMPLE_CELL, ROOT
from .wheels import Wheel, _git


@dataclass
class ExampleBuild:
    """examples/custom_kernels built against one runtime wheel."""
    against: Wheel
    expected: str  # "built", or "refused" (CMake's version check finds no matching runtime package)
    outcome: str = ""  # "built", "refused" or "fail"
    message: str = ""
    build: Path | None = None
    seconds: float = 0.0
    runs: dict[str, dict] = field(default_factory=dict)  # runtime title -> {"demo": .., "library": ..}
    run_expected: dict[str, str] = field(default_factory=dict)  # runtime title -> "pass" | "refused"


def example_needs(cmakelists: Path = EXAMPLE / "CMakeLists.txt") -> tuple[int, int]:
    """The runtime ABI the example asks for: its `find_package(hipdnn_ep_runtime MAJOR.MINOR ...)`."""
    found = re.search(r"find_package\(\s*hipdnn_ep_runtime\s+(\d+)\.(\d+)", cmakelists.read_text())
    if found is None:
        raise SystemExit(f"matrix: {cmakelists} asks for no hipdnn_ep_runtime version (find_package(... X.Y ...))")
    return int(found[1]), int(found[2])


def example_build_expected(needs: tuple[int, int], runtime: Wheel) -> str:
    """The runtime wheel's CMake package version check: the same ABI major, at least the minor asked for."""
    return "built" if runtime.abi[0] == needs[0] and runtime.abi[1] >= needs[1] else "refused"


def example_run_expected(built_against: Wheel, runtime: Wheel) -> str:
    """The example's own check (custom_kernels_check_runtime): the loaded runtime has the ABI major of the
    header the library was compiled with and at least its minor; else it refuses with its message."""
    (bmaj, bmin), (rmaj, rmin) = built_against.abi, runtime.abi
    return "pass" if rmaj == bmaj and rmin >= bmin else "refused"


def _example_key() -> str:
    """The example's content (tracked and untracked files, ignored ones left out)."""
    digest = hashlib.sha256()
    for name in sorted(_git("ls-files", "-co", "--exclude-standard", "--", "examples/custom_kernels").split()):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def build_example(runtime: Wheel, cache: Path, needs: tuple[int, int]) -> ExampleBuild:
    """Configures and builds the example against a runtime wheel unpacked as pip would install it (its
    header, CMake package and library); cached per wheel content and example source."""
    result = ExampleBuild(runtime, example_build_expected(needs, runtime))
    digest = hashlib.sha256(runtime.path.read_bytes()).hexdigest()[:16]
    dest = (cache / "examples" / f"custom_kernels-{digest}-{_example_key()}").resolve()
    done = dest / "outcome.json"
    if not done.exists():
        t0 = time.monotonic()
        shutil.rmtree(dest, ignore_errors=True)
        with zipfile.ZipFile(runtime.path) as z:
            z.extractall(dest / "site")
        config = next((dest / "site").glob("*/cmake/hipdnn_ep_runtime-config.cmake"), None)
        package_dir = config.parent if config else dest / "site"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        proc = subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(dest / "build"), *generator,
                               f"-Dhipdnn_ep_runtime_DIR={package_dir}"], capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0:
            # CMake's own refusal: the wheel's hipdnn_ep_runtime package is not of a compatible version
            refused = "hipdnn_ep_runtime" in text and "compatible with requested version" in text
            outcome = ("refused" if refused else "fail", " ".join(text.split())[-800:])
        else:
            proc = subprocess.run(["cmake", "--build", str(dest / "build")], capture_output=True, text=True)
            outcome = ("built", "") if proc.returncode == 0 else ("fail", (proc.stdout + proc.stderr)[-1500:])
        done.write_text(json.dumps({"outcome": outcome[0], "message": outcome[1],
                                    "seconds": round(time.monotonic() - t0, 1)}))
    saved = json.loads(done.read_text())
    result.outcome, result.message, result.seconds = saved["outcome"], saved["message"], saved["seconds"]
    result.build = dest / "build" if result.outcome == "built" else None
    return result


def run_example(runtimes: list[Wheel], cells: list[Cell], pythons: dict[str, Path], cache: Path,
                backend: str) -> list[ExampleBuild]:
    """The example built against every runtime wheel of the leg, then run beside every runtime of the leg
    (in the environment of a cell that installed it). The replayed runtimes are left out: the example
    calls neither replayed function, and the "removed" one's own Python module no longer imports."""
    needs = example_needs()
    envs: dict[str, tuple[Wheel, Path]] = {}
    for c in cells:
        if c.name in pythons and not c.replay:
            envs.setdefault(c.runtime.title, (c.runtime, pythons[c.name]))
    builds = []
    for runtime in runtimes:
        b = build_example(runtime, cache, needs)
        builds.append(b)
        for title, (wheel, python) in envs.items():
            b.run_expected[title] = example_run_expected(runtime, wheel)
            if b.build is not None:
                b.runs[title] = run_cell_script(python, str(b.build), "--backend", backend, script=EXAMPLE_CELL,
                                                timeout=300)
        print(f"matrix: examples/custom_kernels against runtime {runtime.title}: {b.outcome}, run with "
              + ", ".join(f"{t}: {example_actual(r)}" for t, r in b.runs.items()), flush=True)
    return builds


def example_actual(run: dict[str, dict]) -> str:
    """'pass' or 'refused' when the demo and the library agree on it, else 'fail'."""
    outcomes = {r["outcome"] for r in run.values()}
    return outcomes.pop() if len(outcomes) == 1 and outcomes <= {"pass", "refused"} else "fail"


def example_ok(b: ExampleBuild) -> bool:
    if b.outcome != b.expected:
        return False
    return all(example_actual(b.runs.get(t, {"-": {"outcome": "missing"}})) == want
               for t, want in b.run_expected.items()) if b.outcome == "built" else True


def example_table(builds: list[ExampleBuild], needs: tuple[int, int]) -> str:
    titles = list(builds[0].run_expected) if builds else []
    head = ["built against runtime", "build (expected from metadata)", *(f"run with {t}" for t in titles), "verdict"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for b in builds:
        build = f"{b.outcome} ({'as expected' if b.outcome == b.expected else f'**expected {b.expected}**'})"
        runs = []
        for t in titles:
            if b.outcome != "built":
                runs.append("-")
                continue
            got, want = example_actual(b.runs.get(t, {})), b.run_expected[t]
            runs.append(got if got == want else f"**{got}** (expected {want})")
        verdict = "as expected" if example_ok(b) else "**UNEXPECTED**"
        rows.append("| " + " | ".join([f"{b.against.title} (ABI {b.against.abi[0]}.{b.against.abi[1]})", build, *runs,
                                       verdict]) + " |")
    notes = [f"\nThe example asks for runtime ABI >= {needs[0]}.{needs[1]} (its find_package); each run loads "
             "the library through Python (RMS norm against numpy) and runs its demo beside the installed runtime."]
    refusal = next((r["message"] for b in builds for r in (x.get("library") for x in b.runs.values())
                    if r and r["outcome"] == "refused"), None)
    if refusal:
        notes.append(f"A refusal reads: `{refusal}`")
    for b in builds:
        if b.outcome != b.expected:
            notes.append(f"- build against {b.against.title}: {b.outcome}: {b.message[-600:]}")
        for t, run in b.runs.items():
            if example_actual(run) != b.run_expected[t]:
                notes.extend(f"- {b.against.title} with {t}: {k}: {r['outcome']}: {r['message'][-400:]}"
                             for k, r in run.items())
    return "\n".join(rows) + "\n" + "\n".join(notes) + "\n"
