"""The NameNodes' status pages in a real browser (headless Chromium driven by selenium)
through an automatic failover: one page says active, the other standby; after kill -9 of
the active NameNode the open pages follow by themselves (no reload): the dead one says it
is not answering, the other says active, and the killed NameNode, started again, says
standby.

Chromium and its driver are Debian's (`chromium`, `chromium-driver`; `make install` installs
them). Selenium is given both paths, so its driver manager never looks for (or downloads) a
browser, and Chromium's host resolver is told to resolve nothing but loopback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ha_cluster import auto_cluster, ha_states, wait_single_active
from qjm.cluster.launcher import start_daemons
from qjm.cluster.process import LaunchError

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PAGE_LOAD_TIMEOUT_S = 15
FAILOVER_WITHIN_S = 30.0  # kill -9 to the other page saying active (seconds, in practice)
RESTART_WITHIN_S = 60.0
START_ATTEMPTS = 3

Browser = Any  # selenium.webdriver.Chrome; selenium is imported in the fixture


def _missing_browser() -> str | None:
    """Why the browser test cannot run here, or None."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return (
            f"{' and '.join(missing)} not found: the browser test needs Debian's chromium and "
            "chromium-driver packages; `make install` (as root) installs them, or "
            "`apt-get install chromium chromium-driver`"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: `make install` (or pip install -e '.[dev]')"
    return None


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Callable[[], Browser]]:
    """A factory of headless Chromium windows (each its own browser, so none is a background
    tab whose timers Chromium throttles); every one is closed at the end."""
    why = _missing_browser()
    if why is not None:
        pytest.fail(why, pytrace=False)  # never a skip: a clean machine has everything
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opened: list[Browser] = []

    def open_browser() -> Browser:
        n = len(opened) + 1
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in (
            "--headless=new",
            "--no-sandbox",  # the tests may run as root
            "--disable-dev-shm-usage",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / f'chromium-profile-{n}'}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--window-size=1000,800",
        ):
            options.add_argument(arg)
        service = Service(
            executable_path=str(CHROMEDRIVER), log_output=str(tmp_path / f"chromedriver-{n}.log")
        )
        driver = webdriver.Chrome(service=service, options=options)
        opened.append(driver)
        driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
        return driver

    try:
        yield open_browser
    finally:
        for driver in opened:
            driver.quit()


def page_state(driver: Browser) -> str:
    """What the open status page shows as its NameNode's HA state (the #ha-state element)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        text: str = driver.find_element(By.ID, "ha-state").text
    except (NoSuchElementException, StaleElementReferenceException):
        return "<no #ha-state element>"
    return text


def wait_page_state(driver: Browser, want: str, within_s: float, what: str) -> float:
    """Wait (without reloading) until the page shows state want; the seconds it took."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    started = time.monotonic()
    seen: list[str] = []

    def shows(d: Browser) -> bool:
        state = page_state(d)
        if not seen or seen[-1] != state:
            seen.append(state)
        return state == want

    try:
        WebDriverWait(driver, within_s, poll_frequency=0.1).until(shows)
    except TimeoutException:
        raise AssertionError(
            f"{what}: the page at {driver.current_url} did not show {want!r} within "
            f"{within_s:.0f}s; it showed {' -> '.join(seen)}"
        ) from None
    return time.monotonic() - started


@contextlib.contextmanager
def started_cluster(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """auto_cluster in a fresh directory, on another free port block when a port it checked
    free was taken before its daemon bound it (other clusters may run on this machine)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        directory = (tmp_path / f"cluster{attempt}").resolve()
        with contextlib.ExitStack() as stack:
            try:
                cluster = stack.enter_context(
                    auto_cluster(directory, session_timeout_ms=4000, health_rpc_timeout_ms=3000)
                )
            except LaunchError as e:
                if "address already in use" in str(e) and attempt < START_ATTEMPTS:
                    continue
                raise
            yield directory, cluster
            return


@pytest.mark.timeout(240)  # up to 3 cluster starts on a busy machine
def test_status_pages_follow_a_failover(tmp_path: Path, browser: Callable[[], Browser]) -> None:
    with started_cluster(tmp_path) as (directory, cluster):
        active = wait_single_active(cluster, 60)
        standby = next(n for n in ("nn1", "nn2") if n != active)
        pages = {name: browser() for name in (active, standby)}
        for name, driver in pages.items():
            driver.get(f"http://{cluster[name]['http']}/")
            assert f"NameNode {name}" in driver.title
        wait_page_state(pages[active], "active", 10, f"{active}'s page before the failover")
        wait_page_state(pages[standby], "standby", 10, f"{standby}'s page before the failover")
        assert "(active)" in pages[active].title and "(standby)" in pages[standby].title

        os.kill(cluster[active]["pid"], signal.SIGKILL)
        took = wait_page_state(
            pages[standby], "active", FAILOVER_WITHIN_S, f"{standby} after kill -9 of {active}"
        )
        wait_page_state(pages[active], "not answering", 10, f"{active} after its kill -9")
        states = ha_states(cluster)
        assert states == {active: "down", standby: "active"}, states
        assert "(active)" in pages[standby].title
        print(f"{standby}'s open page said active {took:.1f}s after kill -9 of {active}")

        start_daemons(directory, [active], timeout=RESTART_WITHIN_S)
        wait_page_state(
            pages[active], "standby", RESTART_WITHIN_S, f"{active} started again after the kill"
        )
        assert ha_states(cluster) == {active: "standby", standby: "active"}

        for driver in pages.values():  # a fresh load says the same
            driver.refresh()
        assert page_state(pages[active]) == "standby"
        assert page_state(pages[standby]) == "active"
