"""Lay out a report.html in a real headless browser (Debian's `chromium`, which .ci/run installs) and read back what
a reader at that width sees: the page's scroll width against the window's, where the headline is, and how many
charts plotly drew. No selenium or playwright: chromium's own --dump-dom, on a copy of the page with a script
that writes its measurements into the DOM once the page has loaded."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MEASURE = """<script>window.addEventListener('load', function () { setTimeout(function () {
  var d = document.documentElement, h = document.getElementById('headline');
  var r = h ? h.getBoundingClientRect() : null;
  var out = {scroll_width: d.scrollWidth, inner_width: window.innerWidth, inner_height: window.innerHeight,
    headline: r ? [r.left, r.top, r.right, r.bottom] : null,
    charts: document.querySelectorAll('.chart').length,
    drawn: Array.from(document.querySelectorAll('.chart')).filter(function (c) { return c.querySelector('.main-svg'); }).length, plotly: typeof Plotly};
  var pre = document.createElement('pre'); pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
}, 200); });</script>"""


@dataclass(frozen=True)
class Layout:
    """What the browser measured: scroll_width > inner_width means the page scrolls sideways; `headline` is the
    headline's box (left, top, right, bottom) in CSS pixels; `drawn` counts the charts plotly rendered."""

    scroll_width: int
    inner_width: int
    inner_height: int
    headline: tuple[float, float, float, float] | None
    charts: int
    drawn: int
    plotly: str


def browser() -> str | None:
    """The first headless-capable browser on PATH, or None (the tests that need one skip, saying so)."""
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def layout(page: Path, width: int, height: int = 900) -> Layout:
    """Open `page` at width x height and measure it (a copy beside it carries the measuring script)."""
    exe = browser()
    assert exe is not None, "no browser: call browser() first and skip"
    probe = page.with_name(page.stem + f".probe{width}.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    command = [exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
               f"--window-size={width},{height}", "--virtual-time-budget=20000",
               f"--user-data-dir={page.parent / f'.chromium-{width}'}", "--dump-dom", probe.as_uri()]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    found = re.search(r"<pre id=\"layout-check\">(.*?)</pre>", done.stdout)
    assert found, f"{exe} wrote no measurements (exit {done.returncode}): {done.stderr[-2000:]}"
    data = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    box = data.pop("headline")
    headline = tuple(box) if box else None
    return Layout(headline=headline, **data)
