"""Fixtures of the web tests: a real ``distcalc serve`` process on a free loopback port, and a headless
Chromium driven by Selenium (Debian's chromium + chromium-driver). Under CI (``CI`` set) a missing browser
is a failure, not a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import importlib.util

import pytest

# Without the web extra these tests are not collected, except under CI, where they must run (make test installs it).
MISSING = [name for name in ("fastapi", "uvicorn", "selenium") if importlib.util.find_spec(name) is None]
if MISSING and not os.environ.get("CI"):
    collect_ignore_glob = ["test_*.py"]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("DISTCALC_SCREENSHOTS", ROOT / "build" / "screenshots"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Flags that keep Chromium from reaching the network (updates, sync, field trials) in a closed sandbox.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1500")


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    """``distcalc serve --port 0 ARGS`` in a subprocess; returns it and the URL it printed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen([sys.executable, "-m", "distcalc.cli", "serve", "--port", "0", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        raise RuntimeError(f"serve did not start: {line!r} {process.stderr.read()!r}")
    url = line.split()[2].rstrip("/")
    return process, url


def wait_until_up(url: str, timeout_s: float = 10.0) -> float:
    """Seconds until ``url/api/presets`` answers 200."""
    start = time.perf_counter()
    while True:
        try:
            with urllib.request.urlopen(url + "/api/presets", timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - start
        except OSError:
            if time.perf_counter() - start > timeout_s:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="session")
def server():
    process, url = start_server()
    wait_until_up(url)
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        message = "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message + "; under CI the browser tests must run")
        pytest.skip(message)
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="distcalc-chromium-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    downloads = tempfile.mkdtemp(prefix="distcalc-downloads-")
    options.add_experimental_option("prefs", {"download.default_directory": downloads,
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.downloads = Path(downloads)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def shoot(browser):
    """Save a screenshot of the page under build/screenshots/NAME.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        browser.save_screenshot(str(path))
        return path

    return save
