"""The views every chapter uses: source code, messages, requests, usage, tables, errors.

Notebooks import the package's real code and show it with :func:`show`, so what a learner
reads is exactly what runs (no copies that drift). The ``render_*`` helpers turn the model
boundary's objects into compact views with both a ``text/plain`` and a ``text/html`` form.
Every view is deterministic (no object ids, addresses, timestamps or absolute paths), because
the notebooks' stored outputs are compared byte for byte on every test run.
"""

from __future__ import annotations

import html
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from anthropic import APIStatusError
from anthropic.types import Usage
from IPython.display import Code
from pydantic import BaseModel

from harness import pricing
from harness.model.base import is_live, model_name
from harness.model.scripted import Request

_BOX = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 12.5px; line-height: 1.45;"
    " border: 1px solid rgba(128,128,128,0.45); border-radius: 6px; padding: 6px 10px;"
    " margin: 2px 0; max-width: 900px"
)
_MUTED = "opacity: 0.7"
_TAG_COLOURS = {
    "text": "rgba(128,128,128,0.25)",
    "tool_use": "rgba(230,145,30,0.35)",
    "tool_result": "rgba(60,160,90,0.35)",
    "error": "rgba(210,60,60,0.4)",
    "thinking": "rgba(130,90,190,0.35)",
}


class Rendered:
    """A view of one thing: plain text for ``print`` and text output, HTML for Jupyter."""

    def __init__(self, text: str, html: str) -> None:
        self.text = text
        self.html = html

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


def show(obj: Any) -> Code:
    """The source of a function, class, method or module, syntax-highlighted.

    Use it as the last expression of a cell: ``show(harness.messages.validate)``. The first
    line names the file the code lives in, relative to the project (``harness/...``).
    """
    module = inspect.getmodule(obj)
    name = module.__name__ if module is not None else ""
    file = name.replace(".", "/") + ("/__init__.py" if hasattr(module, "__path__") else ".py")
    where = f"# {file}\n" if name.split(".")[0] == "harness" else ""
    source = where + inspect.getsource(obj)
    return Code(source, language="python")  # type: ignore[no-untyped-call]


# --- small formatting helpers -------------------------------------------------------------


def live_cell(what: str, cost: str, *, env: Mapping[str, str] | None = None) -> bool:
    """Whether a chapter's optional live cell should run, and a line that says which way.

    With ``ANTHROPIC_API_KEY`` set it announces the live run (``what``, on which model, at
    about ``cost``) and returns True; without a key it says the cell was skipped and what it
    would have done, so the stored output is the same on every offline machine.
    """
    if is_live(env):
        print(f"Live: {what} on {model_name(env)} (expected cost {cost}).")
        return True
    print(
        f"Skipped: this cell {what} against the real API (expected cost {cost}). "
        "Set ANTHROPIC_API_KEY before starting Jupyter to run it."
    )
    return False


def usd(amount: float) -> str:
    """Dollars, with as many decimals as a per-request amount needs.

    ``$1.30``, ``$0.0120``, ``$0.000771``: two decimals from a dollar up, four down to a
    tenth of a cent, six below that.
    """
    if amount == 0:
        return "$0"
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    if abs(amount) >= 0.001:
        return f"${amount:.4f}"
    return f"${amount:.6f}"


def _short(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_none=True)
    return dict(obj)


def _block_parts(block: Mapping[str, Any], limit: int) -> tuple[str, str, str]:
    """(tag shown, colour key, body) for one content block."""
    kind = str(block.get("type", "?"))
    if kind == "text":
        return "text", "text", _short(str(block.get("text", "")), limit)
    if kind == "tool_use":
        tag = f"tool_use {block.get('id', '')}".strip()
        return tag, "tool_use", f"{block.get('name')}({_json(block.get('input', {}))})"
    if kind == "tool_result":
        content = block.get("content", "")
        body = content if isinstance(content, str) else _json(content)
        error = block.get("is_error", False)
        tag = f"tool_result {block.get('tool_use_id', '')}" + (" is_error" if error else "")
        return tag, "error" if error else "tool_result", _short(str(body), limit)
    if kind in ("thinking", "redacted_thinking"):
        return kind, "thinking", _short(str(block.get("thinking", "[redacted]")), limit)
    rest = {k: v for k, v in block.items() if k != "type"}
    return kind, "text", _short(_json(rest), limit)


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [_as_dict(b) for b in content or []]


def _block_list(content: Any, limit: int) -> list[tuple[str, str, str]]:
    return [_block_parts(block, limit) for block in _blocks(content)]


def _blocks_text(content: Any, limit: int, indent: str) -> list[str]:
    # Continuation lines of a multi-line block are indented under the block's first line.
    return [
        f"{indent}[{tag}] " + body.replace("\n", "\n" + indent + "  ")
        for tag, _, body in _block_list(content, limit)
    ]


