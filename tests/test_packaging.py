"""Installing Control Room claims one top-level import name: `controlroom`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# What the wheel is built from; `controlroom/` holds relative symlinks to these folders.
SOURCES = (
    "pyproject.toml",
    "README.md",
    "controlroom",
    "api",
    "domain",
    "engine",
    "eventstore",
    "models",
    "projections",
    "prompts",
    "recipes",
    "tools",
)


def private_sources(tmp_path: Path) -> Path:
    """A copy of what the wheel needs: setuptools writes `build/` and `*.egg-info` beside the
    sources, so two tests building from the checkout at once (pytest-xdist) pull files out
    from under each other."""
    copy = tmp_path / "src"
    copy.mkdir()
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, symlinks=True, ignore=junk)
        else:
            shutil.copy2(source, copy / name)
    return copy


def build_wheel(tmp_path: Path) -> Path:
    sources = private_sources(tmp_path)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(sources),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("controlroom-*.whl")
    return wheel


@pytest.mark.timeout(180)
def test_the_wheel_installs_everything_under_one_namespace(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"controlroom"}
    for expected in (
        "controlroom/domain/run.py",
        "controlroom/api/cli.py",
        "controlroom/recipes/creative_draft_scene.json",
        "controlroom/prompts/prompts.json",
        "controlroom/prompts/templates/draft_scene.t3.md",
        "controlroom/models/models.schema.json",
        "controlroom/api/static/app.js",  # the dashboard
    ):
        assert expected in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "controlroom = controlroom.api.cli:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )


@pytest.mark.timeout(600)
@pytest.mark.long
def test_a_plain_install_without_extras_runs_the_main_job(tmp_path: Path) -> None:
    """`pip install controlroom` as a user would: no PostgreSQL driver, no vendor SDKs."""
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=450,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    for extra in ("psycopg", "openai", "anthropic"):
        probe = [str(venv / "bin" / "python"), "-c", f"import {extra}"]
        assert subprocess.run(probe, capture_output=True, check=False).returncode != 0, extra
    workspace = tmp_path / "novel"
    shutil.copytree(
        REPO / "examples" / "novel",
        workspace,
        ignore=shutil.ignore_patterns(".control-room", "SCN-04-*"),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTROLROOM_")}
    ran = subprocess.run(
        [str(venv / "bin" / "controlroom"), "run", "Draft scene 4 from the outline"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert (workspace / "Story" / "Scenes" / "SCN-04-the-reckoning.md").is_file()
    assert "recorded in" in ran.stdout + ran.stderr
    postgres = subprocess.run(
        [str(venv / "bin" / "controlroom"), "runs"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "CONTROLROOM_STORE": "postgresql://postgres@127.0.0.1:5432/test"},
        check=False,
    )
    assert postgres.returncode == 64, postgres.stderr
    assert "pip install 'controlroom[postgres]'" in postgres.stderr
    assert "Traceback" not in postgres.stderr
