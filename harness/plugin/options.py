"""The pytest plugin's settings: one precedence everywhere, command line > marker > ini.

Every `--toolstream-*` option is also an ini key (`toolstream_record_mode`, ...). Marker keyword
arguments become frozen option objects, so a misspelt keyword raises `UsageError` naming it.
On CI (the `CI` environment variable set) nothing is recorded unless the record mode is given on
the command line: a marker's or the ini's mode is replaced by `none`, with a note.
Importing this module imports no transport: every pytest session loads the plugin.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from harness.errors import UsageError, did_you_mean
from harness.transports.modes import MATCH_FIELDS, MATCH_NAMES, RecordMode

if TYPE_CHECKING:  # the transports are imported where a matcher or a redaction is built
    from harness.transports.redaction import Redaction

__all__ = [
    "OPTIONS",
    "MatrixOptions",
    "Option",
    "RecordOptions",
    "Settings",
    "add_options",
    "cassette_path",
    "check_ini_keys",
    "check_option_names",
    "file_safe",
    "pytest_recording_path",
]


DEFAULT_CASSETTE_DIR: Final = "cassettes"  # next to the test module, like pytest-recording
# pytest-recording writes `cassettes/<module>/<test>.yaml`: ours carry a second suffix so the two
# never collide, and `toolstream import` of its file writes ours beside it.
CASSETTE_SUFFIX: Final = ".toolstream.yaml"
_LONGEST_NAME: Final = 100  # file names past this are cut and given a hash, so they stay unique
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


_UNSET: Final = object()  # an option given no default: argparse's own (store_false's True)


@dataclass(frozen=True)
class Option:
    """One setting of the plugin as data: its `--toolstream-*` option (when `help` is given) and
    its ini key (when `ini` is given), both under `name` (`toolstream_record_mode`). `flag` is the
    option's spelling when it is not `name`'s (two options may set one name: `--toolstream-retarget`
    and `--toolstream-no-retarget`)."""

    name: str
    help: str | None = None
    metavar: str | tuple[str, ...] | None = None
    action: str | None = None
    type: Any = None
    nargs: int | None = None
    default: Any = _UNSET
    flag: str | None = None
    ini: str | None = None
    ini_type: str | None = None  # pytest's: args, bool; None: a string
    ini_default: Any = None

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def option_kwargs(self) -> dict[str, Any]:
        """`parser.addoption`'s keyword arguments: only those this option sets."""
        given = {"dest": self.name, "action": self.action, "type": self.type, "nargs": self.nargs}
        given |= {"metavar": self.metavar, "help": self.help}
        kwargs = {key: value for key, value in given.items() if value is not None}
        return kwargs if self.default is _UNSET else {**kwargs, "default": self.default}


