"""The standby checkpointer: an image every N txns or T seconds, uploaded to the active.

As HDFS's StandbyCheckpointer: the image is of the namespace at the last applied txid
(a copy taken while the tailer waits, written while it goes on), kept in the standby's
own name dir, then PUT to /imagetransfer of the other NameNodes; the active keeps it
(and purges old ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

from qjm.config import ClusterConfig, format_address, parse_address
from qjm.errors import QjmError
from qjm.namenode.image import read_md5_file
from qjm.namenode.types import HAState
from qjm.security import tls
from qjm.security.http import client_middlewares

if TYPE_CHECKING:
    from qjm.namenode.server import NameNode

log = logging.getLogger("qjm.namenode.checkpointer")
UPLOAD_TIMEOUT_S = 600.0
CONNECT_TIMEOUT_S = 5.0


class CheckpointError(QjmError):
    """A checkpoint could not be saved or uploaded."""


def http_base(address: str) -> str:
    """http://host:port for a configured http_address (0.0.0.0 means this host); a URL
    (https://host:port, design §S.13) is kept as it is."""
    if "://" in address:
        return address.rstrip("/")
    host, port = parse_address(address, "http_address")
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"http://{format_address(host, port)}"


class StandbyCheckpointer:
    """Checks every checkpoint_check_period_s whether a checkpoint is due, while standby."""

    def __init__(self, nn: NameNode) -> None:
        self.nn = nn
        self.settings = nn.settings
        self.last_checkpoint_txid = nn.image_txid
        self.last_checkpoint_time = time.monotonic()
        self.checkpoints = 0
        self.uploads = 0
        self.last_error: str | None = None
        self.last_upload: dict[str, str] = {}  # other NameNode -> what its answer said
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._paused = False
        self._saving: asyncio.Future[Path] | None = None
        self._upload_task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic check."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="standby-checkpointer")

    async def stop(self) -> None:
        """Stop checking; a save in progress is waited for, an upload is cancelled."""
        task, self._task = self._task, None
        await self.pause()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def pause(self) -> None:
        """No checkpoints until resume(); waits for a save in progress, cancels an upload."""
        self._paused = True
        if self._upload_task is not None:
            self._upload_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._upload_task
        if self._saving is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._saving)

    def resume(self) -> None:
        """Checkpoints may run again (the NameNode is standby)."""
        self._paused = False

    def due(self) -> str | None:
        """Why a checkpoint is due now, or None."""
        txns = self.nn.applied_txid - self.last_checkpoint_txid
        if txns >= self.settings.checkpoint_txns:
            return f"{txns} txns since the last checkpoint"
        age = time.monotonic() - self.last_checkpoint_time
        if txns > 0 and age >= self.settings.checkpoint_period_s:
            return f"{age:.0f}s since the last checkpoint"
        return None

    async def _run(self) -> None:
        period = max(self.settings.checkpoint_check_period_s, 0.05)
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(period):
                    await self._wake.wait()
            self._wake.clear()
            if self._paused or self.nn.ha_state != HAState.STANDBY:
                continue
            why = self.due()
            if why is None:
                continue
            log.info("NameNode %s: checkpoint due (%s)", self.nn.name, why)
            try:
                await self.checkpoint()
            except asyncio.CancelledError:
                if self._task is None:
                    raise
            except Exception as e:
                self.last_error = str(e)
                log.warning("NameNode %s: checkpoint failed: %s", self.nn.name, e)

    async def save(self, purge: bool = True) -> int:
        """Save an image of the namespace at the last applied txid; returns that txid.

        purge: then delete images beyond images_retained and the edits they cover.
        """
        nn = self.nn
        storage = nn.storage
        if storage is None:
            raise CheckpointError(f"NameNode {nn.name} has no storage open")
        loop = asyncio.get_running_loop()
        async with nn.apply_lock:  # the tailer waits: the image is of exactly this txid
            if nn.needs_reload or nn.ha_state != HAState.STANDBY:
                raise CheckpointError(
                    f"NameNode {nn.name} is {nn.ha_state.name.lower()}"
                    + (" and reloading after being deposed" if nn.needs_reload else "")
                    + ": no checkpoint"
                )
            txid = nn.applied_txid
            if any(t == txid for t, _ in storage.images()):
                return txid
            started = time.monotonic()
            # A copy of the tree at txid (whole columns: fast); the tailer goes on meanwhile.
            snapshot = nn.ns.copy()
        fut = loop.run_in_executor(None, storage.save_image, snapshot, txid)
        self._saving = fut
        try:
            await asyncio.shield(fut)
        finally:
            self._saving = None
        if purge:
            await loop.run_in_executor(None, storage.purge, self.settings.images_retained)
        self.last_checkpoint_txid = txid
        nn.image_txid = max(nn.image_txid, txid)
        self.last_checkpoint_time = time.monotonic()
        self.checkpoints += 1
        log.info(
            "NameNode %s: saved image at txid %d in %.3fs",
            nn.name,
            txid,
            time.monotonic() - started,
        )
        return txid

    async def checkpoint(self, upload: bool = True) -> int:
        """Save an image now and upload it to the other NameNodes; returns its txid."""
        if self._paused:
            raise CheckpointError(f"NameNode {self.nn.name}: checkpoints are paused")
        txid = await self.save()
        if upload:
            self._upload_task = asyncio.create_task(self.upload(txid))
            try:
                await self._upload_task
            finally:
                self._upload_task = None
        return txid

    def image_file(self, txid: int) -> Path:
        """The saved image file of txid in this NameNode's name dir."""
        storage = self.nn.storage
        assert storage is not None
        for t, path in storage.images():
            if t == txid:
                return Path(path)
        raise CheckpointError(f"NameNode {self.nn.name} holds no image at txid {txid}")

    async def upload(self, txid: int) -> None:
        """PUT the image of txid to /imagetransfer of every other NameNode (the active keeps it)."""
        path = self.image_file(txid)
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, path.read_bytes)
        md5 = read_md5_file(path)
        if md5 is None:
            import hashlib

            md5 = hashlib.md5(data).hexdigest()
        others = [c for n, c in self.nn.cfg.namenodes.items() if n != self.nn.name]
        timeout = aiohttp.ClientTimeout(total=UPLOAD_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        async with aiohttp.ClientSession(
            timeout=timeout, middlewares=client_middlewares(), connector=tls.connector()
        ) as session:
            for other in others:
                url = f"{tls.node_url(self.nn.cfg.security, other)}/imagetransfer"
                try:
                    async with session.put(
                        url,
                        params={"txid": str(txid)},
                        data=data,
                        headers={
                            "X-MD5-Digest": md5,
                            "X-Image-Txid": str(txid),
                            "X-Namenode": self.nn.name,
                            "Content-Type": "application/octet-stream",
                        },
                    ) as resp:
                        text = (await resp.text()).strip()
                        self.last_upload[other.name] = f"{resp.status} {text[:200]}"
                        if resp.status == 200:
                            self.uploads += 1
                            log.info(
                                "NameNode %s: uploaded image %d to %s",
                                self.nn.name,
                                txid,
                                other.name,
                            )
                        else:
                            log.info(
                                "NameNode %s: %s did not take image %d: %s %s",
                                self.nn.name,
                                other.name,
                                txid,
                                resp.status,
                                text[:200],
                            )
                except (aiohttp.ClientError, TimeoutError, OSError) as e:
                    self.last_upload[other.name] = f"unreachable: {e}"
                    log.info(
                        "NameNode %s: could not upload image %d to %s: %s",
                        self.nn.name,
                        txid,
                        other.name,
                        e,
                    )


class FetchedImage:
    """An image downloaded from another NameNode's /imagetransfer, md5 checked."""

    def __init__(self, data: bytes, headers: dict[str, str], source: str) -> None:
        self.data = data
        self.source = source
        self.txid = int(headers["X-Image-Txid"])
        self.md5 = headers["X-MD5-Digest"]
        self.namespace_id = int(headers["X-Namespace-Id"])
        self.cluster_id = headers["X-Cluster-Id"]
        self.block_pool_id = headers["X-Block-Pool-Id"]
        self.ctime = int(headers["X-CTime"])


async def fetch_image(http_address: str, txid: int | str = "latest") -> FetchedImage:
    """GET an image (and its name dir's VERSION fields) from a NameNode at host:port or a
    base URL (https://host:port under HTTPS_ONLY); checks the md5."""
    import hashlib

    url = f"{http_base(http_address)}/imagetransfer"
    timeout = aiohttp.ClientTimeout(total=UPLOAD_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(
                timeout=timeout, middlewares=client_middlewares(), connector=tls.connector()
            ) as session,
            session.get(url, params={"getimage": "1", "txid": str(txid)}) as resp,
        ):
            if resp.status != 200:
                text = (await resp.text()).strip()
                raise CheckpointError(f"GET {url} answered {resp.status}: {text[:300]}")
            data = await resp.read()
            headers = {k: v for k, v in resp.headers.items()}
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        raise CheckpointError(f"cannot fetch an image from {url}: {e}") from None
    try:
        image = FetchedImage(data, headers, url)
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"{url} answered without a valid header {e}") from None
    got = hashlib.md5(data).hexdigest()
    if got != image.md5:
        raise CheckpointError(
            f"image from {url} is damaged: md5 {got}, the server said {image.md5}"
        )
    return image


