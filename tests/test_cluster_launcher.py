"""`qjm cluster up|status|down` with real JournalNode processes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from conftest import read_json, run_qjm
from ports import free_port_block
from qjm.cluster.process import pid_alive
from qjm.config import load_config


@pytest.mark.slow
def test_cluster_up_status_down(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    base = free_port_block(6)
    up = run_qjm(
        "cluster", "up", "--dir", str(d), "--journalnodes", "3", "--namenodes", "0",
        "--base-port", str(base), "--json", "--insecure",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        cluster = read_json(up.stdout)
        on_disk = read_json((d / "cluster.json").read_text())
        assert cluster == on_disk
        for i, name in enumerate(("jn1", "jn2", "jn3")):
            entry = cluster[name]
            assert entry["rpc"] == f"127.0.0.1:{base + 2 * i}"  # type: ignore[index]
            assert entry["http"] == f"127.0.0.1:{base + 2 * i + 1}"  # type: ignore[index]
            assert pid_alive(entry["pid"])  # type: ignore[index]
            assert Path(entry["log"]).exists()  # type: ignore[index]
        rpcs = ";".join(cluster[n]["rpc"] for n in ("jn1", "jn2", "jn3"))  # type: ignore[index]
        assert cluster["shared_edits"] == f"qjournal://{rpcs}/ns1"
        cfg = load_config(d / "cluster.toml")
        assert cfg.shared_edits_uri() == cluster["shared_edits"]

        again = run_qjm("cluster", "up", "--dir", str(d), "--base-port", str(base))
        assert again.returncode == 1 and "is running" in again.stderr

        fmt = run_qjm("journal", "format", "--config", str(d / "cluster.toml"))
        assert fmt.returncode == 0, fmt.stderr
        st = run_qjm("cluster", "status", "--dir", str(d), "--json")
        assert st.returncode == 0, st.stderr
        status = read_json(st.stdout)
        assert all(x["running"] for x in status["daemons"].values())  # type: ignore[union-attr]
        assert all(n["formatted"] for n in status["journal"])  # type: ignore[union-attr]
        table = run_qjm("cluster", "status", "--dir", str(d))
        assert "jn3" in table.stdout and "running" in table.stdout
    finally:
        down = run_qjm("cluster", "down", "--dir", str(d))
    assert down.returncode == 0, down.stderr
    assert "stopped jn1, jn2, jn3" in down.stdout
    for name in ("jn1", "jn2", "jn3"):
        assert not pid_alive(cluster[name]["pid"])  # type: ignore[index]
    st = run_qjm("cluster", "status", "--dir", str(d))
    assert st.returncode == 3 and "stopped" in st.stdout


@pytest.mark.slow
def test_cluster_up_refuses_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_qjm("cluster", "up", "--dir", str(tmp_path / "c"), "--base-port", str(port))
    assert r.returncode == 1
    assert f"port {port} for jn1 on 127.0.0.1 is in use" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_cluster_status_without_a_cluster(tmp_path: Path) -> None:
    r = run_qjm("cluster", "status", "--dir", str(tmp_path))
    assert r.returncode == 1 and "no cluster in" in r.stderr


@pytest.mark.slow
def test_cluster_up_right_after_down_reuses_its_ports(tmp_path: Path) -> None:
    # The old daemons' connections linger in TIME_WAIT; that is not "in use".
    d = tmp_path / "cluster"
    base = free_port_block(2)
    args = (
        "cluster", "up", "--dir", str(d), "--journalnodes", "1", "--namenodes", "0",
        "--base-port", str(base), "--insecure",
    )  # fmt: skip
    up = run_qjm(*args)
    assert up.returncode == 0, up.stderr
    try:
        with socket.create_connection(("127.0.0.1", base + 1), timeout=10) as conn:
            down = run_qjm("cluster", "down", "--dir", str(d))
            assert down.returncode == 0, down.stderr
            assert down.stdout == "stopped jn1\n"
            conn.settimeout(10)
            assert conn.recv(1) == b""  # the server closed first: its side is in TIME_WAIT
        again = run_qjm(*args)
        assert again.returncode == 0, again.stderr
    finally:
        run_qjm("cluster", "down", "--dir", str(d))


@pytest.mark.slow
def test_cluster_up_refuses_namenode_counts_it_cannot_run(tmp_path: Path) -> None:
    # automatic failover (the default) runs exactly 2 NameNodes; manual HA up to 2
    r = run_qjm("cluster", "up", "--dir", str(tmp_path / "c"), "--namenodes", "1")
    assert r.returncode == 1
    assert "--namenodes 1" in r.stderr and "--no-zookeeper" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "c" / "cluster.json").exists()
    r = run_qjm("cluster", "up", "--dir", str(tmp_path / "c"), "--namenodes", "3", "--no-zookeeper")
    assert r.returncode == 1 and "--namenodes 3" in r.stderr
    r = run_qjm("cluster", "up", "--dir", str(tmp_path / "c"), "--namenodes", "3")
    assert r.returncode == 1 and "--namenodes 3" in r.stderr
    r = run_qjm(
        "cluster", "up", "--dir", str(tmp_path / "c"), "--no-zookeeper", "--zookeeper-members", "3"
    )
    assert r.returncode == 1 and "--zookeeper-members 3" in r.stderr
    assert not (tmp_path / "c" / "cluster.json").exists()


@pytest.mark.slow
def test_cluster_up_refuses_a_busy_namenode_port_before_starting_anything(tmp_path: Path) -> None:
    base = free_port_block(10)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 6))  # nn1's RPC port after 3 JournalNodes' 6 ports
        s.listen()
        r = run_qjm(
            "cluster", "up", "--dir", str(tmp_path / "c"), "--namenodes", "2",
            "--no-zookeeper", "--base-port", str(base), "--insecure",
        )  # fmt: skip
    assert r.returncode == 1
    assert f"port {base + 6} for nn1 on 127.0.0.1 is in use" in r.stderr
    assert not (tmp_path / "c" / "logs").exists()  # no daemon was started


@pytest.mark.slow
def test_cluster_up_is_secure_by_default_and_stays_so(tmp_path: Path) -> None:
    """A new DIR gets a Kerberos cluster (design §S.4) serving HTTPS only (§S.13); started
    again it keeps both, with the same CA, and --insecure cannot open it up."""
    d = tmp_path / "secure"
    base = free_port_block(3)  # jn1's RPC and HTTP ports, then its HTTPS port
    args = (
        "cluster", "up", "--dir", str(d), "--journalnodes", "1", "--namenodes", "0",
        "--base-port", str(base),
    )  # fmt: skip
    up = run_qjm(*args, timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        cluster = read_json((d / "cluster.json").read_text())
        kdc = cluster["kdc"]
        assert pid_alive(kdc["pid"])
        security = load_config(d / "cluster.toml").security
        assert security.kerberos and security.http_policy == "HTTPS_ONLY"
        assert cluster["jn1"]["scheme"] == "https"
        assert cluster["jn1"]["http"] == f"127.0.0.1:{base + 2}"
        assert cluster["tls"]["ca"] == security.ssl_ca == str(d / "tls" / "ca.pem")
        ca = Path(security.ssl_ca).read_bytes()
        assert f"curl --cacert {security.ssl_ca}" in up.stdout
        assert f"kinit -kt {kdc['user_keytab']} {kdc['user_principal']}" in up.stdout
        assert f"export KRB5CCNAME=FILE:{kdc['user_ccache']}" in up.stdout
        # a stranger's plain connection to the JournalNode is refused as HDFS refuses it
        with socket.create_connection(("127.0.0.1", base), timeout=10) as s:
            s.sendall(b"hrpc\x09\x00\x00")  # version 9, RPC_BUILTIN, simple auth
            s.settimeout(10)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert b"SIMPLE authentication is not enabled.  Available:[KERBEROS]" in answer
    finally:
        assert run_qjm("cluster", "down", "--dir", str(d)).returncode == 0
    opened = run_qjm(*args, "--insecure")
    assert opened.returncode == 1
    assert "was made with Kerberos" in opened.stderr and "Traceback" not in opened.stderr
    assert not pid_alive(cluster["jn1"]["pid"])
    again = run_qjm(*args, timeout=120)
    assert again.returncode == 0, again.stderr
    try:
        again_cluster = read_json((d / "cluster.json").read_text())
        assert again_cluster["kdc"]["realm"] == kdc["realm"]
        assert again_cluster["jn1"]["scheme"] == "https"  # type: ignore[index]
        assert (d / "tls" / "ca.pem").read_bytes() == ca  # the same CA, not a new one
    finally:
        assert run_qjm("cluster", "down", "--dir", str(d)).returncode == 0


@pytest.mark.slow
def test_a_cluster_without_datanodes_says_it_keeps_metadata_only(tmp_path: Path) -> None:
    """`cluster up` and the NameNode's status page and JSON name the metadata-only mode."""
    import urllib.request

    d = tmp_path / "c"
    args = (
        "cluster", "up", "--dir", str(d), "--journalnodes", "1", "--namenodes", "2",
        "--no-zookeeper", "--datanodes", "0", "--base-port", str(free_port_block(8)),
        "--insecure",
    )  # fmt: skip
    up = run_qjm(*args, timeout=180)
    assert up.returncode == 0, up.stderr
    try:
        assert "data:         metadata only: no DataNode" in up.stdout, up.stdout
        http = read_json((d / "cluster.json").read_text())["nn1"]["http"]
        with urllib.request.urlopen(f"http://{http}/status", timeout=10) as r:
            assert read_json(r.read().decode())["metadata_only"] is True
        with urllib.request.urlopen(f"http://{http}/", timeout=10) as r:
            assert "metadata only: no DataNode is configured" in r.read().decode()
    finally:
        assert run_qjm("cluster", "down", "--dir", str(d)).returncode == 0


