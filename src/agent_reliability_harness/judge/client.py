"""A model judge over an OpenAI-compatible chat-completions API, with the standard library.

Opt-in only (``arh validate --judge live``): CI replays the judgment file and never gets here.
One request per judge input: the rubric's prompt template filled in, a system message that asks
for a JSON object of criterion scores, a confidence and a short rationale (never step-by-step
reasoning), and ``response_format`` asking for that object (``json_schema``, or
``json_object`` for servers without structured output). The verdict is worked out from the
scores by the rubric, not taken from the model.

Timeouts, connection errors, HTTP 429 and 5xx are retried with exponential backoff; on a 429 a
``Retry-After`` of seconds is honoured (capped). Any failure after the retries, and a reply that
is not the JSON object asked for, is a :class:`JudgeCallError`: the trace gets a judgment error
(ARH-JDG-003), never a crash.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any, Final, Literal

from agent_reliability_harness._json import loads
from agent_reliability_harness.errors import InputError, UsageError, excerpt
from agent_reliability_harness.judge.model import (
    RATIONALE_CHARS,
    JudgeInput,
    Judgment,
    Rubric,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "SYSTEM_PROMPT",
    "ChatJudge",
    "ClientSettings",
    "JudgeCallError",
    "parse_reply",
    "post_json",
    "render_prompt",
    "request_body",
]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
# The longest wait a Retry-After header can impose; a longer one is cut to this.
MAX_RETRY_AFTER: Final = 60.0
SYSTEM_PROMPT: Final = (
    "You grade an answer against a rubric. Reply with one JSON object and nothing else: "
    '"scores" maps each criterion id to an integer on its scale, "confidence" is your '
    'confidence in the grading from 0 to 1, and "rationale" states in at most two short '
    "sentences the facts that decided the grade. Do not write out step-by-step reasoning."
)
ResponseFormat = Literal["json_schema", "json_object"]


class JudgeCallError(Exception):
    """A live judgment that could not be made: the request failed, or the reply was unusable."""


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """Where and how to call the model: ``base_url`` (the path ``/chat/completions`` is appended),
    the ``model``, the ``api_key`` (sent as a bearer token), the ``timeout`` of each request in
    seconds, how many ``retries`` follow a failed attempt, the first ``backoff`` in seconds
    (doubled at each retry) and the ``response_format`` asked for."""

    base_url: str
    model: str
    api_key: str
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 1.0
    response_format: ResponseFormat = "json_schema"


def render_prompt(rubric: Rubric, seen: JudgeInput) -> str:
    """The rubric's prompt template with ``{task}``, ``{answer}`` and ``{criteria}`` filled in."""
    criteria = "\n".join(
        f"- {c.criterion_id} ({c.scale.low} to {c.scale.high}): {c.description}"
        for c in rubric.criteria
    )
    return rubric.prompt_template.format(
        task=seen.task if seen.task is not None else "(no task recorded)",
        answer=seen.answer if seen.answer is not None else "(no final answer)",
        criteria=criteria,
    )


def _reply_schema(rubric: Rubric) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {
                    c.criterion_id: {
                        "type": "integer",
                        "minimum": c.scale.low,
                        "maximum": c.scale.high,
                    }
                    for c in rubric.criteria
                },
                "required": [c.criterion_id for c in rubric.criteria],
                "additionalProperties": False,
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "rationale": {"type": "string", "maxLength": RATIONALE_CHARS},
        },
        "required": ["scores", "confidence", "rationale"],
        "additionalProperties": False,
    }


def request_body(rubric: Rubric, seen: JudgeInput, settings: ClientSettings) -> dict[str, Any]:
    """The JSON body of the chat-completions request for ``seen``."""
    response_format: dict[str, Any]
    if settings.response_format == "json_schema":
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": "judgment", "strict": True, "schema": _reply_schema(rubric)},
        }
    else:
        response_format = {"type": "json_object"}
    return {
        "model": settings.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_prompt(rubric, seen)},
        ],
        "response_format": response_format,
    }


def _content(body: bytes) -> str:
    try:
        reply = loads(body.decode("utf-8"))
    except (InputError, UnicodeDecodeError) as exc:
        raise JudgeCallError(f"the response body is not JSON: {exc}") from None
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise JudgeCallError("the response has no choices[0].message") from None
    if type(message) is not dict:
        raise JudgeCallError("choices[0].message is not an object")
    if message.get("refusal"):
        raise JudgeCallError(f"the model refused: {excerpt(message['refusal'])}")
    content = message.get("content")
    if type(content) is not str:
        raise JudgeCallError("choices[0].message.content is not a string")
    return content


