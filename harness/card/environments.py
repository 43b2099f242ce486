"""One virtualenv per library and version, built once and cached.

A side environment holds this harness and one release of the library under test, and serves that
library's adapter over the stdio protocol (`python -m harness.cli serve-accumulator ADAPTER`), as
`.ci/run` does for the two langchain-core releases. Environments live under `$TOOLSTREAM_CACHE`
(default `~/.cache/toolstream`), in `report-card/<library>-<version>/`; one is reused while its
stamp matches (the library, its version, and a hash of the harness sources it was given). Whatever
goes wrong for one environment (no such release, pip fails) is an `EnvironmentProblem` that the
card shows as that row, never a crash of the run; so is an adapter that does not load, told by the
run itself (`adapter_problem`: its `serve-accumulator` could not start for any case).

A release is graded in the environment of its day: its dependencies are installed as they stood
when it was published (`published`: the newest upload time of its files on the index, read from
the index's JSON simple API, PEP 691 and 700), through pip's `--uploaded-prior-to` (pip 26.0 and
later: this interpreter's pip when it takes the option, else the environment's own, upgraded). The
cutoff is the environment's `cutoff`; where none could be applied `undated` says why.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness import bounded, files
from harness.accumulators.stdio_process import start_failure
from harness.card.libraries import Library

__all__ = [
    "EnvironmentProblem",
    "SideEnvironment",
    "adapter_problem",
    "available_versions",
    "build",
    "build_first",
    "cache_root",
    "contents",
    "dated_environment",
    "index_url",
    "install_argv",
    "installed_version",
    "pick_versions",
    "published",
    "resolve_versions",
    "site_packages",
    "source_root",
    "start_problem",
]

PACKAGE = Path(__file__).resolve().parent.parent  # harness/: its parent is a checkout, or site-packages

STAMP = "toolstream-card.json"
LAYOUT = 2  # environments of their day (dependencies no newer than the release): older ones are rebuilt
INDEX = "https://pypi.org/simple/"
MAX_INDEX_PAGE = 64 << 20  # bytes of one project's JSON page read from the index
PIP_TIMEOUT = 1_200.0  # seconds for one `pip install` (a cold cache on a slow mirror)


class EnvironmentProblem(Exception):
    """Why one library version could not be graded (shown as its row)."""


@dataclass(frozen=True)
class SideEnvironment:
    """A Python with the harness and one release of a library installed."""

    library: Library
    version: str
    python: str  # the interpreter that serves the adapter
    note: str | None = None  # why this release and not the one asked for (newer ones passed over)
    built: bool = False  # one of the card's own (`build`), not an environment it was pointed at
    cutoff: str | None = None  # its dependencies were uploaded before this time (UTC, ISO 8601)
    undated: str | None = None  # why no cutoff applies (its dependencies are the build day's)

    def spec(self) -> str:
        """The accumulator spec that runs this environment's adapter over stdio."""
        return f"cmd:{_quote(self.python)} -m harness.cli serve-accumulator {self.library.adapter}"


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def cache_root() -> Path:
    """Where side environments are kept: `report-card/` in the harness's cache (`harness.cache`)."""
    from harness import cache

    return cache.home() / "report-card"


def source_root() -> Path | None:
    """The checkout side environments install: the one this harness runs from, else (installed
    from a wheel, as `pip install .` does) the checkout the command runs in; None without one."""
    here = Path.cwd().resolve()
    for root in (PACKAGE.parent, here, *here.parents):
        if _is_checkout(root):
            return root
    return None


def _is_checkout(root: Path) -> bool:
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "harness" / "__init__.py").is_file()):
        return False
    return 'name = "toolstream-harness"' in pyproject.read_text(encoding="utf-8", errors="replace")


def _source_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / "harness").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    digest.update((root / "pyproject.toml").read_bytes())
    return digest.hexdigest()[:16]


def _run(
    argv: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"`{' '.join(argv[:4])} ...` took more than {timeout:g} s") from None
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR") or "Error" in line]
    return (errors or lines or ["(no output)"])[-1][:300]


