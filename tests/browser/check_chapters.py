"""Open every chapter in JupyterLab in headless Chromium, run all its cells, check what you see.

Run it as a script::

    uv run --group browser python tests/browser/check_chapters.py            # every chapter
    uv run --group browser python tests/browser/check_chapters.py 09 10      # some of them
    uv run --group browser python tests/browser/check_chapters.py --out DIR  # screenshots there

or through pytest (``tests/browser/test_browser.py``, one test per chapter)::

    uv run --group browser pytest -m browser -n 0 tests/browser

What happens:

* JupyterLab starts on a free local port with a random token, serving a temporary copy of
  ``chapters/`` and ``images/`` (the notebooks' stored outputs and prompt numbers cleared),
  so running the cells never changes the committed notebooks. Its settings and workspaces
  live in that temporary folder too, and it is stopped at the end, also on failure.
* Playwright drives the machine's own Chromium (Debian's ``chromium``); it never downloads a
  browser. For each chapter: open it, wait for the kernel, Run > Run All Cells, wait until
  every code cell has a number and the kernel is idle, save it, then check:

  - no error output (read from the saved notebook: in the page an error and a warning on
    stderr are the same element, ``data-mime-type="application/vnd.jupyter.stderr"``);
  - every code cell ran (Run All stops at the first error);
  - every widget rendered as a live widget: none says "Error displaying widget" or stays at
    "Loading widget...", and there are at least as many live widget views as the committed
    notebook stores widget outputs.

* One long screenshot per chapter goes to ``tests/browser/screenshots/`` (git-ignored).

It prints one line per chapter and exits with 1 if any chapter failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = REPO / "chapters"
DEFAULT_OUT = Path(__file__).resolve().parent / "screenshots"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# As root, in a closed network, Chromium must start like this: without the background
# networking flags it keeps trying to reach Google's hosts and gets its connections refused.
# Playwright gives each launch a fresh, empty --user-data-dir of its own.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
# Tall enough for the longest chapter, short enough for Chromium to paint in one piece.
MAX_SCREENSHOT_HEIGHT = 60_000

# Timeouts, generous for a 2-core machine but bounded (seconds).
SERVER_START = 120
NOTEBOOK_OPEN = 120
RUN_ALL = 300
WIDGETS_SETTLE = 30
SAVE = 60

# The learner's own model choice or key must not change what the chapters print.
_DROPPED_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HARNESS_MODEL")

CHROMIUM_MISSING = (
    "Chromium not found: install Debian's chromium (apt-get install chromium) or Ubuntu's "
    "chromium-browser; the browser test drives it through Playwright and never downloads "
    "a browser"
)
PLAYWRIGHT_MISSING = (
    "Playwright is not installed: run with `uv run --group browser pytest -m browser` "
    "(or `uv run --group browser python tests/browser/check_chapters.py`)"
)


def find_chromium() -> str | None:
    """The machine's Chromium, or None."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def launch_options(chromium: str) -> dict[str, Any]:
    """Keyword arguments for Playwright's ``chromium.launch``."""
    return {"executable_path": chromium, "headless": True, "args": list(CHROMIUM_FLAGS)}


def chapter_notebooks(names: Sequence[str] = ()) -> list[Path]:
    """The chapters, in order; ``names`` picks some by prefix ("09") or file name, and a
    translated one by its folder ("zh/09": the Chinese edition's chapter 09)."""
    every = sorted(CHAPTERS.glob("*.ipynb"))
    if not names:
        return every
    picked = []
    for name in names:
        folder, _, short = name.rpartition("/")
        stem = short.removesuffix(".ipynb")
        pool = sorted((CHAPTERS / folder).glob("*.ipynb")) if folder else every
        matches = [nb for nb in pool if nb.stem == stem or nb.stem.startswith(stem)]
        if not matches:
            raise SystemExit(f"no chapter matches {name!r}")
        picked.extend(m for m in matches if m not in picked)
    return picked


# --- the notebook file ------------------------------------------------------------------


def _code_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def stored_widget_views(nb: dict[str, Any]) -> int:
    """How many widget outputs the notebook stores: each must come back as a live widget."""
    return sum(
        1
        for cell in _code_cells(nb)
        for out in cell.get("outputs", [])
        if WIDGET_VIEW in out.get("data", {})
    )


