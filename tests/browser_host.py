"""A headless Chromium, launched by Playwright as a browser test's own would be, kept for other processes.

`python -m tests.browser_host PORT` launches Debian's chromium through Playwright (so it gets
Playwright's own switches: no background timer throttling, no renderer backgrounding, the sRGB
colour profile...) with the DevTools protocol on 127.0.0.1:PORT, prints "ready" and waits until it
is terminated. Test processes connect to it with `connect_over_cdp` (tests/shared_servers.py): a
Playwright session of their own per module, one browser for them all.
"""

from __future__ import annotations

import signal
import sys
import threading

from playwright import sync_api

from agentik_jupyter.testing.chromium import CHROMIUM, CHROMIUM_ARGS


def main(port: int) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, f"--remote-debugging-port={port}"], timeout=60_000
        )
        print("ready", flush=True)
        while not stop.wait(0.5) and browser.is_connected():
            pass
        browser.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
