"""How an error reads in a log line or a status (qjm.errors.describe_error)."""

from __future__ import annotations

import pytest

from qjm.errors import ConfigError, describe_error


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ConfigError("bad port 'x'"), "bad port 'x'"),  # ours: the message says it all
        (OSError(28, "No space left on device"), "OSError: [Errno 28] No space left on device"),
        (ValueError("not a number"), "ValueError: not a number"),
        (TimeoutError(), "TimeoutError: "),
    ],
)
def test_describe_error(exc: BaseException, text: str) -> None:
    assert describe_error(exc) == text