def error_outputs(nb: dict[str, Any]) -> list[str]:
    """One line per error output: the cell's prompt number and the exception."""
    found = []
    for index, cell in enumerate(_code_cells(nb), start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                value = str(out.get("evalue", "")).splitlines()
                found.append(
                    f"code cell {index} [{cell.get('execution_count')}]: "
                    f"{out.get('ename')}: {value[0] if value else ''}"
                )
    return found


def _cleared(nb: dict[str, Any]) -> dict[str, Any]:
    """The notebook with no outputs and no prompt numbers: what ran is what you see."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


# --- the JupyterLab server ----------------------------------------------------------------


@dataclass
class LabServer:
    """A running JupyterLab: its address, token and the folder it serves."""

    base_url: str
    token: str
    root: Path
    log: Path

    def notebook_url(self, notebook: str) -> str:
        # One workspace per notebook, reset on open: no tab of an earlier chapter comes back.
        workspace = (
            f"{self.base_url}/lab/workspaces/{notebook.removesuffix('.ipynb').replace('/', '-')}"
        )
        return f"{workspace}/tree/chapters/{notebook}?token={self.token}&reset"

    def served(self, notebook: str) -> Path:
        return self.root / "chapters" / notebook


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_LAB_SETTINGS = {
    # Every cell in the page, not only those on screen, so all of them can be checked.
    # No blank page after the last cell (it would end up in the screenshots).
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
        "scrollPastEnd": False,
    },
    # No "get notified about news?" toast over the screenshots, no update check.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def _copy_course(root: Path, chapters: Path) -> None:
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(chapters, root / "chapters", ignore=ignore)
    images = chapters.parent / "images"
    if images.is_dir():
        shutil.copytree(images, root / "images", ignore=ignore)
    for nb_path in (root / "chapters").rglob("*.ipynb"):  # the translated ones too
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        nb_path.write_text(json.dumps(_cleared(nb), indent=1), encoding="utf-8")


def _wait_until_answering(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited ({process.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()  # the server shuts its kernels down on SIGTERM
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def jupyter_lab(chapters: Path = CHAPTERS) -> Iterator[LabServer]:
    """Start JupyterLab on a temporary copy of the course; stop it and clean up at the end."""
    with tempfile.TemporaryDirectory(prefix="harness-browser-") as tmp:
        base = Path(tmp)
        root = base / "course"
        _copy_course(root, chapters)
        settings = base / "lab-settings"
        for name, values in _LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env.update(
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(base / "lab-workspaces"),
            JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
            JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        )
        port, token = _free_port(), secrets.token_hex(16)
        log = base / "jupyterlab.log"
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",  # harmless when not root; needed in a root container
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.extension_manager=readonly",
        ]
        with log.open("wb") as log_file:
            process = subprocess.Popen(
                command, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT
            )
            try:
                base_url = f"http://127.0.0.1:{port}"
                _wait_until_answering(f"{base_url}/api/status?token={token}", process, log)
                yield LabServer(base_url=base_url, token=token, root=root, log=log)
            finally:
                _stop(process)


# --- one chapter in the page ----------------------------------------------------------------

# Everything below looks only inside the notebook that is on screen.
_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

_JS_READY = f"""(cells) => {{
  const panel = document.querySelector('{_PANEL}');
  if (!panel) return false;
  const status = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const kernel = panel.querySelector('.jp-KernelName');
  return panel.querySelectorAll('.jp-Notebook .jp-Cell').length === cells
    && !!status && status.dataset.status === 'idle'
    && !!kernel && kernel.textContent.trim() !== 'No Kernel';
}}"""

# Run All has finished when the kernel is idle, no prompt says "[*]:" (queued or running) and
# some say "[12]:" (ran). Cells that did not run keep "[ ]:"; cells whose code is folded away
# show no prompt at all.
_JS_RUN_FINISHED = f"""() => {{
  const panel = document.querySelector('{_PANEL}');
  const status = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .map(p => p.textContent.trim());
  return status.dataset.status === 'idle'
    && !prompts.includes('[*]:')
    && prompts.some(p => /^\\[\\d+\\]:$/.test(p));
}}"""

# A widget output is either a live view (a .jupyter-widgets element inside the output), or the
# renderer's own text: "Loading widget..." while it waits, "Error displaying widget: ..." when
# the model is gone.
_JS_WIDGETS = f"""() => {{
  const panel = document.querySelector('{_PANEL}');
  const outputs = [...panel.querySelectorAll('.jp-OutputArea-output')];
  const live = outputs.filter(o => o.querySelector('.jupyter-widgets')).length;
  const loading = outputs.filter(o => o.textContent.trim() === 'Loading widget...').length;
  const broken = outputs
    .filter(o => o.textContent.includes('Error displaying widget'))
    .map(o => o.textContent.trim().slice(0, 120));
  return {{live, loading, broken}};
}}"""

_JS_WIDGETS_SETTLED = f"() => ({_JS_WIDGETS})().loading === 0"

# The positions (in the notebook) of the cells whose output holds a live widget.
_JS_WIDGET_CELLS = f"""() => {{
  const panel = document.querySelector('{_PANEL}');
  return [...panel.querySelectorAll('.jp-Notebook .jp-Cell')]
    .map((cell, i) => cell.querySelector('.jp-OutputArea-output .jupyter-widgets') ? i : -1)
    .filter(i => i >= 0);
}}"""

_JS_SAVED = """() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')"""

_JS_CONTENT_HEIGHT = f"""() => {{
  const panel = document.querySelector('{_PANEL}');
  const scroller = panel.querySelector('.jp-WindowedPanel-outer');
  return [scroller.scrollHeight, scroller.clientHeight];
}}"""


@dataclass
class ChapterResult:
    """What one chapter looked like after Run All."""

    name: str
    cells: int = 0
    ran: int = 0
    seconds: float = 0.0
    widgets_live: int = 0
    widgets_expected: int = 0
    problems: list[str] = field(default_factory=list)
    screenshot: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        return (
            f"{self.name:42} cells {self.ran:>3}/{self.cells:<3} {self.seconds:6.1f} s  "
            f"widgets {self.widgets_live}/{self.widgets_expected}  "
            f"errors {len(self.problems)}  {'OK' if self.ok else 'FAIL'}"
        )

    def report(self) -> str:
        text = self.line()
        for problem in self.problems:
            text += f"\n    {problem}"
        if self.screenshot:
            text += f"\n    screenshot: {self.screenshot}"
        return text


def check_chapter(page: Page, server: LabServer, notebook: Path, out_dir: Path) -> ChapterResult:
    """Open one chapter, run all its cells and check the result; never raises on a finding."""
    # A translated chapter is served from its folder (chapters/zh/) and named after it.
    name = notebook.relative_to(CHAPTERS).as_posix() if notebook.is_relative_to(CHAPTERS) else ""
    name = name or notebook.name
    label = name.removesuffix(".ipynb").replace("/", "-")
    committed = json.loads(notebook.read_text(encoding="utf-8"))
    served = server.served(name)
    result = ChapterResult(
        name=label,
        cells=len(_code_cells(committed)),
        widgets_expected=stored_widget_views(committed),
    )
    try:
        _run_all(page, server, served, result, len(committed["cells"]), out_dir)
    except Exception as exc:  # a timeout, a page that broke: a finding, with a screenshot
        result.problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        result.screenshot = _screenshot(page, out_dir / f"{label}.png")
        _shut_down_kernel(page, server, Path(name).name)
    return result


def _run_all(
    page: Page,
    server: LabServer,
    served: Path,
    result: ChapterResult,
    total_cells: int,
    out_dir: Path,
) -> None:
    opened = served.relative_to(server.root / "chapters").as_posix()  # zh/09_... for a translation
    page.goto(server.notebook_url(opened), timeout=NOTEBOOK_OPEN * 1000)
    page.wait_for_function(_JS_READY, arg=total_cells, timeout=NOTEBOOK_OPEN * 1000)
    _close_left_sidebar(page)

    started = time.monotonic()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(_JS_RUN_FINISHED, timeout=RUN_ALL * 1000, polling=250)
    result.seconds = time.monotonic() - started

    # Widgets render after their cell has finished: give them time, then look.
    with contextlib.suppress(Exception):
        page.wait_for_function(_JS_WIDGETS_SETTLED, timeout=WIDGETS_SETTLE * 1000)
    widgets: dict[str, Any] = page.evaluate(_JS_WIDGETS)
    result.widgets_live = int(widgets["live"])
    if widgets["loading"]:
        result.problems.append(f"{widgets['loading']} widgets still say 'Loading widget...'")
    for text in widgets["broken"]:
        result.problems.append(f"widget not displayed: {text}")
    _widget_screenshots(page, served, result.name, out_dir / "widgets")
    if result.widgets_live < result.widgets_expected:
        result.problems.append(
            f"{result.widgets_live} live widgets, the notebook stores "
            f"{result.widgets_expected} widget outputs"
        )

    # An error and a warning look the same in the page (both are stderr-styled text), so the
    # errors are read from the notebook file, saved from the page.
    before = served.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    page.wait_for_function(_JS_SAVED, timeout=SAVE * 1000)
    deadline = time.monotonic() + SAVE
    while served.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.1)
    if served.stat().st_mtime_ns == before:
        result.problems.append("the notebook could not be saved to read its outputs")
        return
    saved = json.loads(served.read_text(encoding="utf-8"))
    # Counted in the file: a cell whose code is folded away shows no prompt in the page.
    result.ran = sum(1 for c in _code_cells(saved) if c.get("execution_count") is not None)
    if result.ran < result.cells:
        result.problems.append(
            f"{result.cells - result.ran} code cells did not run (Run All stops at an error)"
        )
    result.problems.extend(error_outputs(saved))


