"""Job results as JSON, checked against the queue's payload limit before anything is written.

A worker encodes each result once, when its job's task ends (`encoded_result`, called by the
`WorkerBook`): a result the queue cannot take fails that job alone. The text is carried to the
queue's completion calls as an `EncodedResult`, which they pass on without encoding it again,
and which keeps the value for the ``completed`` hooks."""

from __future__ import annotations

from typing import Any

from ._json import dumps_result


class EncodedResult(str):
    """A result's JSON text, with the ``value`` it encodes."""

    value: Any


def result_json(job_id: str, value: Any, max_payload_bytes: int) -> str:
    """``value`` as JSON: `TypeError` naming the job and the type if JSON cannot hold it,
    `ValueError` naming the job and both sizes if it is over ``max_payload_bytes``, or if it
    holds a lone surrogate (text UTF-8 cannot encode)."""
    if value is None:
        return "null"
    text = dumps_result(job_id, value)
    if text.isascii():  # (most results: no encoding to count or check)
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            # A lone surrogate: no backend can store it (a batch's call would refuse all).
            raise ValueError(
                f"return value of job {job_id!r} holds a lone surrogate, which is not valid "
                "Unicode text"
            ) from None
    if size > max_payload_bytes:
        raise ValueError(
            f"return value of job {job_id!r} is {size} bytes of JSON, over the queue's "
            f"max_payload_bytes ({max_payload_bytes})"
        )
    return text


def encoded_result(job_id: str, value: Any, max_payload_bytes: int) -> EncodedResult:
    """`result_json` of ``value``, kept with it."""
    encoded = EncodedResult(result_json(job_id, value, max_payload_bytes))
    encoded.value = value
    return encoded


def result_value(item: Any) -> Any:
    """The value of a completion item's result (an `EncodedResult`, or None)."""
    return item.value if isinstance(item, EncodedResult) else item
