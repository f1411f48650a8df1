"""The KDC launcher with the real MIT Kerberos programs from Debian's krb5-kdc and krb5-user."""

from __future__ import annotations

import os
import re
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ports import free_port
from qjm.cluster import kdc as kdc_module
from qjm.cluster.kdc import Kdc, KdcError
from qjm.cluster.process import pid_alive

SYSTEM_KDC_DIRS = (Path("/etc/krb5kdc"), Path("/var/lib/krb5kdc"))


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kdc]:
    """One KDC (realm QJM.TEST, an auto-picked port) for the module's tests."""
    with Kdc(tmp_path_factory.mktemp("kdc")) as k:
        yield k


@pytest.fixture
def make_kdc(tmp_path: Path) -> Iterator[Callable[..., Kdc]]:
    """A factory of KDCs under tmp_path/kdc; each is stopped when the test ends, passed or not."""
    made: list[Kdc] = []

    def make(**kwargs: Any) -> Kdc:
        made.append(Kdc(tmp_path / "kdc", **kwargs))
        return made[-1]

    yield make
    for k in made:
        k.stop()


def connect_refused(host: str, port: int) -> bool:
    """True when a TCP connect to host:port is refused."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return False
    except ConnectionRefusedError:
        return True


def snapshot(dirs: tuple[Path, ...]) -> dict[str, tuple[int, int]]:
    """Every file below dirs with its size and mtime, to show that nothing was written there."""
    found: dict[str, tuple[int, int]] = {}
    for d in dirs:
        if d.exists():
            found[str(d)] = (0, d.stat().st_mtime_ns)
            for p in d.rglob("*"):
                st = p.stat()
                found[str(p)] = (st.st_size, st.st_mtime_ns)
    return found


def test_kdc_starts_and_listens_on_tcp(kdc: Kdc) -> None:
    pid = kdc.pid
    assert pid is not None and pid_alive(pid)
    assert kdc.address == f"127.0.0.1:{kdc.port}" and kdc.port > 0
    with socket.create_connection((kdc.host, kdc.port), timeout=2):
        pass
    krb5_conf = kdc.krb5_conf.read_text()
    assert f"kdc = {kdc.address}" in krb5_conf
    for line in ("default_realm = QJM.TEST", "udp_preference_limit = 1", "rdns = false"):
        assert line in krb5_conf
    kdc_conf = kdc.kdc_conf.read_text()
    assert f"kdc_tcp_ports = {kdc.port}" in kdc_conf
    assert f"kdc_tcp_listen = {kdc.address}" in kdc_conf
    assert "supported_enctypes = aes256-cts-hmac-sha1-96:normal" in kdc_conf
    assert kdc.stash.is_file() and kdc.database.is_file()
    assert "commencing operation" in kdc.log.read_text()  # the KDC's own log reaches the file


def test_keytab_principal_kinits_into_a_file_ccache(kdc: Kdc, tmp_path: Path) -> None:
    keytab = kdc.add_principal("alice")
    assert keytab == kdc.directory / "keytabs" / "alice.keytab"
    assert stat.S_IMODE(keytab.stat().st_mode) == 0o600
    ccache = tmp_path / "alice.cc"
    assert not kdc.klist_ok(ccache)
    kdc.kinit("alice", keytab, ccache)
    assert kdc.klist_ok(ccache)
    assert "alice@QJM.TEST" in kdc.log.read_text()  # the AS exchange went to this KDC


def test_service_principal_and_explicit_keytab(kdc: Kdc, tmp_path: Path) -> None:
    keytab = kdc.add_principal("nn/localhost@QJM.TEST", tmp_path / "sub" / "nn.keytab")
    assert keytab == tmp_path / "sub" / "nn.keytab"
    assert stat.S_IMODE(keytab.stat().st_mode) == 0o600
    default = kdc.add_principal("jn/localhost")
    assert default.name == "jn_localhost.keytab"
    # Exporting again (into the same keytab) keeps the key: the keytab made first still works.
    kdc.add_principal("dn/localhost", keytab)
    for name in ("nn/localhost", "dn/localhost@QJM.TEST"):
        ccache = tmp_path / f"{name.split('/')[0]}.cc"
        kdc.kinit(name, keytab, ccache)
        assert kdc.klist_ok(ccache)


def test_wrong_keytab_fails_naming_the_principal(kdc: Kdc, tmp_path: Path) -> None:
    other = kdc.add_principal("carol")
    kdc.add_principal("dave")
    ccache = tmp_path / "dave.cc"
    with pytest.raises(KdcError, match=r"dave@QJM\.TEST") as err:
        kdc.kinit("dave", other, ccache)
    assert "\n" not in str(err.value)
    assert not kdc.klist_ok(ccache)


def test_password_principal_kinits_with_its_password(kdc: Kdc, tmp_path: Path) -> None:
    password = 'two words "and quotes"'
    assert kdc.add_password_principal("erin", password) == "erin@QJM.TEST"
    ccache = tmp_path / "erin.cc"
    kdc.kinit_password("erin", password, ccache)
    assert kdc.klist_ok(ccache)
    with pytest.raises(KdcError, match="Password incorrect"):
        kdc.kinit_password("erin", "wrong", tmp_path / "wrong.cc")


def test_kadmin_failures_raise_one_line_errors(kdc: Kdc) -> None:
    kdc.add_principal("frank")
    # kadmin.local -q exits 0 when the query fails; the launcher reads its output.
    with pytest.raises(KdcError, match="already exists") as err:
        kdc.add_principal("frank")
    assert "\n" not in str(err.value) and "addprinc -randkey frank@QJM.TEST" in str(err.value)
    with pytest.raises(KdcError, match="realm QJM.TEST only"):
        kdc.add_principal("frank@OTHER.TEST")
    with pytest.raises(KdcError, match="Kerberos principal"):
        kdc.add_principal("bad name; delprinc frank")
    with pytest.raises(KdcError, match="one line"):
        kdc.add_password_principal("grace", "two\nlines")


def test_env_and_java_options_name_our_krb5_conf(kdc: Kdc) -> None:
    env = kdc.env()
    assert env["KRB5_CONFIG"] == str(kdc.krb5_conf)
    assert Path(env["KRB5RCACHEDIR"]).is_relative_to(kdc.directory)
    assert kdc.java_options() == [
        f"-Djava.security.krb5.conf={kdc.krb5_conf}",
        "-Dsun.security.krb5.disableReferrals=true",
    ]


def test_files_stay_in_the_directory_and_stop_closes_the_port(
    tmp_path: Path, make_kdc: Callable[..., Kdc]
) -> None:
    before = snapshot(SYSTEM_KDC_DIRS)
    k = make_kdc(realm="OTHER.TEST")
    with k:
        keytab = k.add_principal("hdfs/localhost")
        k.kinit("hdfs/localhost", keytab, tmp_path / "cc")
        assert k.klist_ok(tmp_path / "cc")
        pid = k.pid
        assert pid is not None
    assert k.pid is None and not pid_alive(pid)
    assert connect_refused(k.host, k.port)
    k.stop()  # idempotent
    assert snapshot(SYSTEM_KDC_DIRS) == before
    for conf in (k.krb5_conf, k.kdc_conf):
        for path in re.findall(r"(?:= |FILE:)(/\S+)", conf.read_text()):
            assert Path(path).is_relative_to(k.directory), (conf, path)
    # A restart keeps its port and its principals.
    port = k.port
    with k:
        assert k.port == port
        k.kinit("hdfs/localhost", keytab, tmp_path / "cc2")
    assert connect_refused(k.host, port)


def test_an_explicit_port_in_use_is_refused(make_kdc: Callable[..., Kdc]) -> None:
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        with pytest.raises(KdcError, match=f"port {port} on 127.0.0.1 is taken"):
            make_kdc(port=port).start()


def test_a_picked_port_taken_meanwhile_is_picked_again(
    make_kdc: Callable[..., Kdc], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, spare = free_port(), free_port()
    picks = iter([busy, spare])
    monkeypatch.setattr(kdc_module, "free_port", lambda host: next(picks))
    with socket.socket() as s:
        s.bind(("127.0.0.1", busy))
        s.listen()
        with make_kdc() as k:
            assert k.port == spare
            assert f"kdc = 127.0.0.1:{spare}" in k.krb5_conf.read_text()


def test_a_kdc_that_exits_names_its_log(
    make_kdc: Callable[..., Kdc], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = free_port()
    monkeypatch.setattr(kdc_module, "free_port", lambda host: busy)
    with socket.socket() as s:
        s.bind(("127.0.0.1", busy))
        s.listen()
        k = make_kdc()
        with pytest.raises(
            KdcError,
            match=r"exited with code 1 before it served; the end of .*kdc\.log:\n(.|\n)*in use",
        ):
            k.start()
    assert k.process is None


def test_a_failing_kdb5_util_raises_its_stderr(make_kdc: Callable[..., Kdc]) -> None:
    k = make_kdc()
    k.start()
    k.stop()
    k.stash.unlink()  # start() creates the database again, over the existing one
    with pytest.raises(KdcError, match=r"kdb5_util create -s -r QJM.TEST -P \(random\) failed"):
        k.start()
    assert k.pid is None
    assert os.listdir(k.database.parent)  # the old database is left alone
