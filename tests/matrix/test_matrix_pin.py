"""The bundled matrix pinned: every case id with its expected outcome, and the bytes every case
sends, hashed as they were before the case-building work was made lazy and copy-on-write
(issue 12), and every case's class (issue 30: a class changes only on purpose). A change to a
scenario, a cassette or a mutation's meaning changes these on purpose:
recompute them with `python tests/matrix/test_matrix_pin.py` and say why in the commit.

Each is checked with no built-case store (every case built; openai-chat only), and warm: from a
store (`harness.matrix.casecache`) filled by a run that never read the bytes (each case's bytes
built again when read), and from one filled by a run that read them (the bytes stored)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPENAI_CHAT = str(ROOT / "cassettes" / "openai-chat")

# (selection, digest of (id, expected) pairs, digest of every case's response, digest of (id,
# class) pairs)
PINNED = {
    "openai-chat": (
        "c9cc3b9e435d17a59ec4e59e117e7a639209ac1b38efb28f4de171528ce8974e",
        "c34b149629a3dd7371e023590d869c9604736b258e36e757a7ba22eb6406828d",
        "386585ea5b1fc76fc6ec8538d6db56a7a4ff193a403978941db0619633d37a6b",
    ),
    "all": (
        "9dfe4150b6557c3d5d8f4d13765fed5a49c0a2780a2b27ccdd8d1d4c0f1c4c46",
        "cd3bc3bbe0dc017be0d6e1e1ad200b23e0aa1f85c3c95bbdaa25e7adb596aceb",
        "c4b9a33638a2e33dfbbf6cb2470fa8c4090821396883a035cd9f9995cf13ea56",
    ),
}


def digests(cassettes: tuple[str, ...], store: Any = None) -> tuple[str, str, str]:
    from harness import Selection
    from harness.matrix.selection import Matrix
    from harness.oracle.expectation import classify

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
    from harness.matrix.casecache import CaseStore
    from harness.matrix.selection import Matrix

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
