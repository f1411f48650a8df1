"""How an error reads in a log line or a status (qjm.errors.describe_error)."""

from __future__ import annotations

import pytest

from qjm.errors import ConfigError, describe_error
from qjm.ipc.errors import RemoteError, RpcConnectionError


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ConfigError("bad port 'x'"), "bad port 'x'"),  # ours: the message says it all
        (OSError(28, "No space left on device"), "No space left on device"),  # the reason
        (PermissionError(13, "Permission denied", "/data/jn"), "Permission denied: /data/jn"),
        (ConnectionRefusedError(111, "Connection refused"), "Connection refused"),
        (ValueError("not a number"), "ValueError: not a number"),  # not ours: its type first
        (KeyError(), "KeyError"),
        (TimeoutError(), "timed out"),
        (TimeoutError("The read operation timed out"), "timed out"),
        (ConfigError("two\n  lines"), "two lines"),  # one line, whatever the message
        (
            RemoteError("java.io.IOException", "disk gone", peer="h:1", method="journal"),
            "h:1 journal: java.io.IOException: disk gone",
        ),
    ],
)
def test_describe_error(exc: BaseException, text: str) -> None:
    assert describe_error(exc) == text


@pytest.mark.parametrize(
    ("exc", "kwargs", "text"),
    [
        # brief: without the peer and method that the caller already names
        (
            RemoteError("java.io.IOException", "disk gone", peer="h:1", method="journal"),
            {"brief": True},
            "java.io.IOException: disk gone",
        ),
        (RemoteError("E", "m", fatal=True, peer="h:1"), {"brief": True}, "FATAL E: m"),
        (ConfigError("bad port"), {"brief": True}, "bad port"),
        # drop_prefix: only a leading one
        (
            RpcConnectionError("h:1: connection refused"),
            {"drop_prefix": "h:1: "},
            "connection refused",
        ),
        (ConfigError("h:1 said h:1: no"), {"drop_prefix": "h:1: "}, "h:1 said h:1: no"),
        (ValueError("h:1: x"), {"drop_prefix": "h:1: "}, "ValueError: h:1: x"),
    ],
)
def test_describe_error_options(
    exc: BaseException, kwargs: dict[str, bool | str], text: str
) -> None:
    assert describe_error(exc, **kwargs) == text  # type: ignore[arg-type]
