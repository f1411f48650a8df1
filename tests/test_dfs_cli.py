"""`qjm dfs`: hadoop fs's verbs and output, failing over from a standby to the active."""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator

import pytest

from conftest import run_qjm
from nn_fakes import FakeNameNode, ServedInThread
from qjm.cli.dfs import ls_lines, stat_line
from qjm.namenode.types import Caller, FileStatus


@pytest.fixture
def served() -> Iterator[ServedInThread]:
    # the standby first: every command has to fail over to find the active
    with ServedInThread(FakeNameNode(standby=True), FakeNameNode()) as s:
        yield s


def dfs(served: ServedInThread, *args: str) -> tuple[int, str, str]:
    r = run_qjm("dfs", "--namenodes", ",".join(served.addresses), "--timeout", "5", *args)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout, r.stderr


LS_LINE = re.compile(
    r"^([d-][rwx-]{9}) +(-|\d+) (\S+) +(\S+) +(\d+) \d{4}-\d\d-\d\d \d\d:\d\d (\S+)$"
)


@pytest.mark.slow
def test_dfs_verbs_against_a_standby_and_an_active(served: ServedInThread) -> None:
    me = getpass.getuser()
    active = served.nodes[1]
    assert dfs(served, "mkdir", "-p", "/a/b/c", "/a/d") == (0, "", "")
    rc, _, err = dfs(served, "mkdir", "/a", "/x/y")
    assert rc == 1
    assert err.splitlines() == [
        "mkdir: `/a': File exists",
        "mkdir: `/x/y': No such file or directory",
    ]
    assert dfs(served, "touch", "/a/f", "/a/g")[0] == 0
    assert dfs(served, "mv", "/a/g", "/a/d")[0] == 0  # into the directory
    assert dfs(served, "mv", "/a/f", "/a/f2")[0] == 0

    rc, out, _ = dfs(served, "ls", "-R", "/a")
    assert rc == 0
    rows = [LS_LINE.match(line) for line in out.splitlines()]
    assert all(rows), out
    got = [(m[1], m[2], m[3], m[6]) for m in rows if m]
    assert got == [
        ("drwxr-xr-x", "-", me, "/a/b"),
        ("drwxr-xr-x", "-", me, "/a/b/c"),
        ("drwxr-xr-x", "-", me, "/a/d"),
        ("-rw-r--r--", "3", me, "/a/d/g"),
        ("-rw-r--r--", "3", me, "/a/f2"),
    ]
    rc, out, _ = dfs(served, "ls", "/a")
    assert out.splitlines()[0] == "Found 3 items"

    assert dfs(served, "chmod", "-R", "700", "/a/b")[0] == 0
    assert dfs(served, "chown", f"{me}:staff", "/a/f2")[0] == 0
    assert dfs(served, "setrep", "2", "/a") == (
        0,
        "Replication 2 set: /a/d/g\nReplication 2 set: /a/f2\n",
        "",
    )
    rc, out, _ = dfs(served, "stat", "%n %F %r %u %g %a", "/a/f2", "/a/b/c")
    assert out.splitlines() == [
        f"f2 regular file 2 {me} staff 644",
        f"c directory 0 {me} supergroup 700",
    ]
    rc, out, _ = dfs(served, "count", "-q", "/a")
    assert out.split() == ["none", "inf", "none", "inf", "4", "2", "0", "/a"]
    rc, out, _ = dfs(served, "du", "/a")
    assert [line.split() for line in out.splitlines()] == [
        ["0", "0", "/a/b"],
        ["0", "0", "/a/d"],
        ["0", "0", "/a/f2"],
    ]
    rc, _, err = dfs(served, "rm", "/a/b")
    assert (rc, err) == (1, "rm: `/a/b': Is a directory\n")
    assert dfs(served, "rm", "-r", "/a/b", "/a/f2") == (0, "Deleted /a/b\nDeleted /a/f2\n", "")
    rc, _, err = dfs(served, "rm", "/nope")
    assert (rc, err) == (1, "rm: `/nope': No such file or directory\n")
    assert dfs(served, "rm", "-f", "/nope")[0] == 0
    assert active.ns.stat("/a/d/g", Caller(me, (), True)) is not None
    assert served.nodes[0].calls  # the standby was asked (and refused) first


@pytest.mark.slow
def test_dfs_refusals_are_one_line_each(served: ServedInThread) -> None:
    active = served.nodes[1]
    active.superuser = "someone-else"  # the caller is no superuser now
    rc, _, err = dfs(served, "--user", "bob", "mkdir", "/bob")
    assert rc == 1 and err.startswith("mkdir: Permission denied: user=bob, access=WRITE")
    assert len(err.splitlines()) == 1
    rc, _, err = dfs(served, "chmod", "9z", "/")
    assert rc == 2 and "octal" in err
    served.nodes[1].standby = True
    rc, _, err = dfs(served, "ls", "/")
    assert rc == 1 and "no active NameNode" in err and len(err.splitlines()) == 1


def status(name: str, *, is_dir: bool, **kw: int) -> FileStatus:
    fields = dict(length=0, permission=0o755, mtime=0, replication=0 if is_dir else 3)
    fields.update(kw)
    return FileStatus(
        name=name,
        is_dir=is_dir,
        length=fields["length"],
        permission=fields["permission"],
        owner="root",
        group="supergroup",
        mtime=fields["mtime"],
        atime=0,
        replication=fields["replication"],
        block_size=0 if is_dir else 1 << 27,
        file_id=16386,
        children=0 if is_dir else -1,
    )


def test_ls_and_stat_formats_match_hadoop_fs() -> None:
    # columns as FsShell's Ls prints them: replication at least 3 wide, size at least 10
    alone = ls_lines([("/a", status("a", is_dir=True))])
    assert alone[0].startswith("drwxr-xr-x   - root supergroup          0 ")
    lines = ls_lines(
        [
            ("/a", status("a", is_dir=True)),
            ("/a/f", status("f", is_dir=False, length=12345678901, permission=0o1777)),
        ]
    )
    assert lines[0].startswith("drwxr-xr-x   - root supergroup           0 ")  # size 11 wide
    assert lines[1].startswith("-rwxrwxrwt   3 root supergroup 12345678901 ")
    s = status("f", is_dir=False, mtime=86_400_000)
    assert (
        stat_line("%y|%Y|%o|%A|%%", "/f", s) == "1970-01-02 00:00:00|86400000|134217728|rwxr-xr-x|%"
    )
