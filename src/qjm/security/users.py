"""Who runs a daemon and which groups a user is in, from the OS (as Hadoop's shell groups)."""

from __future__ import annotations

import grp
import os
import pwd


def os_user() -> str:
    """The name of the OS user running this process."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def os_groups(user: str) -> tuple[str, ...]:
    """The user's groups from the OS (primary first), or none when the user is unknown here."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return ()
    names: list[str] = []
    try:
        gids = os.getgrouplist(user, entry.pw_gid)
    except OSError:
        gids = [entry.pw_gid]
    for gid in [entry.pw_gid, *gids]:
        try:
            name = grp.getgrgid(gid).gr_name
        except KeyError:
            name = str(gid)
        if name not in names:
            names.append(name)
    return tuple(names)