def _blocks_html(content: Any, limit: int) -> str:
    rows = []
    for tag, colour, body in _block_list(content, limit):
        badge = (
            f'<span style="background: {_TAG_COLOURS[colour]}; border-radius: 4px; '
            f'padding: 0 5px; margin-right: 6px">{html.escape(tag)}</span>'
        )
        rows.append(
            f'<div style="margin: 3px 0; white-space: pre-wrap">{badge}{html.escape(body)}</div>'
        )
    return "".join(rows)


# --- usage ---------------------------------------------------------------------------------


def _usage_numbers(usage: Usage | Mapping[str, Any]) -> dict[str, int]:
    data = _as_dict(usage)
    numbers = {
        "input": int(data.get("input_tokens") or 0),
        "cache write": int(data.get("cache_creation_input_tokens") or 0),
        "cache read": int(data.get("cache_read_input_tokens") or 0),
        "output": int(data.get("output_tokens") or 0),
    }
    # The whole prompt is all three input fields: `input_tokens` counts only uncached tokens.
    numbers["prompt"] = numbers["input"] + numbers["cache write"] + numbers["cache read"]
    return numbers


def _usage_line(usage: Usage | Mapping[str, Any]) -> str:
    n = _usage_numbers(usage)
    return (
        f"input {n['input']:,} · cache write {n['cache write']:,} · cache read "
        f"{n['cache read']:,} · output {n['output']:,} (prompt {n['prompt']:,})"
    )


# --- messages and requests ----------------------------------------------------------------


def render_message(message: Any, *, limit: int = 400) -> Rendered:
    """A model reply (an SDK ``Message``) or an API message dict, compactly.

    Shows the role, each content block (text cut to ``limit`` characters), and, for a reply,
    its id, model, ``stop_reason`` and ``usage``.
    """
    data = _as_dict(message)
    head = " · ".join(str(data[k]) for k in ("role", "id", "model") if data.get(k))
    lines = [head, *_blocks_text(data.get("content"), limit, "  ")]
    foot: list[str] = []
    if data.get("stop_reason") is not None:
        sequence = f" ({data['stop_sequence']!r})" if data.get("stop_sequence") else ""
        foot.append(f"stop_reason: {data['stop_reason']}{sequence}")
    if data.get("usage") is not None:
        foot.append(f"usage: {_usage_line(data['usage'])}")
    lines.extend(foot)
    body = _blocks_html(data.get("content"), limit)
    foot_html = "".join(f'<div style="{_MUTED}">{html.escape(line)}</div>' for line in foot)
    page = f'<div style="{_BOX}"><div><b>{html.escape(head)}</b></div>{body}{foot_html}</div>'
    return Rendered("\n".join(lines), page)


def render_request(request: Request, *, limit: int = 200) -> Rendered:
    """A request as the scripted model received it: settings, system, tools, messages."""
    head = (
        f"request · {request.model} · max_tokens {request.max_tokens:,} · "
        f"{request.input_tokens:,} input tokens (estimated)"
    )
    settings: list[str] = []
    if request.system is not None:
        system = request.system
        shown = (
            system if isinstance(system, str) else " ".join(str(b.get("text", "")) for b in system)
        )
        settings.append(f"system: {_short(shown, limit)}")
    if request.tools:
        settings.append("tools: " + ", ".join(str(t.get("name")) for t in request.tools))
    settings.extend(f"{key}: {_json(value)}" for key, value in sorted(request.extra.items()))
    lines = [head, *settings]
    parts = [f"<div><b>{html.escape(head)}</b></div>"]
    parts += [f'<div style="{_MUTED}">{html.escape(s)}</div>' for s in settings]
    for i, message in enumerate(request.messages):
        label = f"messages[{i}] {message.get('role')}"
        lines.append(label)
        lines.extend(_blocks_text(message.get("content"), limit, "  "))
        parts.append(
            f'<div style="margin-top: 4px"><b>{html.escape(label)}</b></div>'
            f'<div style="margin-left: 14px">{_blocks_html(message.get("content"), limit)}</div>'
        )
    return Rendered("\n".join(lines), f'<div style="{_BOX}">{"".join(parts)}</div>')


# --- tables --------------------------------------------------------------------------------