def _widget_screenshots(page: Page, served: Path, stem: str, out_dir: Path) -> None:
    """One picture of each live widget's output, named ``<chapter>-<cell id>.png``: the
    course's website shows these where a static page cannot run the widget (copy them to
    ``images/widgets/``; docs/README.md says when)."""
    ids = [cell.get("id", "") for cell in json.loads(served.read_text(encoding="utf-8"))["cells"]]
    for index in page.evaluate(_JS_WIDGET_CELLS):
        output = page.locator(f"{_PANEL} .jp-Notebook .jp-Cell").nth(index)
        out_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):  # a picture is a courtesy, never a finding
            output.locator(".jp-Cell-outputArea").screenshot(
                path=str(out_dir / f"{stem}-{ids[index]}.png"), timeout=10_000
            )


def _close_left_sidebar(page: Page) -> None:
    """More room for the notebook in the screenshot: fold the file browser away."""
    current = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if current.count():
        current.first.click()  # clicking the open tab folds its panel
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").wait_for(
            state="detached", timeout=10_000
        )


def _screenshot(page: Page, path: Path) -> Path | None:
    """The whole notebook in one picture: the window is made as tall as the notebook."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        content, visible = page.evaluate(_JS_CONTENT_HEIGHT)
        height = min(VIEWPORT["height"] + max(0, content - visible), MAX_SCREENSHOT_HEIGHT)
        page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        page.wait_for_function(  # the notebook has taken the new height
            f"""(want) => document.querySelector(
              '{_PANEL} .jp-WindowedPanel-outer').clientHeight >= want""",
            arg=visible + height - VIEWPORT["height"] - 2,
            timeout=10_000,
        )
        page.evaluate(
            f"() => {{ document.querySelector('{_PANEL} .jp-WindowedPanel-outer').scrollTop = 0; }}"
        )
        page.screenshot(path=str(path))
        return path
    except Exception:
        with contextlib.suppress(Exception):
            page.set_viewport_size(VIEWPORT)
            page.screenshot(path=str(path))
            return path
        return None
    finally:
        with contextlib.suppress(Exception):
            page.set_viewport_size(VIEWPORT)


def _shut_down_kernel(page: Page, server: LabServer, notebook: str) -> None:
    """Stop the chapter's kernel (through the browser's connection, not a Python socket)."""
    headers = {"Authorization": f"token {server.token}"}
    with contextlib.suppress(Exception):
        sessions = page.request.get(f"{server.base_url}/api/sessions", headers=headers).json()
        for session in sessions:
            if Path(session.get("path", "")).name == notebook:
                page.request.delete(
                    f"{server.base_url}/api/sessions/{session['id']}", headers=headers
                )


# --- the script -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter names or prefixes (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="screenshot folder")
    args = parser.parse_args(argv)

    chromium = find_chromium()
    if chromium is None:
        print(CHROMIUM_MISSING, file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print(PLAYWRIGHT_MISSING, file=sys.stderr)
        return 2

    notebooks = chapter_notebooks(args.chapters)
    results = []
    started = time.monotonic()
    with jupyter_lab() as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_options(chromium))
        try:
            for notebook in notebooks:
                context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
                try:
                    result = check_chapter(context.new_page(), server, notebook, args.out)
                finally:
                    context.close()
                results.append(result)
                print(result.report() if not result.ok else result.line(), flush=True)
        finally:
            browser.close()
    failed = [r.name for r in results if not r.ok]
    print(
        f"{len(results) - len(failed)}/{len(results)} chapters OK in "
        f"{time.monotonic() - started:.0f} s; screenshots in {args.out}"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