# Every setting of the plugin (the `toolstream` fixture's, the matrix's, the served cases'), in the
# order `pytest --help` lists them; `add_options` registers them, `Settings` and the fixtures read them.
OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        "toolstream_record_mode", metavar="MODE", default=None,
        help=f"record mode for the `toolstream` fixture: {', '.join(RecordMode)} (default none; CI=1 "
        "forces none unless given here)",
        ini="default record mode of the toolstream fixture",
    ),
    Option(
        "toolstream_cassette_dir", metavar="DIR", default=None,
        help="where test cassettes live (default: cassettes/ next to each test module); also the "
        "cassettes the conformance matrix runs over (default: the bundled corpus)",
        ini="where test cassettes live (relative to the rootdir)",
    ),
    Option(
        "toolstream_accumulator", action="append", default=None, metavar="SPEC",
        help="run the conformance matrix on this accumulator as test items (repeatable)",
        ini="accumulator specs for the matrix", ini_type="args", ini_default=[],
    ),
    Option(
        "toolstream_scenarios", action="append", default=None, metavar="NAMES",
        help="scenario names or files for the matrix, comma-separated or repeated "
        "(default: every bundled scenario plus `original`)",
        ini="scenario names or files for the matrix", ini_type="args", ini_default=[],
    ),
    Option(
        "toolstream_dialect", action="append", default=None, metavar="DIALECT",
        help="only cases of this dialect in the matrix (repeatable; default: every dialect)",
        ini="only these dialects in the matrix", ini_type="args", ini_default=[],
    ),
    Option(
        "toolstream_seeds", type=int, default=None, metavar="N",
        help="run seeds 0..N-1 of each scenario instead of its own",
        ini="seeds 0..N-1 for the matrix",
    ),
    Option(
        "toolstream_compare", nargs=2, default=None, metavar=("A", "B"),
        help="test items that fail where accumulators A and B reach different outcomes",
        ini="two accumulator specs to compare", ini_type="args", ini_default=[],
    ),
    Option(
        "toolstream_gateway", default=None, metavar="CMD_OR_URL",
        help="test items judging this gateway translating --toolstream-gateway-from into "
        "--toolstream-gateway-to on each case served as its upstream (as check --gateway)",
    ),
    Option(
        "toolstream_gateway_from", default=None, metavar="DIALECT",
        help="with --toolstream-gateway: its upstream's dialect",
    ),
    Option(
        "toolstream_gateway_to", default=None, metavar="DIALECT",
        help="with --toolstream-gateway: the dialect it answers in",
    ),
    Option(
        "toolstream_gateway_model", default=None, metavar="M",
        help="with --toolstream-gateway: the model it is asked for",
    ),
    Option(
        "toolstream_json", default=None, metavar="FILE",
        help="write the matrix results as the JSON report of `toolstream check`",
        ini="JSON report file (relative to the rootdir)",
    ),
    Option(
        "toolstream_html", default=None, metavar="FILE",
        help="write the matrix results as a self-contained HTML page",
        ini="HTML report file (relative to the rootdir)",
    ),
    Option(
        "toolstream_strict", action="store_true", default=None,
        help="matrix warnings fail too: cosmetic differences and policy cases",
        ini="matrix warnings fail too", ini_type="bool", ini_default=False,
    ),
    Option(
        "toolstream_no_case_cache", action="store_true", default=False,
        help="build every matrix case instead of reading it from the built-case store",
    ),
    Option(
        "toolstream_retarget", action="store_true", default=None,
        help="move each served case onto the tools the test's request offers (the default)",
        ini="move served cases onto the request's tools", ini_type="bool", ini_default=True,
    ),
    Option(
        "toolstream_retarget", action="store_false", flag="--toolstream-no-retarget",
        help="serve each case as recorded, with the recording's tool names and arguments",
    ),
    Option(
        "toolstream_only_matrix", action="store_true", default=False,
        help="run only the matrix items of --toolstream-accumulator / --toolstream-compare, not the "
        "project's own tests",
    ),
    Option(
        "toolstream_baseline", action="store_true", default=None,
        help="judge each case against its verdict kept by syrupy next to the test (a baseline): fail only "
        "where it got worse or a known failure changed; --snapshot-update writes it",
        ini="judge cases against a syrupy baseline", ini_type="bool", ini_default=False,
    ),
    # The `toolstream` fixture's matching and redaction (harness.plugin.record), ini keys only.
    Option(
        "toolstream_match_on", ini_type="args", ini_default=[],
        ini=f"what the toolstream fixture matches on: {', '.join(MATCH_NAMES)}, body.<field>",
    ),
    Option(
        "toolstream_ignore_fields", ini_type="args", ini_default=[],
        ini="request fields matching ignores: url.port, body.user, ...",
    ),
    Option(
        "toolstream_redact_headers", ini_type="args", ini_default=[],
        ini="headers redacted besides the defaults",
    ),
    Option(
        "toolstream_redact_body", ini_type="args", ini_default=[],
        ini="JSON body paths redacted (a.b, a[*].b)",
    ),
    Option(
        "toolstream_record_timing", ini_type="bool", ini_default=False,
        ini="keep each read's offset_ms when recording",
    ),
    # Programs run per case (harness.plugin.client turns them into client:CMD accumulators).
    Option(
        "toolstream_client", action="append", default=None, metavar="CMD",
        help="run this program once per matrix case against the replay server and judge its follow-up "
        "request (repeatable; same as --toolstream-accumulator client:CMD)",
        ini="programs run per matrix case (client:CMD accumulators)", ini_type="args", ini_default=[],
    ),
)  # fmt: skip