_NUMBER = re.compile(r"^\$?-?[\d,]*\.?\d+%?$")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) or bool(_NUMBER.match(str(value)))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, title: str = "") -> Rendered:
    """A small table: aligned columns as text, a plain ``<table>`` as HTML.

    Numbers, and strings that read as numbers (``$0.25``, ``1,024``, ``93%``), are
    right-aligned, the rest left-aligned; cells are shown with ``str``. All-empty ``headers``
    give a table with no header row: a list of key/value pairs.
    """
    cells = [[str(c) for c in row] for row in rows]
    numeric = [bool(rows) and all(_is_number(row[i]) for row in rows) for i in range(len(headers))]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(padded).rstrip()

    text = [title] if title else []
    if any(headers):
        text += [line(headers), line(["-" * w for w in widths])]
    text += [line(r) for r in cells]

    def td(value: str, num: bool, tag: str = "td") -> str:
        align = "right" if num else "left"
        return f'<{tag} style="text-align: {align}">{html.escape(value)}</{tag}>'

    head = "".join(td(h, n, "th") for h, n in zip(headers, numeric, strict=True))

    def tr(values: Sequence[str]) -> str:
        # Without headers the first column holds the keys: mark them as row headers.
        first = "th" if not any(headers) else "td"
        pairs = enumerate(zip(values, numeric, strict=True))
        tds = [td(v, n, first if i == 0 else "td") for i, (v, n) in pairs]
        return "<tr>" + "".join(tds) + "</tr>"

    body = "".join(tr(r) for r in cells)
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    page = f"<table>{caption}{thead}<tbody>{body}</tbody></table>"
    return Rendered("\n".join(text), page)


def usage_table(
    usages: Mapping[str, Usage] | Sequence[tuple[str, Usage]], *, model: str | None = None
) -> Rendered:
    """One row per labelled ``usage``: the four token fields, the whole prompt, and the cost.

    The cost column appears when ``model`` is given (priced by ``harness.pricing``); with more
    than one row a total row is added.
    """
    items = list(usages.items()) if isinstance(usages, Mapping) else list(usages)
    headers = ["", "input", "cache write", "cache read", "output", "prompt"]
    if model is not None:
        headers.append("cost")
    rows: list[list[object]] = []
    total = pricing.Cost()
    sums = dict.fromkeys(headers[1:6], 0)
    for label, usage in items:
        n = _usage_numbers(usage)
        row: list[object] = [label, *(n[h] for h in headers[1:6])]
        for h in headers[1:6]:
            sums[h] += n[h]
        if model is not None:
            cost = pricing.cost_of(usage, model)
            total = total + cost
            row.append(usd(cost.total))
        rows.append(row)
    if len(items) > 1:
        rows.append(["total", *sums.values(), *([usd(total.total)] if model else [])])
    return table(headers, [[f"{c:,}" if isinstance(c, int) else c for c in r] for r in rows])


def _dollars(value: float) -> str:
    """``5.00``, ``0.125``: at least two decimals, more only when the price has them."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" * (2 - len(text.split(".")[1]))


def price_table(models: Sequence[str] | None = None) -> Rendered:
    """``harness.pricing.PRICES`` as a table (USD per million tokens), one row per model.

    Each row is the price on ``PRICES_AS_OF``; a model whose price changed on a date says in
    ``earlier`` what it was before (``price_of(model, on=...)`` returns either).
    """
    headers = ["model", "input", "cache write 5m", "cache write 1h", "cache read", "output"]
    headers.append("earlier")
    fields = {
        "input": "input",
        "cache_write_5m": "cache write 5m",
        "cache_write_1h": "cache write 1h",
        "cache_read": "cache read",
        "output": "output",
    }
    rows: list[list[object]] = []
    for name in models if models is not None else list(pricing.PRICES):
        now = pricing.price_of(name)
        earlier = []
        for old in pricing.PRICES[name]:
            if old.since >= now.since:
                continue
            changed = [
                f"{label} {_dollars(getattr(old, field))}"
                for field, label in fields.items()
                if getattr(old, field) != getattr(now, field)
            ]
            earlier.append(f"{', '.join(changed)} before {now.since.isoformat()}")
        values = (now.input, now.cache_write_5m, now.cache_write_1h, now.cache_read, now.output)
        rows.append([name, *(_dollars(v) for v in values), "; ".join(earlier)])
    title = f"USD per million tokens on {pricing.PRICES_AS_OF} ({pricing.PRICES_SOURCE})"
    return table(headers, rows, title=title)


# --- errors --------------------------------------------------------------------------------


def render_error(error: BaseException) -> Rendered:
    """An API error as the harness sees it: class, status, error type, headers, message."""
    parents = [
        c.__name__
        for c in type(error).__mro__[1:]
        if c.__module__.startswith("anthropic") and c.__name__ not in ("APIError", "AnthropicError")
    ]
    rows: list[list[object]] = [["class", type(error).__name__]]
    if parents:
        rows.append(["subclass of", ", ".join(parents)])
    if isinstance(error, APIStatusError):
        body = error.body if isinstance(error.body, Mapping) else {}
        detail = body.get("error", {}) if isinstance(body.get("error"), Mapping) else {}
        rows.append(["status_code", str(error.status_code)])
        rows.append(["error type", str(detail.get("type", error.type))])
        rows.append(["retry-after", error.response.headers.get("retry-after", "(none)")])
        rows.append(["request-id", str(error.request_id)])
        rows.append(["message", str(detail.get("message", error.message))])
    else:
        rows.append(["message", str(error)])
    return table(["", ""], rows)
