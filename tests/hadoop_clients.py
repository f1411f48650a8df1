"""Genuine HDFS clients for tests: Apache Hadoop's FsShell (`hadoop fs`) and hdfs-native.

FsShell runs from the Hadoop jars pyspark ships (`java -cp <conf dir>:<pyspark>/jars/*
org.apache.hadoop.fs.FsShell ...`); hdfs-native is the Rust client's Python binding. Both read
the cluster's hadoop-conf directory, so neither is told which NameNode is active.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hdfs_native

from conftest import run_qjm
from ports import free_port_block
from qjm.cluster.hadoop_conf import fsshell_argv, hadoop_jars, read_site
from qjm.cluster.launcher import start_daemons
from qjm.cluster.process import pid_alive
from qjm.ipc import IpcClient, RemoteError
from qjm.namenode import protocols
from qjm.testing.wait import wait_until

JARS = hadoop_jars()  # site-packages/pyspark/jars
STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"

# Every FsShell call starts a JVM (~1 s); the suite keeps a count to hold itself to a budget.
java_calls: list[tuple[str, ...]] = []


def java() -> str:
    """The java executable (JAVA_HOME's, else the one on PATH); fails the test if none."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    assert found, "no java on PATH: FsShell needs a JRE (make install brings one)"
    return found


def hadoop_fs(conf_dir: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run `hadoop fs <args>` (the genuine FsShell) with conf_dir's configuration."""
    assert any(JARS.glob("hadoop-client-api-*.jar")), f"no Hadoop client jars in {JARS}"
    java_calls.append(args)
    return subprocess.run(
        fsshell_argv(conf_dir, *args, java=java()),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HADOOP_CONF_DIR": str(conf_dir), "HADOOP_USER_NAME": user()},
    )


def java_program(source: str, workdir: Path) -> Path:
    """Compile a Java class against Hadoop's client jars (javac, from the JDK `make` brings);
    the directory to put on the classpath."""
    [name] = [w.split()[2] for w in source.splitlines() if w.startswith("public class ")]
    return _compile(name, source, workdir)


def _compile(name: str, source: str, workdir: Path) -> Path:
    """javac source (its public class name) into workdir/java-<name>; that directory."""
    classes = workdir / f"java-{name}"
    classes.mkdir(parents=True, exist_ok=True)
    (classes / f"{name}.java").write_text(source)
    javac = shutil.which("javac")
    assert javac, "no javac on PATH: the Java API judges need a JDK (make install brings one)"
    r = subprocess.run(
        [javac, "-d", str(classes), "-cp", f"{JARS}/*", str(classes / f"{name}.java")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return classes


def run_java(
    classes: Path, name: str, conf_dir: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a compiled class with Hadoop's client jars and conf_dir's configuration."""
    java_calls.append((name, *args))
    return subprocess.run(
        [
            java(),
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            f"{conf_dir}:{classes}:{JARS}/*",
            name,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HADOOP_USER_NAME": user()},
    )


FSSHELL_BATCH_JAVA = """
import java.io.*;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.util.ToolRunner;

public class FsShellBatch {
  // Runs Hadoop's FsShell once per request read from stdin (an argument count, then each
  // argument as modified UTF-8), each with a fresh Configuration and FileSystem, and
  // answers its exit code, stdout and stderr, framed, on the stdout it started with.
  public static void main(String[] a) throws Exception {
    PrintStream realErr = System.err;
    DataOutputStream answers = new DataOutputStream(new BufferedOutputStream(
        new FileOutputStream(FileDescriptor.out)));
    System.setOut(new PrintStream(new ByteArrayOutputStream()));
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in));
    while (true) {
      int n;
      try { n = in.readInt(); } catch (EOFException e) { return; }
      String[] args = new String[n];
      for (int i = 0; i < n; i++) args[i] = in.readUTF();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      System.setOut(new PrintStream(out, true, "UTF-8"));
      System.setErr(new PrintStream(err, true, "UTF-8"));
      int rc;
      try {
        Configuration conf = new Configuration();
        conf.setBoolean("fs.hdfs.impl.disable.cache", true);
        conf.setBoolean("fs.webhdfs.impl.disable.cache", true);
        rc = ToolRunner.run(conf, new FsShell(), args);
      } catch (Throwable t) {
        t.printStackTrace(System.err);
        rc = 255;
      }
      System.out.flush();
      System.err.flush();
      System.setErr(realErr);
      byte[] o = out.toByteArray(), e = err.toByteArray();
      answers.writeInt(rc);
      answers.writeInt(o.length);
      answers.write(o);
      answers.writeInt(e.length);
      answers.write(e);
      answers.flush();
    }
  }
}
"""


class FsShellSession:
    """The genuine FsShell in one JVM for many commands (a JVM start is seconds on a loaded
    machine): each command gets a fresh Configuration and FileSystem, as `hadoop fs` would,
    and answers as hadoop_fs does. Commands that read stdin keep to hadoop_fs."""

    _classes: Path | None = None

    def __init__(
        self,
        conf_dir: Path,
        workdir: Path,
        *,
        jvm_options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        classpath: Sequence[Path] = (),
    ) -> None:
        """jvm_options and env: a Kerberos client's krb5.conf and ticket cache, say (env
        replaces the simple user's HADOOP_USER_NAME); classpath: more class directories
        (ahead of the jars)."""
        if FsShellSession._classes is None:
            FsShellSession._classes = java_program(FSSHELL_BATCH_JAVA, workdir)
        java_calls.append(("FsShellBatch",))
        extra = {"HADOOP_USER_NAME": user()} if env is None else dict(env)
        self.proc = subprocess.Popen(
            [
                java(),
                "-XX:+UseSerialGC",
                *jvm_options,
                "-cp",
                ":".join(
                    [str(conf_dir), str(FsShellSession._classes), *map(str, classpath), f"{JARS}/*"]
                ),
                "FsShellBatch",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HADOOP_CONF_DIR": str(conf_dir), **extra},
        )

    def _read(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        out = b""
        while len(out) < n:
            left = deadline - time.monotonic()
            assert left > 0, "FsShell did not answer in time"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, n - len(out))
                assert chunk, f"FsShell's JVM exited ({self.proc.poll()})"
                out += chunk
        return out

    def __call__(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """Run `hadoop fs <args>` in the session's JVM; its output as text."""
        r = self.run_bytes(*args, timeout=timeout)
        return subprocess.CompletedProcess(
            r.args,
            r.returncode,
            r.stdout.decode(errors="replace"),
            r.stderr.decode(errors="replace"),
        )

    def run_bytes(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[bytes]:
        """Run `hadoop fs <args>` in the session's JVM; its output as bytes."""
        assert self.proc.stdin is not None
        frame = struct.pack(">i", len(args))
        for arg in args:
            raw = arg.encode()
            frame += struct.pack(">H", len(raw)) + raw
        self.proc.stdin.write(frame)
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        rc, n = struct.unpack(">iI", self._read(8, deadline))
        out = self._read(n, deadline)
        (m,) = struct.unpack(">I", self._read(4, deadline))
        err = self._read(m, deadline)
        argv = ["java", "-cp", "FsShellBatch", "fs", *args]  # check() shows argv[4:]
        return subprocess.CompletedProcess(argv, rc & 0xFF, out, err)

    def close(self) -> None:
        """End the JVM."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)


def check(result: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must have succeeded (its stderr in the failure)."""
    assert result.returncode == 0, (
        f"{result.args[4:]} exited {result.returncode}\nstdout:\n{result.stdout}\n"
        f"stderr:\n{result.stderr}"
    )
    return result.stdout


def user() -> str:
    """The OS user the tests (and the NameNodes they start) run as: HDFS's superuser."""
    return getpass.getuser()


def client_config(conf_dir: Path) -> dict[str, str]:
    """core-site.xml and hdfs-site.xml of conf_dir as one dict."""
    return read_site(conf_dir / "core-site.xml") | read_site(conf_dir / "hdfs-site.xml")


def native_client(conf_dir: Path) -> hdfs_native.Client:
    """An hdfs-native client of the nameservice that conf_dir describes (HA, no NameNode named)."""
    config = client_config(conf_dir)
    return hdfs_native.Client(config["fs.defaultFS"], config=config)


class HACluster:
    """A cluster of 3 JournalNodes and 2 NameNodes started by `qjm cluster up` (manual HA),
    with datanodes DataNodes."""

    def __init__(self, directory: Path, datanodes: int = 0) -> None:
        self.dir = directory
        self.info: dict[str, Any] = {}
        self.base: int | None = None
        self.datanodes = datanodes

    def up_command(self, base: int) -> subprocess.CompletedProcess[str]:
        """Run `qjm cluster up --dir D --namenodes 2 --no-zookeeper --base-port base --json`."""
        return run_qjm(
            "cluster",
            "up",
            "--dir",
            str(self.dir),
            "--namenodes",
            "2",
            "--no-zookeeper",
            "--insecure",
            "--base-port",
            str(base),
            "--datanodes",
            str(self.datanodes),
            "--json",
            timeout=180,
        )

    def up(self) -> HACluster:
        """Start the cluster on free ports (the first time) or on its ports (again)."""
        if self.base is None:
            self.base = free_port_block(10 + 3 * self.datanodes)
        r = self.up_command(self.base)
        assert r.returncode == 0, f"cluster up failed:\n{r.stderr}\n{r.stdout}"
        self.info = json.loads(r.stdout)
        return self

    def down(self) -> None:
        """`qjm cluster down`: stops every daemon still running."""
        r = run_qjm("cluster", "down", "--dir", str(self.dir))
        assert r.returncode == 0, r.stderr

    @property
    def conf(self) -> Path:
        """DIR/hadoop-conf."""
        return Path(self.info["hadoop_conf"])

    @property
    def toml(self) -> str:
        """DIR/cluster.toml."""
        return str(self.info["config"])

    def haadmin(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`qjm haadmin --config cluster.toml <args>`."""
        return run_qjm("haadmin", "--config", self.toml, *args)

    def state(self, nn: str) -> str:
        """nn's HA state as `qjm haadmin -getServiceState` prints it (active, standby)."""
        r = self.haadmin("-getServiceState", nn)
        assert r.returncode == 0, f"-getServiceState {nn}: {r.stderr}"
        return r.stdout.strip()

    def failover(self, src: str, dst: str) -> None:
        """`qjm haadmin -failover src dst`, which must succeed and leave dst active."""
        r = self.haadmin("-failover", src, dst)
        assert r.returncode == 0, f"-failover {src} {dst}: {r.stderr}{r.stdout}"
        assert self.state(dst) == "active"

    def direct(self, nn: str) -> hdfs_native.Client:
        """An hdfs-native client of nn alone (no failover): what nn itself answers."""
        return hdfs_native.Client(f"hdfs://{self.info[nn]['rpc']}")

    def ha_client(self) -> hdfs_native.Client:
        """An hdfs-native client of the nameservice (finds the active itself)."""
        return native_client(self.conf)

    def kill9(self, nn: str) -> None:
        """SIGKILL nn and wait until it is gone."""
        pid = self.info[nn]["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_until(f"{nn} (pid {pid}) gone", lambda: not pid_alive(pid), timeout_s=30.0)

    def restart(self, nn: str) -> None:
        """Start nn again on its ports and name dir (it comes up standby)."""
        self.info[nn]["pid"] = start_daemons(self.dir, [nn], timeout=60)[nn]


def tree(client: hdfs_native.Client, root: str = "/") -> dict[str, tuple[bool, int, str, str, int]]:
    """Every path under root: (is dir, permission, owner, group, replication or 0)."""
    return {
        s.path: (s.isdir, s.permission, s.owner, s.group, s.replication or 0)
        for s in client.list_status(root, recursive=True)
    }


def block_locations(address: str, path: str) -> Any:
    """The NameNode at address's getBlockLocations answer for the whole of path (its
    LocatedBlocksProto); RemoteError when it refuses (a standby), RpcError when it is down."""

    async def call() -> Any:
        spec = protocols.CLIENT_METHODS["getBlockLocations"]
        client = IpcClient(address, protocols.CLIENT_PROTOCOL, reconnect_attempts=1)
        try:
            request = spec.request(src=path, offset=0, length=1 << 62)
            resp = await client.call("getBlockLocations", request, spec.response, timeout=10)
        finally:
            await client.close()
        return resp.locations  # type: ignore[attr-defined]

    return asyncio.run(call())


def refusal_of_get_file_info(address: str, path: str = "/") -> str:
    """The Java exception class a NameNode answers getFileInfo with ("" when it answers)."""

    async def call() -> str:
        spec = protocols.CLIENT_METHODS["getFileInfo"]
        client = IpcClient(address, protocols.CLIENT_PROTOCOL, reconnect_attempts=1)
        try:
            await client.call("getFileInfo", spec.request(src=path), spec.response, timeout=10)
        except RemoteError as e:
            return e.class_name
        finally:
            await client.close()
        return ""

    return asyncio.run(call())


# WebHdfsFileSystem reads each JSON answer's Content-Type with JAX-RS's MediaType.valueOf,
# which needs a JAX-RS runtime; the shaded Hadoop client in pyspark's jars relocates the
# JAX-RS API but ships no runtime, so the client fails on every JSON answer ("Response
# decoding failure: ClassNotFoundException ... RuntimeDelegateImpl") against any WebHDFS
# server that names its Content-Type, HDFS's own included. This class stands in for
# Jersey's, under the relocated name the API looks for, and parses media types only.
JAXRS_MEDIA_TYPES_JAVA = """\
package org.apache.hadoop.shaded.org.glassfish.jersey.internal;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.shaded.javax.ws.rs.core.Application;
import org.apache.hadoop.shaded.javax.ws.rs.core.Link;
import org.apache.hadoop.shaded.javax.ws.rs.core.MediaType;
import org.apache.hadoop.shaded.javax.ws.rs.core.Response;
import org.apache.hadoop.shaded.javax.ws.rs.core.UriBuilder;
import org.apache.hadoop.shaded.javax.ws.rs.core.Variant;
import org.apache.hadoop.shaded.javax.ws.rs.ext.RuntimeDelegate;

public class RuntimeDelegateImpl extends RuntimeDelegate {
  static final HeaderDelegate<MediaType> MEDIA = new HeaderDelegate<MediaType>() {
    public MediaType fromString(String value) {
      String[] parts = value.split(";");
      String[] kind = parts[0].trim().split("/", 2);
      Map<String, String> params = new HashMap<>();
      for (int i = 1; i < parts.length; i++) {
        String[] kv = parts[i].trim().split("=", 2);
        if (kv.length == 2) { params.put(kv[0].trim(), kv[1].trim()); }
      }
      return new MediaType(kind[0], kind.length > 1 ? kind[1] : "*", params);
    }
    public String toString(MediaType m) { return m.getType() + "/" + m.getSubtype(); }
  };
  @SuppressWarnings("unchecked")
  public <T> HeaderDelegate<T> createHeaderDelegate(Class<T> type) {
    if (type == MediaType.class) { return (HeaderDelegate<T>) MEDIA; }
    throw new IllegalArgumentException("no header delegate for " + type);
  }
  public UriBuilder createUriBuilder() { throw new UnsupportedOperationException(); }
  public Response.ResponseBuilder createResponseBuilder() { throw new UnsupportedOperationException(); }
  public Variant.VariantListBuilder createVariantListBuilder() { throw new UnsupportedOperationException(); }
  public <T> T createEndpoint(Application a, Class<T> t) { throw new UnsupportedOperationException(); }
  public Link.Builder createLinkBuilder() { throw new UnsupportedOperationException(); }
}
"""


def jaxrs_media_types(workdir: Path) -> Path:
    """The class directory of JAXRS_MEDIA_TYPES_JAVA, for a WebHDFS client's classpath."""
    return _compile("RuntimeDelegateImpl", JAXRS_MEDIA_TYPES_JAVA, workdir)