def test_an_edited_cluster_toml_is_told_from_the_launchers(tmp_path: Path) -> None:
    from dataclasses import replace

    from qjm.cluster.launcher import (
        LaunchError,
        _same_nodes,
        changed_keys,
        edited_config,
        write_config,
    )
    from qjm.config import ClusterConfig, JournalNodeConfig, NameNodeSettings

    jn = JournalNodeConfig("jn1", "127.0.0.1:1", "127.0.0.1:2", str(tmp_path / "jn1"))
    cfg = ClusterConfig(journalnodes={"jn1": jn})
    assert edited_config(tmp_path) is None  # nothing written yet
    write_config(tmp_path, cfg)
    assert edited_config(tmp_path) is None  # as the launcher wrote it
    toml = tmp_path / "cluster.toml"
    toml.write_text(toml.read_text().replace("checkpoint_txns = 1000000", "checkpoint_txns = 5"))
    edited = edited_config(tmp_path)
    assert edited is not None and edited.namenode.checkpoint_txns == 5
    assert changed_keys(cfg, edited) == ["namenode.checkpoint_txns"]
    assert _same_nodes(replace(cfg, namenode=NameNodeSettings(roll_txns=7)), edited) is edited
    with pytest.raises(LaunchError, match="to name journalnodes none; the launcher runs jn1"):
        _same_nodes(cfg, replace(edited, journalnodes={}))
    with pytest.raises(LaunchError, match="edited to security.authentication = 'simple'; this"):
        kerberos = replace(cfg.security, authentication="kerberos", realm="R")
        _same_nodes(replace(cfg, security=kerberos), edited)
    toml.write_text(toml.read_text() + "bogus = 1\n")
    with pytest.raises(LaunchError, match="was edited since the launcher wrote it and does not"):
        edited_config(tmp_path)


@pytest.mark.slow
def test_cluster_up_starts_from_an_edited_cluster_toml(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    base = free_port_block(6)
    argv = ["cluster", "up", "--dir", str(d), "--journalnodes", "3", "--namenodes", "0"]
    argv += ["--base-port", str(base), "--insecure"]
    up = run_qjm(*argv)
    down = run_qjm("cluster", "down", "--dir", str(d))
    assert up.returncode == 0 and down.returncode == 0, up.stderr + down.stderr
    toml = d / "cluster.toml"
    text = toml.read_text().replace("sync_interval_ms = 120000", "sync_interval_ms = 5000")
    toml.write_text(text)
    try:
        again = run_qjm(*argv)
        assert again.returncode == 0, again.stderr
        assert "the launcher's would differ in journalnode.sync_interval_ms" in again.stdout
        assert toml.read_text() == text  # kept as edited
        assert load_config(toml).journalnode.sync_interval_ms == 5000
        cluster = read_json((d / "cluster.json").read_text())
        assert cluster["config_edited"] == ["journalnode.sync_interval_ms"]
    finally:
        down = run_qjm("cluster", "down", "--dir", str(d))
    assert down.returncode == 0, down.stderr