async def bootstrap_standby(cfg: ClusterConfig, name: str, force: bool = False) -> int:
    """Copy the newest image and the VERSION of another NameNode into name's name dir.

    As `hdfs namenode -bootstrapStandby`: the name dir then holds the same namespace
    identity and an image; the standby replays the shared edits after it when it starts.
    Returns the image's txid.
    """
    import shutil

    from qjm.namenode.storage import NNStorage, StorageFormatError
    from qjm.protocol.namespace import NamespaceInfo

    conf = cfg.namenode_named(name)
    others = [c for n, c in cfg.namenodes.items() if n != name]
    if not others:
        raise CheckpointError(f"{cfg.source}: no other NameNode than {name} to bootstrap from")
    problems: list[str] = []
    image: FetchedImage | None = None
    for other in others:
        try:
            image = await fetch_image(tls.node_url(cfg.security, other))
            break
        except CheckpointError as e:
            problems.append(f"{other.name}: {e}")
    if image is None:
        raise CheckpointError(
            f"bootstrap-standby {name}: no other NameNode gave an image ({'; '.join(problems)})"
        )
    fetched = image

    def install() -> None:
        storage = NNStorage(Path(conf.name_dir))
        try:
            if storage.has_data():
                if not force:
                    raise StorageFormatError(
                        f"name dir {storage.root} is not empty; pass --force to replace it "
                        "with the other NameNode's image"
                    )
                shutil.rmtree(storage.current)
            storage.current.mkdir(parents=True, exist_ok=True)
            storage.install_image(fetched.data, fetched.txid, fetched.md5)
            storage.write_seen_txid(fetched.txid)
            storage.write_version(
                NamespaceInfo(
                    namespace_id=fetched.namespace_id,
                    cluster_id=fetched.cluster_id,
                    block_pool_id=fetched.block_pool_id,
                    ctime=fetched.ctime,
                )
            )
        finally:
            storage.unlock()

    await asyncio.get_running_loop().run_in_executor(None, install)
    log.info(
        "bootstrapped NameNode %s from %s: image at txid %d", name, fetched.source, fetched.txid
    )
    return fetched.txid