def add_options(parser: pytest.Parser) -> None:
    """Register every `--toolstream-*` option and `toolstream_*` ini key of `OPTIONS`."""
    group = parser.getgroup("toolstream", "toolstream-harness: record, replay and check tool-call streams")
    for option in OPTIONS:
        if option.help is not None:
            group.addoption(option.option, **option.option_kwargs())
    for option in OPTIONS:
        if option.ini is not None:
            parser.addini(option.name, option.ini, type=option.ini_type, default=option.ini_default)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Settings:
    """The session-wide settings after command line > ini. `record_mode_given`: on the command line."""

    record_mode: RecordMode | None = None
    record_mode_given: bool = False
    cassette_dir: Path | None = None
    accumulators: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    dialects: tuple[str, ...] = ()
    seeds: int | None = None
    compare: tuple[str, str] | None = None
    # A gateway judged as a translator: (CMD_OR_URL, from dialect, to dialect, model or None).
    gateway: tuple[str, str, str, str | None] | None = None
    json: Path | None = None
    html: Path | None = None
    strict: bool = False
    ci: bool = False
    retarget: bool = True  # served cases move onto the tools the request offers (the ini's, or the option's)
    retarget_given: bool = False  # --toolstream-[no-]retarget given: it beats a marker's
    only_matrix: bool = False  # the generated items alone
    baseline: bool = False  # served and matrix cases judged against their syrupy baseline

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read options and ini keys; a bad value raises `UsageError` naming the option."""
        root = Path(config.rootpath)

        def option(name: str) -> Any:
            return config.getoption(name, default=None)

        def ini(name: str) -> Any:
            value = config.getini(name)
            return value if value not in ("", None, []) else None

        def path(name: str) -> Path | None:
            given = option(name)
            if given is not None:
                return Path(given).resolve()
            from_ini = ini(name)
            return (root / str(from_ini)).resolve() if from_ini is not None else None

        cli_mode = option("toolstream_record_mode")
        ini_mode = ini("toolstream_record_mode")
        mode = cli_mode if cli_mode is not None else ini_mode
        accumulators = tuple(option("toolstream_accumulator") or ini("toolstream_accumulator") or ())
        raw_scenarios = option("toolstream_scenarios") or ini("toolstream_scenarios") or ()
        scenarios = tuple(s.strip() for item in raw_scenarios for s in str(item).split(",") if s.strip())
        raw_dialects = option("toolstream_dialect") or ini("toolstream_dialect") or ()
        chosen_dialects = tuple(d.strip() for item in raw_dialects for d in str(item).split(",") if d.strip())
        for name in chosen_dialects:
            _known_dialect(name, "--toolstream-dialect")
        seeds_raw = option("toolstream_seeds")
        if seeds_raw is None and ini("toolstream_seeds") is not None:
            seeds_raw = _integer(ini("toolstream_seeds"), "toolstream_seeds")
        if seeds_raw is not None and seeds_raw < 1:
            raise UsageError(f"--toolstream-seeds: must be at least 1, not {seeds_raw}")
        compare = option("toolstream_compare") or ini("toolstream_compare")
        if compare is not None and len(compare) != 2:
            raise UsageError(f"toolstream_compare: needs exactly two accumulator specs, got {len(compare)}")
        gateway = None
        if option("toolstream_gateway") is not None:
            hop = (option("toolstream_gateway_from"), option("toolstream_gateway_to"))
            if not all(hop):
                raise UsageError(
                    "--toolstream-gateway: needs --toolstream-gateway-from and --toolstream-gateway-to"
                )
            for where, name in zip(
                ("--toolstream-gateway-from", "--toolstream-gateway-to"), hop, strict=True
            ):
                _known_dialect(name, where)
            gateway = (str(option("toolstream_gateway")), hop[0], hop[1], option("toolstream_gateway_model"))
        return cls(
            gateway=gateway,
            record_mode=None if mode is None else RecordMode.parse(str(mode)),
            record_mode_given=cli_mode is not None,
            cassette_dir=path("toolstream_cassette_dir"),
            accumulators=accumulators,
            scenarios=scenarios,
            dialects=chosen_dialects,
            seeds=seeds_raw,
            compare=None if compare is None else (str(compare[0]), str(compare[1])),
            json=path("toolstream_json"),
            html=path("toolstream_html"),
            strict=bool(option("toolstream_strict") or config.getini("toolstream_strict")),
            ci=bool(os.environ.get("CI")),
            retarget=_flag(option("toolstream_retarget"), config.getini("toolstream_retarget")),
            retarget_given=option("toolstream_retarget") is not None,
            only_matrix=bool(option("toolstream_only_matrix")),
            baseline=_flag(option("toolstream_baseline"), config.getini("toolstream_baseline")),
        )

    def record_mode_for(self, marked: RecordMode | None) -> tuple[RecordMode, str | None]:
        """The mode a test records in (command line > marker > ini > none), and a note when CI
        turned recording off."""
        if self.record_mode_given and self.record_mode is not None:
            return self.record_mode, None
        chosen = marked or self.record_mode or RecordMode.NONE
        if self.ci and chosen is not RecordMode.NONE:
            return RecordMode.NONE, (
                f"CI is set: record mode {chosen} replaced by none (nothing is recorded on CI unless "
                "--toolstream-record-mode is given on the command line)"
            )
        return chosen, None

    @property
    def runs_matrix(self) -> bool:
        """True when the plugin generates matrix items of its own."""
        return bool(self.accumulators) or self.compare is not None or self.gateway is not None


def check_option_names(args: Sequence[str], parser: pytest.Parser) -> None:
    """A misspelt `--toolstream-*` option is a usage error naming the closest one (pytest's own
    message only says it is unrecognized)."""
    group = parser.getgroup("toolstream")
    known = [name for option in group.options for name in option.names() if name.startswith("--")]
    for arg in args:
        if arg == "--":
            return
        name = arg.split("=", 1)[0]
        if name.startswith("--toolstream") and name not in known:
            hint = did_you_mean(name, known) or f"; known: {', '.join(known)}"
            raise UsageError(f"unknown option {name}{hint}")


def check_ini_keys(config: pytest.Config) -> None:
    """A misspelt `toolstream_*` ini key is a usage error naming the closest one (pytest itself
    only warns about an unknown key, and the setting silently does nothing)."""
    unknown = getattr(config, "_get_unknown_ini_keys", None)  # private, so looked up with care
    if not callable(unknown):
        return
    known = [name for name in config._parser._inidict if name.startswith("toolstream_")]
    for key in sorted(unknown()):
        if key.startswith("toolstream"):
            hint = did_you_mean(key, known) or f"; known: {', '.join(sorted(known))}"
            raise UsageError(f"ini key {key!r} is not a toolstream setting{hint}")


def _known_dialect(name: str, where: str) -> None:
    from harness.wire import dialects

    known = dialects.names()
    if name not in known:
        hint = did_you_mean(name, known) or f"; known: {', '.join(known)}"
        raise UsageError(f"{where}: unknown dialect {name!r}{hint}")


def _flag(given: bool | None, ini: Any) -> bool:
    """A yes/no setting: the command line's when given, else the ini's."""
    return bool(ini) if given is None else given


def _integer(value: Any, name: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise UsageError(f"{name}: must be a whole number, not {value!r}") from None


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str | os.PathLike):
        return (os.fspath(value),)
    if isinstance(value, Sequence) and all(isinstance(v, str | os.PathLike) for v in value):
        return tuple(os.fspath(v) for v in value)
    raise UsageError(f"{where}: {name}= must be a string or a list of strings, not {value!r}")


def _from_kwargs(cls: type[Any], kwargs: Mapping[str, Any], where: str) -> dict[str, Any]:
    known = [f.name for f in fields(cls)]
    for key in kwargs:
        if key not in known:
            hint = did_you_mean(key, known) or f"; known: {', '.join(known)}"
            raise UsageError(f"{where}: unknown argument {key!r}{hint}")
    return dict(kwargs)


@dataclass(frozen=True)
class RecordOptions:
    """`@pytest.mark.toolstream(...)`: which cassette a test uses and how it records."""

    cassette: str | None = None
    record_mode: RecordMode | None = None
    match_on: tuple[str, ...] = MATCH_FIELDS
    ignore_fields: tuple[str, ...] = ()
    redact_headers: tuple[str, ...] = ()
    redact_body: tuple[str, ...] = ()
    record_timing: bool = False

    @classmethod
    def from_marker(cls, kwargs: Mapping[str, Any], where: str = "@pytest.mark.toolstream") -> RecordOptions:
        """Options from marker keyword arguments; an unknown or ill-typed one raises `UsageError`."""
        given = _from_kwargs(cls, kwargs, where)
        out: dict[str, Any] = {}
        if given.get("cassette") is not None:
            out["cassette"] = os.fspath(given["cassette"])
        if given.get("record_mode") is not None:
            out["record_mode"] = RecordMode.parse(given["record_mode"])
        for name in ("match_on", "ignore_fields", "redact_headers", "redact_body"):
            if given.get(name) is not None:
                out[name] = _strings(given[name], name, where)
        timing = given.get("record_timing")
        if timing is not None:
            if not isinstance(timing, bool):
                raise UsageError(f"{where}: record_timing= must be True or False, not {timing!r}")
            out["record_timing"] = timing
        from harness.transports.matching import Matcher

        try:  # an unknown match_on or ignore_fields name fails here, naming where it was given
            Matcher(out.get("match_on", MATCH_FIELDS), out.get("ignore_fields", ()))
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        return cls(**out)

    def redaction(self) -> Redaction:
        """The default redaction plus this test's headers and body paths."""
        from harness.transports.redaction import Redaction

        return Redaction.DEFAULT.plus(headers=self.redact_headers, body_paths=self.redact_body)