def _in_range(value: object, low: float, high: float) -> float | None:
    """``value`` as a float when it is a JSON number (never a boolean) from ``low`` to
    ``high``, else None."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) and low <= number <= high else None


def parse_reply(rubric: Rubric, content: str) -> tuple[dict[str, float], float, str]:
    """The criterion scores, the confidence and the rationale of the model's reply ``content``;
    a :class:`JudgeCallError` saying what is wrong with a reply that is not the object asked
    for. A rationale longer than the limit is cut."""
    try:
        value = loads(content)
    except InputError as exc:
        raise JudgeCallError(f"the model's reply is not JSON: {exc}; {excerpt(content)}") from None
    if type(value) is not dict:
        raise JudgeCallError(f"the model's reply is not a JSON object: {excerpt(content)}")
    raw = value.get("scores")
    if type(raw) is not dict:
        raise JudgeCallError("the model's reply has no 'scores' object")
    scores: dict[str, float] = {}
    for criterion in rubric.criteria:
        raw_score = raw.get(criterion.criterion_id)
        low, high = criterion.scale.low, criterion.scale.high
        score = _in_range(raw_score, low, high)
        if score is None:
            raise JudgeCallError(
                f"the model's score of criterion {criterion.criterion_id!r} is "
                f"{excerpt(raw_score)}, not a number from {low} to {high}"
            )
        scores[criterion.criterion_id] = score
    raw_confidence = value.get("confidence")
    confidence = _in_range(raw_confidence, 0.0, 1.0)
    if confidence is None:
        raise JudgeCallError(
            f"the model's confidence is {excerpt(raw_confidence)}, not a number from 0 to 1"
        )
    rationale = value.get("rationale", "")
    if type(rationale) is not str:
        raise JudgeCallError("the model's rationale is not a string")
    if len(rationale) > RATIONALE_CHARS:
        rationale = rationale[: RATIONALE_CHARS - 3] + "..."
    return scores, confidence, rationale


def _retry_after(headers: Message | Mapping[str, str] | None) -> float | None:
    """The seconds of a ``Retry-After`` header given in seconds (an HTTP date is not used)."""
    if headers is None:
        return None
    text = headers.get("Retry-After")
    if text is None:
        return None
    try:
        seconds = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)


def post_json(
    url: str,
    payload: bytes,
    settings: ClientSettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    service: str = "the judge's API",
) -> bytes:
    """POST ``payload`` (JSON) to ``url`` with the bearer key, timeout, retries and backoff of
    ``settings``, and return the body of the successful response; a :class:`JudgeCallError`
    after the retries the failures allow. Timeouts, connection errors, HTTP 408, 429 and 5xx
    are retried (``Retry-After`` honoured on a 429); another HTTP error says that ``service``
    answered it. The one HTTP client of the package: the model judge and the live agent of
    ``integrations.openai_live`` both post through it. ``url`` must be http or https (the
    callers check it before)."""
    attempts = settings.retries + 1
    last = ""
    for attempt in range(attempts):
        wait = settings.backoff * 2**attempt
        request = urllib.request.Request(  # noqa: S310 - the callers check the scheme
            url,
            data=payload,
            method="POST",
            headers={
                "Authorization": f"Bearer {settings.api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(  # noqa: S310 - http or https, checked by the callers
                request, timeout=settings.timeout
            ) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} {exc.reason}"
            if exc.code not in {408, 429} and exc.code < 500:
                raise JudgeCallError(f"{service} answered {last}") from None
            if exc.code == 429:
                after = _retry_after(exc.headers)
                if after is not None:
                    wait = after
        except TimeoutError:
            last = f"no response within {settings.timeout:g} s"
        except urllib.error.URLError as exc:
            last = f"cannot reach {url}: {exc.reason}"
        except OSError as exc:  # a connection reset while the body was read
            last = f"the connection failed: {exc}"
        except (
            http.client.InvalidURL,
            ValueError,
        ) as exc:  # a URL http.client refuses, a header it cannot send
            raise JudgeCallError(f"cannot send the request to {url}: {exc}") from None
        except http.client.HTTPException as exc:  # a malformed or cut-short response
            last = f"a broken HTTP response ({type(exc).__name__}: {exc})"
        if attempt + 1 < attempts:
            sleep(wait)
    raise JudgeCallError(f"{last} (after {attempts} attempts)")


class ChatJudge:
    """Judges inputs by calling the chat-completions endpoint of ``settings``. ``sleep`` waits
    between attempts (tests pass one that records the waits)."""

    def __init__(
        self, settings: ClientSettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        if not settings.base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"the judge's base URL must start with http:// or https://, got "
                f"{excerpt(settings.base_url)}"
            )
        self.settings = settings
        self._sleep = sleep
        self._url = settings.base_url.rstrip("/") + "/chat/completions"

    def _post(self, payload: bytes) -> bytes:
        """The body of a successful response, after the retries the failures allow."""
        return post_json(self._url, payload, self.settings, sleep=self._sleep)

    def judge(
        self, rubric: Rubric, seen: JudgeInput, digest: str, trace_id: str | None = None
    ) -> Judgment:
        """The judgment of ``seen`` (whose input hash is ``digest``), or a
        :class:`JudgeCallError`."""
        body = request_body(rubric, seen, self.settings)
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        content = _content(self._post(payload))
        scores, confidence, rationale = parse_reply(rubric, content)
        return Judgment(
            rubric.rubric_id,
            rubric.version,
            self.settings.model,
            digest,
            rubric.verdict(scores),
            tuple((c.criterion_id, scores[c.criterion_id]) for c in rubric.criteria),
            confidence,
            rationale,
            trace_id,
        )