def available_versions(package: str) -> list[str]:
    """The package's releases on the index pip is configured for, newest first."""
    run = _run([sys.executable, "-m", "pip", "index", "versions", package], timeout=120)
    found = re.search(r"^Available versions: (.+)$", run.stdout, re.MULTILINE)
    if run.returncode != 0 or not found:
        raise EnvironmentProblem(
            f"cannot list the releases of {package}: {_last_line(run.stderr + run.stdout)}"
        )
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


WALK_BACK = 6  # releases `newest` tries, newest first, before the row says none installs here


def pick_versions(package: str, wanted: list[str]) -> list[str]:
    """`newest` (the latest release) and `oldest` (the first release of the latest major line,
    the one upstream still maintains) resolved against the index; other entries kept as given."""
    return list(dict.fromkeys(candidates[0] for candidates in resolve_versions(package, wanted)))


def resolve_versions(package: str, wanted: list[str]) -> list[list[str]]:
    """For each wanted version, the releases to try in order: `newest` the latest `WALK_BACK`
    releases, newest first (the first that installs and imports is graded: `build_first`);
    `oldest` the first release of the latest major line; a release given as itself."""
    if not any(w in ("newest", "oldest") for w in wanted):
        return [[w] for w in dict.fromkeys(wanted)]
    releases = [v for v in available_versions(package) if re.fullmatch(r"\d+(\.\d+)*", v)]
    if not releases:
        raise EnvironmentProblem(f"{package} has no final release on the index")
    major = releases[0].split(".")[0]
    line = [v for v in releases if v.split(".")[0] == major]
    chosen = {"newest": releases[:WALK_BACK], "oldest": [line[-1]]}
    return [chosen.get(w, [w]) for w in dict.fromkeys(wanted)]


def build_first(
    library: Library,
    candidates: list[str],
    say: Callable[[str], None] = print,
    builder: Callable[..., SideEnvironment] | None = None,
) -> SideEnvironment:
    """The environment of the first of `candidates` that installs and imports here. Each release
    passed over is named in its `note` with what stopped it; none: the first one's problem."""
    make = builder or build
    passed: list[str] = []
    first: EnvironmentProblem | None = None
    for version in candidates:
        try:
            env = make(library, version, say=say)
        except EnvironmentProblem as exc:
            first = first or exc
            passed.append(f"{version} ({exc})")
            say(f"{library.name} {version}: passed over: {exc}")
            continue
        if not passed:
            return env
        note = f"newest that installs here; passed over {'; '.join(passed)}"
        return replace(env, note=note)
    assert first is not None, "no candidate release"
    if len(candidates) > 1:
        raise EnvironmentProblem(f"none of the {len(candidates)} newest releases installs here: {first}")
    raise first


def site_packages(python: str) -> str | None:
    """Where this interpreter's packages are installed (its purelib), or None."""
    try:
        run = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=60)
    except EnvironmentProblem:
        return None
    return run.stdout.strip() or None


_CONTENTS = """\
import importlib.metadata as m, importlib.util, json, sys, sysconfig
found = importlib.util.find_spec("harness")
print(json.dumps({
    "python": sys.version.split()[0],
    "purelib": sysconfig.get_paths()["purelib"],
    "harness": list(found.submodule_search_locations or [])[:1] if found else [],
    "distributions": sorted(
        f"{d.metadata['Name']}=={d.version}" for d in m.distributions() if d.metadata["Name"]
    ),
}))
"""


