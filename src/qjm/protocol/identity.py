"""Who a request is for: the journal id, checked the same way everywhere.

The namespace half of a request's identity is compared in qjm.protocol.namespace.
"""

from __future__ import annotations

import re

from qjm.protocol.errors import InvalidRequestError

_JID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
# Names the node or a journal's storage uses for itself: a journal called so would share
# (or be) the node's lock file or a storage directory (journalnode/storage.py's names).
RESERVED_NAMES = frozenset({"in_use.lock", "current", "edits.sync", "lost+found"})


def check_journal_id(jid: str) -> str:
    """Return jid if it is a valid journal id, else raise naming it."""
    if not jid:
        raise InvalidRequestError("request has no journal id")
    if not _JID.match(jid):
        raise InvalidRequestError(
            f"invalid journal id {jid!r}: use 1-128 letters, digits, '_', '-' or '.', "
            "not starting with '.' or '-'"
        )
    if jid in RESERVED_NAMES:
        raise InvalidRequestError(
            f"invalid journal id {jid!r}: it is a name the JournalNode's storage uses "
            f"itself ({', '.join(sorted(RESERVED_NAMES))})"
        )
    return jid
