"""The built wheel carries everything the pipeline needs: installed into a fresh venv and run
from another directory, with the repository nowhere on the path, it builds a warehouse."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from tests.paths import ROOT

OWN_PACKAGES = ("pipeline", "schemas")

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # Built from a copy: setuptools leaves build/ and *.egg-info behind, and a stale build/
    # would carry deleted modules into the next wheel.
    source = out / "source"
    skip = shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "data", "tests")
    shutil.copytree(ROOT, source, ignore=skip)
    # No isolated build env: the dev extra brings setuptools, so no index is asked.
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)]
    _run(build, cwd=out, env=env)
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_holds_every_sql_file_and_the_schemas(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in OWN_PACKAGES:
        files = [p for p in (ROOT / package).rglob("*") if p.is_file() and p.suffix != ".pyc"]
        wanted = {str(p.relative_to(ROOT)) for p in files if "__pycache__" not in p.parts}
        assert wanted <= names, sorted(wanted - names)
    assert any(n.startswith("pipeline/sql/queries/") for n in names)
    # The sample and bench generators are development tools, not the runtime package.
    assert not [n for n in names if n.split("/")[0] in {"tools", "bench", "tests"}]


def _third_party_imports() -> set[str]:
    """Top-level modules that pipeline/ and schemas/ import, outside the stdlib and the repo."""
    found: set[str] = set()
    for package in OWN_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - set(OWN_PACKAGES) - {"__future__"}


def _normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them (inspect_ai is inspect-ai)."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def test_the_wheel_declares_every_distribution_the_code_imports(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = Parser().parsestr(archive.read(metadata).decode()).get_all("Requires-Dist")
    declared = {
        _normalized(r.split(";")[0].split("[")[0].split("<")[0].split(">")[0])
        for r in requires or []
    }
    distributions = packages_distributions()
    for module in sorted(_third_party_imports()):
        owners = {_normalized(d) for d in distributions.get(module, [])}
        assert owners & declared, f"{module} (from {sorted(owners)}) is not a declared dependency"


def _fresh_venv(root: Path, wheel: Path) -> Path:
    """A venv holding only the wheel; its dependencies come from the running environment's
    site-packages, appended after its own (a .pth line adds a path, not that path's .pth
    files, so the editable install of the repository stays out of sight)."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "--python", str(python), "install", "--no-deps", str(wheel)], cwd=root, env=env)
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=root,
        env=env,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_deps_from_test_runner.pth").write_text("\n".join(sorted(deps)) + "\n")
    return python


def test_the_installed_wheel_runs_the_pipeline_from_another_directory(
    wheel: Path, tmp_path: Path
) -> None:
    python = _fresh_venv(tmp_path / "venv", wheel)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(python), "-c", "import pipeline; print(pipeline.__file__)"], elsewhere, env)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout
    sample, lake = tmp_path / "sample", tmp_path / "lake"
    shutil.copytree(ROOT / "data" / "sample", sample)
    _run([str(python), "-m", "pipeline", "run", str(sample), "--lake", str(lake)], elsewhere, env)
    counted = _run(
        [
            str(python),
            "-m",
            "pipeline",
            "query",
            "select (select count(*) from task_runs) as tasks, "
            "(select count(*) from surface_runs) as surfaces",
            "--lake",
            str(lake),
            "--json",
        ],
        elsewhere,
        env,
    )
    (row,) = json.loads(counted.stdout)
    assert row["tasks"] > 0 and row["surfaces"] > 0
    assert not list(elsewhere.iterdir()), "the run wrote into the working directory"
