"""Headless Chromium over the DevTools protocol (``--remote-debugging-pipe``: commands on
fd 3, replies on fd 4, NUL-terminated JSON), for tests and benchmarks of HTML pages.

One launch gives JavaScript exceptions and console errors as events, every network
request, the DOM after the plots are drawn, navigation, timings and screenshots.
(The same approach as tests/test_report.py, with navigation helpers.)
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
#: a deadline that only catches a hang (a busy 2-core machine draws slowly)
HANG_S = 180.0
WIDTH, HEIGHT = 1400, 1600


class Browser:
    """Headless Chromium with one page, spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, profile: Path, size: tuple[int, int] = (WIDTH, HEIGHT)) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.width, self.height = size
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
            for target, fd in zip((3, 4), high, strict=True):
                os.dup2(fd, target)
                os.close(fd)

        self._log = open(profile.parent / f"{profile.name}-stderr.log", "wb")
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--window-size={self.width},{self.height}",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            close_fds=False,
            preexec_fn=wire,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = HANG_S
    ) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def js(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def navigating(self, expression: str) -> None:
        """Run ``expression`` that starts a navigation (a click on a link): the page may be
        gone before it answers."""
        try:
            self.js(expression)
        except RuntimeError as exc:
            if "navigated or closed" not in str(exc) and "context" not in str(exc):
                raise

    def back(self) -> None:
        """The browser's back button."""
        hist = self.send("Page.getNavigationHistory")
        entry = hist["entries"][hist["currentIndex"] - 1]
        self.send("Page.navigateToHistoryEntry", {"entryId": entry["id"]})

    def open(self, url: str) -> None:
        """A new page (tab), attached, with the event domains on; then go to ``url``."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime", "Page", "Network", "Log", "Performance"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.send("Page.navigate", {"url": url})

    def wait_for(self, expression: str, what: str, timeout: float = HANG_S) -> Any:
        """Poll ``expression`` until it is truthy (survives the page being replaced by a
        navigation); fails with ``what`` and the page's errors after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.js(expression)
            except RuntimeError:  # the execution context went away mid-navigation
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not happen; errors: {self.errors()}")
            time.sleep(0.05)

    def wait_drawn(self, url_end: str | None = None) -> int:
        """Wait until the page at a URL ending in ``url_end`` has drawn its plots; the
        page's ``data-rendered-ms``."""
        cond = "document.body && document.body.getAttribute('data-rendered-ms')"
        if url_end is not None:
            cond = f"location.href.split('#')[0].endsWith({json.dumps(url_end)}) && {cond}"
        return int(self.wait_for(cond, f"drawing {url_end or 'the page'}"))

    def screenshot(self, path: Path, *, full: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full:
            height = self.js("document.documentElement.scrollHeight")
            params |= {
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1},
            }
        data = self.send("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()

    def metrics(self) -> dict[str, float]:
        """The renderer's counters (``Performance.getMetrics``): CPU and task times in s."""
        return {m["name"]: m["value"] for m in self.send("Performance.getMetrics")["metrics"]}

    def errors(self) -> list[str]:
        """JavaScript exceptions, console errors and error log entries seen so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(
                    f"exception: {d.get('exception', {}).get('description') or d.get('text')}"
                )
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(
                    "console: "
                    + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
                )
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
