"""How the translation machinery's cost grows with a chapter's length (docs/translation.py).

    uv run python tests/benchmarks/translation_scaling.py

A chapter made of chapter 03's Markdown cells repeated 1, 10 and 100 times (each copy's
messages made distinct), in a scratch folder: the time to cut it into messages and start its
catalogue (``update``), to fill every message (``fill``, which checks each translation), to
find what is wrong (``check``), to write the translated notebook (``generate``), and to update
again after one paragraph in every copy changed (the fuzzy matching). Each should grow
linearly: ten times the chapter, about ten times the time.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

import translation  # noqa: E402

SOURCE = ROOT / "chapters" / "03_prompt_and_cache.ipynb"


def chapter(copies: int, changed: bool = False) -> dict[str, Any]:
    english = json.loads(SOURCE.read_text(encoding="utf-8"))
    cells = []
    for copy in range(copies):
        for index, cell in enumerate(english["cells"]):
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                # Distinct messages in every copy: a word in each paragraph carries its number.
                text = re.sub(r"(?m)^([A-Z][a-z]+)", rf"\1 copy{copy}", text)
                if changed and index == 1:
                    text = text.replace("the same few", "the very same few")
            cells.append({**cell, "id": f"{copy}-{index}", "source": text})
    return {**english, "cells": cells}


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> int:
    print(
        f"{'copies':>6} {'messages':>8} {'update':>8} {'fill':>8} {'check':>8} "
        f"{'generate':>9} {'re-update':>9}"
    )
    for copies in (1, 10, 100):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "chapters").mkdir()
            (root / "chapters" / "sources.md").write_text("# Sources\n")
            (root / "README.md").write_text("# T\n\n## The course as a website\n")
            translation.sources.ROOT = root
            translation.sources.CHAPTERS = root / "chapters"
            translation.sources.LOCALES = root / "locales"
            path = root / "chapters" / "03_big.ipynb"
            path.write_text(json.dumps(chapter(copies)))
            doc = translation.document("chapters/03_big")
            update = timed(lambda: translation.update(doc, "zh_CN"))  # noqa: B023
            messages = translation.messages(doc)
            sheet = "".join(f"@@ {translation.key(m)}\n{m}\n" for m, _ in messages)
            fill = timed(lambda: translation.fill(doc, "zh_CN", sheet))  # noqa: B023
            check = timed(lambda: translation.check(doc, "zh_CN"))  # noqa: B023
            generate = timed(lambda: translation.Translator("zh_CN").file(doc))  # noqa: B023
            path.write_text(json.dumps(chapter(copies, changed=True)))
            again = timed(lambda: translation.update(doc, "zh_CN"))  # noqa: B023
            print(
                f"{copies:>6} {len(messages):>8,} {update:>7.2f}s {fill:>7.2f}s "
                f"{check:>7.2f}s {generate:>8.2f}s {again:>8.2f}s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
