"""Installing Control Room claims one top-level import name: `controlroom`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(180)
def test_the_wheel_installs_everything_under_one_namespace(tmp_path: Path) -> None:
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
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("controlroom-*.whl")
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
    ):
        assert expected in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "controlroom = controlroom.api.cli:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )
