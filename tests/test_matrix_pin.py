"""The bundled matrix pinned: every case id with its expected outcome, and the bytes every case
sends, hashed as they were before the case-building work was made lazy and copy-on-write
(issue 12), and every case's class (issue 30: a class changes only on purpose). A change to a
scenario, a cassette or a mutation's meaning changes these on purpose:
recompute them with `python tests/test_matrix_pin.py` and say why in the commit.

Each is checked with no built-case store (every case built; openai-chat only), and warm: from a
store (`harness.check.casecache`) filled by a run that never read the bytes (each case's bytes
built again when read), and from one filled by a run that read them (the bytes stored)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
OPENAI_CHAT = str(ROOT / "cassettes" / "openai-chat")

# (selection, digest of (id, expected) pairs, digest of every case's response, digest of (id,
# class) pairs)
PINNED = {
    "openai-chat": (
        "a71c389b672f9c0994a2789f5292c124253304c6c267434982d04d23e2690d99",
        "71d4a1c5095ab0ebbec403cf80dcf4bcb5467bf942767e90c8ec3c39522643b3",
        "dd943460587879dbcad8c0e450309311a065c848ef0c9406fbfcaba44d171c2c",
    ),
    "all": (
        "260efa48690f5f530138c3bde5634acf494fb77473384e2b2a5e9a76cdfd5e3f",
        "6ce47b49a371d057b4230abbf8984d18ce4658d7bfefa718dc912fcab61d00d2",
        "0d1f7e57a474af3fc7920ff566ccf1149605a15c4b5e5af191833f8119f6776e",
    ),
}


def digests(cassettes: tuple[str, ...], store: Any = None) -> tuple[str, str, str]:
    from harness import Selection
    from harness.check.expectation import classify
    from harness.check.selection import Matrix

    expected, sent, classes = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
    for case in Matrix(Selection(cassettes=cassettes), store=store).all():
        pair = json.dumps([case.id, case.expected.to_dict()], sort_keys=True, default=str)
        expected.update(pair.encode() + b"\n")
        classes.update(f"{case.id} {classify(case).case_class}\n".encode())
        response = case.response
        head = (case.id, response.status, sorted(response.headers.items()), response.complete,
                response.error, response.error_type, len(response.chunks))  # fmt: skip
        sent.update(repr(head).encode() + b"\n")
        for chunk in response.chunks:
            sent.update(len(chunk.data).to_bytes(8, "big") + chunk.data)
    return expected.hexdigest(), sent.hexdigest(), classes.hexdigest()


def _pinned(name: str, cassettes: tuple[str, ...], cache: str, tmp_path: Path) -> None:
    from harness import Selection
    from harness.check.casecache import CaseStore
    from harness.check.selection import Matrix

    if cache == "none":
        assert digests(cassettes, None) == PINNED[name]
    elif cache == "events":
        # Stored by a run that never read the bytes: read back, each case's bytes are built again.
        filled = CaseStore(tmp_path)
        assert [c.id for c in Matrix(Selection(cassettes=cassettes), store=filled).all()]
        assert filled.misses and not filled.hits
        again = CaseStore(tmp_path)
        assert digests(cassettes, again) == PINNED[name]
        assert again.hits == filled.misses and not again.misses
    else:
        # Built into an empty store (every case built, as with none), by a run that read the bytes
        # (`digests` does), then read back with the bytes kept.
        store = CaseStore(tmp_path)
        assert digests(cassettes, store) == PINNED[name]
        assert store.misses and not store.hits
        bare = CaseStore(tmp_path)
        assert digests(cassettes, bare) == PINNED[name]
        assert bare.hits == store.misses and not bare.misses


WARM = [pytest.param(cache, marks=pytest.mark.slow) for cache in ("events", "bytes")]


@pytest.mark.parametrize("cache", ["none", *WARM])
def test_openai_chat_cases_ids_expectations_and_bytes_are_pinned(cache: str, tmp_path: Path) -> None:
    _pinned("openai-chat", (OPENAI_CHAT,), cache, tmp_path)


# With no store only over openai-chat: building into an empty store ("bytes") builds every case
# the same way, and the whole matrix is not built a third time.
@pytest.mark.parametrize("cache", WARM)
def test_every_bundled_case_id_expectation_and_bytes_are_pinned(cache: str, tmp_path: Path) -> None:
    _pinned("all", (), cache, tmp_path)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps({"openai-chat": digests((OPENAI_CHAT,)), "all": digests(())}, indent=4))
