"""Screenshots of the shipped recipes' report.html in headless Chromium, to look at what a person sees.

    python bench/report_screenshots.py [--out screenshots/] [--width 1400] [RECIPE ...]

Takes every recipes/*.yaml whose out/<name>/report.html exists (run the recipes first), or the recipes
named. Needs Debian's chromium (`apt-get install chromium`); it runs with the network off and a throwaway
profile, so a report that needs anything from the internet shows it by drawing nothing. Prints one line per
screenshot with the page height it rendered and how many charts Plotly drew (an <svg class="main-svg">
per chart), so an empty page or a chart that failed to draw is plain from the output alone.

--quick builds bench/quick.py's tiny recipe in a temporary folder and screenshots its report there; without
Chromium it says `skipped: ...` and exits 0 (CI installs Chromium, so there it runs for real: a skip fails CI, tests/ci_skips.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import quick

from ortflow.engine.leaves.yamlsource import load_yaml

ROOT = Path(__file__).resolve().parents[1]
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
    "--proxy-server=127.0.0.1:9",
    "--virtual-time-budget=8000",
]  # no network: a CDN script would fail


def reports(recipes: list[Path]) -> list[tuple[str, Path]]:
    found = []
    for recipe in recipes:
        name = (load_yaml(recipe)[0] or {}).get("name", recipe.stem)
        page = recipe.parent / "out" / name / "report.html"
        if page.is_file():
            found.append((name, page))
    return found


def chromium() -> str | None:
    return next(
        (name for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)),
        None,
    )


def page_height(browser: str, page: Path, profile: str) -> tuple[int, int]:
    """The rendered document's height, and how many Plotly charts it drew (from the DOM after scripts ran)."""
    dom = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    charts = (
        len(re.findall(r"class=\"main-svg\"", dom)) // 2
    )  # plotly draws two main-svg layers per chart
    rows = dom.count("<tr>") + dom.count("<h2>") * 3 + charts * 40
    return max(900, 200 + rows * 32), charts


def screenshot(browser: str, page: Path, target: Path, width: int) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as profile:
        height, charts = page_height(browser, page, profile)
        subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={target}",
                page.as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=True,
        )
    return height, charts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipes", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    parser.add_argument("--width", type=int, default=1400)
    quick.add_flag(parser)
    args = parser.parse_args()
    browser = chromium()
    if browser is None:
        if args.quick:
            quick.skip(
                "no Chromium here (apt-get install chromium): the screenshots need a browser"
            )
        sys.exit("no Chromium here: apt-get install chromium")
    with tempfile.TemporaryDirectory() as scratch:
        if args.quick:
            args.recipes, args.out = (
                [quick.tiny_recipe(Path(scratch))],
                Path(scratch) / "screenshots",
            )
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ortflow.engine.cli",
                    "--quiet",
                    "run",
                    str(args.recipes[0]),
                ],
                check=True,
            )
        shoot(args, browser)


def shoot(args: argparse.Namespace, browser: str) -> None:
    recipes = [r.resolve() for r in args.recipes] or sorted((ROOT / "recipes").glob("*.yaml"))
    args.out.mkdir(parents=True, exist_ok=True)
    found = reports(recipes)
    if not found:
        sys.exit("no report.html found: run the recipes first (engine run recipes/NAME.yaml)")
    for name, page in found:
        target = args.out / f"{name}.png"
        height, charts = screenshot(browser, page, target, args.width)
        print(f"{target}: {args.width}x{height}, {charts} charts drawn")


if __name__ == "__main__":
    main()
