"""Gemini `streamGenerateContent?alt=sse`, strictly (ai.google.dev/api/generate-content).

- Each event is a whole `GenerateContentResponse`; the outcome is the candidate with `index` 0
  (a missing index is 0).
- A `functionCall` part with a `name` is a whole call (`name`, `args`, `id` when sent): it is final
  as it arrives. Gemini 3 streamed arguments: a named part with `willContinue: true` opens a call,
  `partialArgs` (`jsonPath`, a typed value, `willContinue` on a string to be continued) fill it,
  and the part without `willContinue` closes it: final there.
- Non-thought `text` parts are the text; `thought: true` parts are reasoning.
- The chunk with `finishReason` is the last. STOP and MAX_TOKENS end the turn normally; the other
  documented reasons (SAFETY, MALFORMED_FUNCTION_CALL ...) and an `{"error": ...}` object or
  `promptFeedback.blockReason` are errors. A stream that ends before a finishReason is cut.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

from harness import Event, EventAccumulator, Outcome, State, ToolCall
from harness.wire.dialects import get as get_dialect

_NORMAL = {"STOP", "MAX_TOKENS"}
_DOCUMENTED = get_dialect("gemini").finish_vocabulary  # the API's `FinishReason` enum
_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")
_VALUES = ("stringValue", "numberValue", "boolValue", "nullValue", "structValue", "listValue")


class StrictGemini(EventAccumulator):
    def __init__(self, dialect: str) -> None:
        self.calls: list[ToolCall] = []
        self.open: dict[str, Any] | None = None  # a streamed call not yet closed
        self.continued: set[str] = set()  # json paths whose string said willContinue
        self.text = ""
        self.finish: str | None = None
        self.error: str | None = None
        self.usage: Any = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self.finish is not None or not isinstance(payload, dict):
            return  # the chunk with the finishReason is the last
        if payload.get("error") is not None:
            self.error = self.error or json.dumps(payload["error"])
            return
        block = (payload.get("promptFeedback") or {}).get("blockReason")
        if block:
            self.error = self.error or f"prompt blocked: {block}"
        self.usage = payload.get("usageMetadata", self.usage)
        for candidate in payload.get("candidates") or []:
            if candidate.get("index", 0) != 0:
                continue
            for part in (candidate.get("content") or {}).get("parts") or []:
                self._part(part)
            if candidate.get("finishReason") is not None:
                self.finish = candidate["finishReason"]

    def _part(self, part: dict[str, Any]) -> None:
        if "text" in part and not part.get("thought"):
            self.text += part["text"]
        call = part.get("functionCall")
        if not isinstance(call, dict):
            return
        if call.get("name") and not call.get("willContinue"):
            whole = ToolCall(id=call.get("id"), name=call["name"], arguments=call.get("args") or {})
            self.calls.append(whole)
        elif call.get("name"):
            self.open = {"id": call.get("id"), "name": call["name"], "args": dict(call.get("args") or {})}
            self.continued = set()
        elif self.open is not None:
            for piece in call.get("partialArgs") or []:
                self._fill(piece)
            if not call.get("willContinue"):
                done, self.open = self.open, None
                self.calls.append(ToolCall(id=done["id"], name=done["name"], arguments=done["args"]))

    def _fill(self, piece: dict[str, Any]) -> None:
        path = piece.get("jsonPath") or "$"
        steps: list[str | int] = [name if name else int(number) for name, number in _STEP.findall(path[1:])]
        value = next((piece[key] for key in _VALUES if key in piece), None)
        target: Any = self.open["args"] if self.open else {}
        for step, after in pairwise(steps):
            fresh: Any = [] if isinstance(after, int) else {}
            if isinstance(step, int):
                target.extend([None] * (step + 1 - len(target)))
                if target[step] is None:
                    target[step] = fresh
            else:
                target.setdefault(step, fresh)
            target = target[step]
        if not steps:
            return
        last = steps[-1]
        if isinstance(last, int):
            target.extend([None] * (last + 1 - len(target)))
        if isinstance(value, str) and path in self.continued:
            value = str(target[last] or "") + value
        target[last] = value
        if isinstance(value, str) and piece.get("willContinue"):
            self.continued.add(path)
        else:
            self.continued.discard(path)

    def close(self, error: str | None) -> Outcome:
        if self.error is not None:
            state, message = State.ERROR, self.error
        elif self.finish is not None and (self.finish in _NORMAL or self.finish not in _DOCUMENTED):
            state, message = State.COMPLETE, None
        elif self.finish is not None:
            state, message = State.ERROR, f"finishReason {self.finish}"
        else:
            state, message = State.CUT, error or "the stream ended before a finishReason"
        return Outcome(
            tool_calls=tuple(self.calls),
            text=self.text,
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
        )
