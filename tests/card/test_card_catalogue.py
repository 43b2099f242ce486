"""`harness.card.catalogue`: the card's client programs ship with the package, so an installed
toolstream (no checkout) has them, and runs them from a working copy where their toolchain can be
installed (`examples/clients/table.py` reads them through public names only:
tests/test_examples_public.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from harness.card.catalogue import catalogue, shipped

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "clients"


def _program_files() -> set[str]:
    """Each client folder's own files (what `npm ci` or a venv adds beside them is not theirs)."""
    folders = {entry[0] for entry in catalogue(ROOT).clients.values()}
    return {
        path.relative_to(SOURCE).as_posix()
        for folder in folders
        for path in (SOURCE / folder).iterdir()
        if path.is_file() and not path.is_symlink()
    }


def test_the_wheel_force_includes_every_client_program_file() -> None:
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    shipped_files = {
        key.removeprefix("examples/clients/")
        for key, target in wheel["force-include"].items()
        if key.startswith("examples/clients/") and target == f"harness/_bundled/clients/{key[17:]}"
    }
    assert shipped_files == _program_files()


def test_outside_a_checkout_the_programs_run_from_a_working_copy_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    table = catalogue(None)
    assert table.here == tmp_path / "cache" / "clients"
    for name, (folder, program, *_rest) in table.clients.items():
        copy = table.folder(name) / program[1]
        assert copy.read_bytes() == (SOURCE / folder / program[1]).read_bytes(), name
    assert not any(p.name == "node_modules" for p in table.here.rglob("*"))
    assert table.install_command("node-openai") == f"npm ci --prefix {table.folder('node-openai')}"
    # A checkout's own programs, with what is installed beside them, are run where they are.
    assert catalogue(ROOT).folder("node-openai") == SOURCE / "node-openai"
    assert catalogue(ROOT).install_command("node-openai") == "npm ci --prefix examples/clients/node-openai"


@pytest.mark.slow
def test_an_installed_wheel_finds_and_runs_its_client_programs(tmp_path: Path) -> None:
    """The wheel built from this checkout, unpacked as a site folder and run from elsewhere (no
    checkout in sight): the catalogue finds the shipped programs, and `check --client` grades one."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if built.returncode != 0:
        pytest.skip(f"cannot build the wheel here: {built.stderr.strip()[-300:]}")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert not any("node_modules" in name for name in zipfile.ZipFile(wheel).namelist())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    env["TOOLSTREAM_CACHE"] = str(tmp_path / "cache")
    code = (
        "import json, harness\n"
        "from harness.card.catalogue import shipped\n"
        "table = harness.client_catalogue(None)\n"
        "print(json.dumps({'shipped': str(shipped()), 'here': str(table.here),"
        " 'stdlib': table.command('python-stdlib')}))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
        check=True,
    )  # fmt: skip
    found = json.loads(shown.stdout)
    assert found["shipped"] == str(site / "harness" / "_bundled" / "clients")
    assert found["here"] == str(tmp_path / "cache" / "clients")
    check = [sys.executable, "-m", "harness", "check", "--client", found["stdlib"], "--case"]
    done = subprocess.run(
        [*check, "openai-chat/single-call::original::s0"], cwd=elsewhere, env=env, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # Run from this checkout, its programs are the package data's source; installed from a wheel
    # (CI's `pip install .`), the package's own copy of them.
    import harness

    here = Path(harness.__file__).resolve().parent
    assert shipped() == (SOURCE if here.parent == ROOT else here / "_bundled" / "clients")
