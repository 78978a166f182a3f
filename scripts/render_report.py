"""Render an HTML report to a PNG with headless Chromium (to look at it, or check it in tests).

    python scripts/render_report.py report.html report.png [--width 1200 --height 2000]

Needs Debian's chromium (`apt-get install -y chromium`). Network, GPU, sync and extensions
are off; the page is loaded from a file:// URL.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def render(html: str | Path, png: str | Path, width: int = 1200, height: int = 2000, timeout: float = 120) -> Path:
    browser = find_browser()
    if browser is None:
        raise FileNotFoundError("no chromium found: install it with `apt-get install -y chromium`")
    html, png = Path(html).resolve(), Path(png).resolve()
    with tempfile.TemporaryDirectory(prefix="evallocal-chromium-") as profile:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--disable-extensions", "--no-first-run",
                   "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
                   f"--screenshot={png}", f"--window-size={width},{height}", html.as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if not png.exists():
        raise RuntimeError(f"chromium made no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html")
    parser.add_argument("png")
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=2000)
    args = parser.parse_args(argv)
    print(render(args.html, args.png, args.width, args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
