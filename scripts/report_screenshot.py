"""Screenshot a rendered report with the browser test's code path (headless Chromium, tests/report/test_report.py).

python scripts/report_screenshot.py reports/quickstart/index.html docs/quickstart-report.png
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.report.test_report import screenshot, screenshot_is_plotted  # noqa: E402

MAX_BYTES = 500_000  # kept in the repository: a palette PNG when the full-colour one is larger


def main(argv: list[str]) -> int:
    page, png = Path(argv[0]), Path(argv[1])
    height = int(argv[2]) if len(argv) > 2 else 2200
    png.parent.mkdir(parents=True, exist_ok=True)
    screenshot(page, png, width=1280, height=height, max_bytes=MAX_BYTES)
    if not screenshot_is_plotted(png):
        print(f"{png}: the screenshot shows no plotted data", file=sys.stderr)
        return 1
    print(f"wrote {png} ({png.stat().st_size // 1000} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