def contents(python: str) -> dict[str, Any]:
    """What an interpreter's environment holds that a verdict can depend on: its Python version,
    every distribution installed with its version, and where its `harness` package is (the
    adapter runs from that copy); an empty mapping when it cannot say."""
    try:
        run = _run([python, "-c", _CONTENTS], timeout=120)
        found = json.loads(run.stdout)
    except (EnvironmentProblem, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def installed_version(python: str, package: str) -> str | None:
    """The version of `package` installed for this interpreter, or None."""
    code = (
        "import importlib.metadata as m, sys\n"
        "try: print(m.version(sys.argv[1]))\n"
        "except m.PackageNotFoundError: pass\n"
    )
    run = _run([python, "-c", code, package], timeout=60)
    return run.stdout.strip() or None


def index_url() -> str:
    """The index pip installs from: `PIP_INDEX_URL`, else PyPI's simple index."""
    return os.environ.get("PIP_INDEX_URL") or INDEX  # `build` passes pip's configured one


_SOURCES = ("index-url", "extra-index-url", "find-links")  # where pip finds releases


def _remote(value: str) -> str:
    """The remote sources of a pip source setting (URLs other than `file:`), space-separated."""
    return " ".join(v for v in value.split() if re.match(r"https?://", v))


def dated_environment(config: str, environ: dict[str, str]) -> dict[str, str]:
    """The environment for a dated `pip install`: pip's settings (`pip config list` output, and
    the `PIP_*` variables) as variables, with its config files left out (`PIP_CONFIG_FILE` the
    null device) and every local source dropped (a `file:` index, a `--find-links` folder):
    pip exempts local files from `--uploaded-prior-to`, so a newer release there would be taken."""
    env = {k: v for k, v in environ.items() if not k.startswith("PIP_")}
    for line in config.splitlines():
        found = re.fullmatch(r"[^.]*\.([a-z0-9-]+)='(.*)'", line.strip())
        if found:
            env[f"PIP_{found.group(1).upper().replace('-', '_')}"] = found.group(2)
    env.update({k: v for k, v in environ.items() if k.startswith("PIP_")})
    for key in _SOURCES:
        name = f"PIP_{key.upper().replace('-', '_')}"
        kept = _remote(env.pop(name, ""))
        if kept:
            env[name] = kept
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _release_of(filename: str) -> tuple[str, str] | None:
    """The (project, version) a distribution file's name says: a wheel's or an sdist's."""
    if filename.endswith(".whl"):
        parts = filename[: -len(".whl")].split("-")
        return (_normalized(parts[0]), parts[1]) if len(parts) >= 5 else None
    for ext in (".tar.gz", ".zip", ".tar.bz2", ".tgz"):
        if filename.endswith(ext):
            name, _, version = filename[: -len(ext)].rpartition("-")
            return (_normalized(name), version) if name else None
    return None


def published(package: str, version: str, index: str | None = None, timeout: float = 60.0) -> str:
    """When `package==version` was published: the newest upload time of its files on the index
    (its JSON simple page, PEP 691, with PEP 700's `upload-time`), plus a second so a cutoff at it
    still takes the release itself; `YYYY-MM-DDTHH:MM:SSZ`. `EnvironmentProblem` when the index
    does not say."""
    url = f"{(index or index_url()).rstrip('/')}/{_normalized(package)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            page = answer.read(MAX_INDEX_PAGE + 1)
        if len(page) > MAX_INDEX_PAGE:
            raise EnvironmentProblem(f"{url}: the index page is larger than {MAX_INDEX_PAGE} bytes")
        found = bounded.loads(page)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        raise EnvironmentProblem(
            f"cannot read when {package} {version} was published from {url}: {exc}"
        ) from None
    files_ = found.get("files") if isinstance(found, dict) else None
    times = [
        str(f["upload-time"])
        for f in (files_ if isinstance(files_, list) else [])
        if isinstance(f, dict)
        and f.get("upload-time")
        and _release_of(str(f.get("filename", ""))) == (_normalized(package), version)
    ]
    if not times:
        raise EnvironmentProblem(f"the index ({url}) gives no upload time for {package} {version}")
    try:
        newest = max(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times)
    except ValueError as exc:
        raise EnvironmentProblem(f"{url}: an upload time is not ISO 8601: {exc}") from None
    cutoff = newest.astimezone(datetime.UTC).replace(microsecond=0) + datetime.timedelta(seconds=1)
    return cutoff.strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.cache
def _takes_cutoff(pip: tuple[str, ...]) -> bool:
    """Whether this pip has `--uploaded-prior-to` (pip 26.0 and later)."""
    try:
        run = _run([*pip, "install", "--help"], timeout=120)
    except EnvironmentProblem:
        return False
    return "--uploaded-prior-to" in run.stdout


def install_argv(
    pip: list[str], requirement: str, cutoff: str | None, beside: tuple[str, ...] = ()
) -> list[str]:
    """The `pip install` of a release (and of the distributions installed `beside` it), with its
    dependencies uploaded before `cutoff` if given."""
    dated = [f"--uploaded-prior-to={cutoff}"] if cutoff else []
    return [*pip, "install", "--quiet", "--disable-pip-version-check", *dated, requirement, *beside]


def build(
    library: Library, version: str, say: Callable[[str], None] = print, *, refresh: bool = True
) -> SideEnvironment:
    """The cached environment for this release, built (or its harness refreshed) when needed.
    `refresh` False: one already built for this release is returned as it is, its harness
    perhaps older (the card refreshes it only for a row whose verdicts are not stored)."""
    root = source_root()
    if root is None:
        raise EnvironmentProblem(
            "this harness was installed from a wheel and no checkout is here: run it in the "
            "toolstream-harness checkout (or pass --env PATH / --use-current-env)"
        )
    where = cache_root() / f"{library.name}-{version}"
    python = str(where / "bin" / "python")
    stamp_path = where / STAMP
    want = {"library": library.name, "version": version, "harness": _source_hash(root), "layout": LAYOUT}
    stamp = _read_stamp(stamp_path) or {}
    dated = {"cutoff": stamp.get("cutoff"), "undated": stamp.get("undated")}
    if all(stamp.get(k) == v for k, v in want.items()) and Path(python).exists():
        return SideEnvironment(library, version, python, built=True, **dated)
    same_release = all(stamp.get(k) == v for k, v in want.items() if k != "harness")
    if not refresh and same_release and Path(python).exists():
        return SideEnvironment(library, version, python, built=True, **dated)
    # Refreshed in place if some pip can install there (one made without its own, by a harness
    # whose pip installs elsewhere, is rebuilt when this harness's cannot).
    pip_there = _pip_installs_elsewhere() or (where / "bin" / "pip").exists()
    if same_release and Path(python).exists() and pip_there:
        say(f"{library.name} {version}: refreshing the harness in {where}")
        _pip(python, ["--no-deps", "--force-reinstall", str(root)])
    else:
        say(f"{library.name} {version}: building {where} (pip install {library.requirement(version)})")
        dated = _of_its_day(library, version, where, python, say)
        _pip(python, [str(root)])  # the harness after: its own dependencies do not hold the date back
        _imports(python, library)
    files.write(stamp_path, (json.dumps({**want, **dated}) + "\n").encode("utf-8"))
    return SideEnvironment(library, version, python, built=True, **dated)


def _of_its_day(
    library: Library, version: str, where: Path, python: str, say: Callable[[str], None]
) -> dict[str, str | None]:
    """A new environment at `where` holding the release with its dependencies as they were when
    it was published: `{"cutoff": ..., "undated": None}`, or no cutoff and why (`undated`)."""
    cutoff: str | None = None
    undated: str | None = None
    listed = _run([sys.executable, "-m", "pip", "config", "list"], timeout=120)
    env = dated_environment(listed.stdout if listed.returncode == 0 else "", dict(os.environ))
    if env.get("PIP_NO_INDEX", "").lower() in ("1", "true", "yes", "on"):
        undated = "pip is told to use no index (PIP_NO_INDEX): no upload time to date by"
    else:
        try:  # from the index the dated install reads
            cutoff = published(library.distribution, version, env.get("PIP_INDEX_URL"))
        except EnvironmentProblem as exc:
            undated = str(exc)
    here = [sys.executable, "-m", "pip", "--python", python] if _pip_installs_elsewhere() else None
    bare = here is not None and (cutoff is None or _takes_cutoff(tuple(here[:3])))
    if where.exists():
        shutil.rmtree(where)
    where.parent.mkdir(parents=True, exist_ok=True)
    made = _run([sys.executable, "-m", "venv", *(["--without-pip"] if bare else []), str(where)], timeout=300)
    if made.returncode != 0:
        raise EnvironmentProblem(f"venv failed: {_last_line(made.stderr + made.stdout)}")
    pip = here if bare and here is not None else [python, "-m", "pip"]
    if cutoff is not None and not bare:
        # This interpreter's pip cannot date an install: the environment's own is made one that can.
        upgrade = _run([*pip, "install", "--quiet", "--upgrade", "pip"], PIP_TIMEOUT)
        if upgrade.returncode != 0 or not _takes_cutoff(tuple(pip)):
            undated = "no pip here takes --uploaded-prior-to (pip 26.0 and later)"
            cutoff = None
    if cutoff is not None:
        say(f"{library.name} {version}: its dependencies as uploaded before {cutoff}")
    argv = install_argv(pip, library.requirement(version), cutoff, library.beside)
    run = _run(argv, PIP_TIMEOUT, env if cutoff else None)
    if run.returncode != 0:
        raise EnvironmentProblem(f"pip install failed: {_last_line(run.stderr + run.stdout)}")
    return {"cutoff": cutoff, "undated": undated}


def _imports(python: str, library: Library) -> None:
    """That the adapter loads its library in the environment: a release that installs but does
    not import (a dependency's API gone) is passed over like one that does not install."""
    code = "import sys\nfrom harness.accumulators import resolve\nresolve(sys.argv[1])\n"
    run = _run([python, "-c", code, library.adapter], timeout=300)
    if run.returncode != 0:
        said = _last_line(run.stderr + run.stdout)
        raise EnvironmentProblem(f"adapter {library.adapter} does not load: {said}")


def _pip_installs_elsewhere() -> bool:
    """Whether this interpreter's pip installs into another one (`pip --python`, pip 22.3 and
    later): a side environment is then made without a pip of its own, whose install (`ensurepip`)
    costs about 7 s of CPU, more than creating the rest of it a hundred times over."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = [int(part) for part in re.findall(r"\d+", version("pip"))[:2]]
    except (PackageNotFoundError, ValueError):
        return False  # no pip here (an environment uv made, say): each side one gets its own
    return found >= [22, 3]


def _pip(python: str, args: list[str]) -> None:
    """`pip install args` into the environment of `python`: by this interpreter's pip where it
    can (`_pip_installs_elsewhere`), else by the environment's own."""
    here = _pip_installs_elsewhere()
    pip = [sys.executable, "-m", "pip", "--python", python] if here else [python, "-m", "pip"]
    run = _run([*pip, "install", "--quiet", "--disable-pip-version-check", *args], PIP_TIMEOUT)
    if run.returncode != 0:
        raise EnvironmentProblem(f"pip install failed: {_last_line(run.stderr + run.stdout)}")


def _read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        data = bounded.loads(bounded.read(path, 1 << 20))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def adapter_problem(env: SideEnvironment, errors: Iterable[str | None]) -> str | None:
    """A problem when the adapter's `serve-accumulator` could not start for any case of the run
    (the library does not load in this environment), from its cases' `errors`; None otherwise."""
    said = [start_problem(env.library.adapter, error) for error in errors]
    if not said or None in said:
        return None
    return said[-1]


def start_problem(adapter: str, error: str | None) -> str | None:
    """`adapter ... does not load: <its last error line>` when a case's `error` says the adapter's
    `serve-accumulator` could not start; None for any other error (or none)."""
    exited = start_failure(error)
    if exited is None:
        return None
    words = exited.replace(" | ", "\n")  # the stderr tail's lines, as the process wrote them
    return f"adapter {adapter} does not load: {_last_line(words)}"