@dataclass(frozen=True)
class MatrixOptions:
    """`@pytest.mark.toolstream_matrix(...)`: which cases a `toolstream_case` test runs over."""

    cassettes: tuple[str, ...] | None = None
    scenarios: tuple[str, ...] | None = None
    dialects: tuple[str, ...] | None = None
    seeds: int | None = None
    # A served case's retargeting: True / False, or {recorded name: offered tool} (then on).
    retarget: bool | Mapping[str, str] | None = None
    baseline: bool | None = None  # the case's verdict judged against its syrupy baseline

    @classmethod
    def from_marker(
        cls, kwargs: Mapping[str, Any], where: str = "@pytest.mark.toolstream_matrix"
    ) -> MatrixOptions:
        """Options from marker keyword arguments; an unknown or ill-typed one raises `UsageError`."""
        given = _from_kwargs(cls, kwargs, where)
        out: dict[str, Any] = {}
        for name in ("cassettes", "scenarios", "dialects"):
            if given.get(name) is not None:
                out[name] = _strings(given[name], name, where)
        for dialect in out.get("dialects", ()):
            _known_dialect(dialect, f"{where}: dialects=")
        seeds = given.get("seeds")
        if seeds is not None:
            if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
                raise UsageError(f"{where}: seeds= must be a positive whole number, not {seeds!r}")
            out["seeds"] = seeds
        retarget = given.get("retarget")
        if retarget is not None:
            valid = isinstance(retarget, bool) or (
                isinstance(retarget, Mapping)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in retarget.items())
            )
            if not valid:
                raise UsageError(
                    f"{where}: retarget= must be True, False or a dict of recorded name to tool name, "
                    f"not {retarget!r}"
                )
            out["retarget"] = retarget if isinstance(retarget, bool) else dict(retarget)
        baseline = given.get("baseline")
        if baseline is not None:
            if not isinstance(baseline, bool):
                raise UsageError(f"{where}: baseline= must be True or False, not {baseline!r}")
            out["baseline"] = baseline
        return cls(**out)

    def retargeting(self, settings: Settings) -> tuple[bool, dict[str, str]]:
        """Whether a served case is retargeted (command line > marker > ini), and the mapping."""
        mapping = dict(self.retarget) if isinstance(self.retarget, Mapping) else {}
        if settings.retarget_given or self.retarget is None:
            return settings.retarget, mapping
        return self.retarget is not False, mapping


def file_safe(name: str) -> str:
    """`name` as a file name: unsafe characters become `-`; a long name is cut and hashed."""
    safe = _UNSAFE.sub("-", name).strip("-.") or "test"
    if len(safe) <= _LONGEST_NAME:
        return safe
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return f"{safe[: _LONGEST_NAME - 13]}-{digest}"


def cassette_path(test_file: Path, test_name: str, settings: Settings, options: RecordOptions) -> Path:
    """`<cassette dir>/<module>/<test name>.toolstream.yaml`, or the marker's `cassette=` (relative
    to the dir)."""
    base = settings.cassette_dir or test_file.parent / DEFAULT_CASSETTE_DIR
    if options.cassette is not None:
        given = Path(options.cassette)
        return given if given.is_absolute() else base / given
    return base / test_file.stem / f"{file_safe(test_name)}{CASSETTE_SUFFIX}"


def pytest_recording_path(path: Path) -> Path | None:
    """Where pytest-recording keeps the cassette of the test whose toolstream cassette is `path`:
    `<test name>.yaml` beside it."""
    if not path.name.endswith(CASSETTE_SUFFIX):
        return None
    return path.with_name(path.name[: -len(CASSETTE_SUFFIX)] + ".yaml")
