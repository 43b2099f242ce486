"""Two recorders, one cassette: two processes (or two xdist workers) recording with `new_episodes`
both keep their interactions; each loaded the cassette before the other saved, so a plain
read-modify-write would lose one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cassettes import format as cassettes
from tests._pytester_support import plugin_args, prepare

REPO = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]

# argv: cassette, this writer's name, the barrier folder. Loads first, waits for the other, records 3.
CHILD = """
import sys, time
from pathlib import Path
import httpx
from harness.transports.recording import RecordingTransport

path, name, barrier = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def handler(request):
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: ok\\n\\n")

transport = RecordingTransport(httpx.MockTransport(handler), path=path, mode="new_episodes")
(barrier / name).touch()
deadline = time.monotonic() + 30
while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.01)
with httpx.Client(transport=transport) as client:
    for n in range(3):
        client.post("https://api.example.test/v1/x", json={"writer": name, "n": n})
"""


def test_two_processes_recording_into_one_cassette_keep_every_interaction(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(path), name, str(barrier)], cwd=REPO)
        for name in ("a", "b")
    ]
    assert [child.wait(timeout=60) for child in children] == [0, 0]
    bodies = sorted(
        (i.request.body["writer"], i.request.body["n"]) for i in cassettes.load(path).interactions
    )
    assert bodies == [(w, n) for w in ("a", "b") for n in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["barrier", "shared.yaml"]  # no lock or temp left


def test_a_recording_keeps_interactions_another_writer_saved_meanwhile(tmp_path: Path) -> None:
    import httpx

    from harness.transports.recording import RecordingTransport

    path = tmp_path / "c.yaml"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"data: ok\n\n")

    first = RecordingTransport(httpx.MockTransport(handler), path=path, mode="rewrite")
    second = RecordingTransport(httpx.MockTransport(handler), path=path, mode="rewrite")
    for transport, name in ((first, "first"), (second, "second"), (first, "third")):
        with httpx.Client(transport=transport) as client:
            client.post("https://h/x", json={"name": name})
    names = [item.request.body["name"] for item in cassettes.load(path).interactions]
    assert names == ["first", "second", "third"]


TESTS = """
import time
from pathlib import Path

import pytest

from harness.record.fake_provider import FakeProvider, Script, Write

BARRIER = Path(__file__).parent / "barrier"


@pytest.fixture
def base_url():
    with FakeProvider() as fake:
        slow = Script([Write(b"data: 1\\n\\n"), Write(b"data: 2\\n\\n", delay=0.5)])
        fake.route("POST", "/v1/x", slow)
        yield fake.url


def wait_for_the_other(name):
    BARRIER.mkdir(exist_ok=True)
    (BARRIER / name).touch()
    deadline = time.monotonic() + 30
    while len(list(BARRIER.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.toolstream(cassette="shared.yaml", match_on=["method", "body"])
@pytest.mark.parametrize("worker", ["a", "b"])
def test_record(toolstream, base_url, worker):
    wait_for_the_other(worker)
    client = toolstream.httpx_client(base_url=base_url)
    assert client.post("/v1/x", json={"worker": worker}).status_code == 200
"""


@pytest.mark.slow
def test_two_xdist_workers_recording_one_cassette_keep_both(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    pytester.makepyfile(test_shared=TESTS)
    args = (*plugin_args(), "--toolstream-record-mode", "new_episodes", "-n", "2", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2)
    saved = cassettes.load(pytester.path / "cassettes" / "shared.yaml")
    assert sorted(item.request.body["worker"] for item in saved.interactions) == ["a", "b"]
