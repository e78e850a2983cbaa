"""What the chapters use to show things, in one import: ``from harness.notebook import ...``.

The views live in ``views`` (every chapter), ``approvals`` (approving tool calls with buttons)
and ``cache`` (the prompt cache); this file only re-exports them.
"""

from harness.notebook.approvals import WidgetApprover, run_in_background
from harness.notebook.cache import cache_table, prefix_table
from harness.notebook.views import (
    Rendered,
    live_cell,
    price_table,
    render_error,
    render_message,
    render_request,
    show,
    table,
    usage_table,
    usd,
)

__all__ = [
    "Rendered",
    "WidgetApprover",
    "cache_table",
    "live_cell",
    "prefix_table",
    "price_table",
    "render_error",
    "render_message",
    "render_request",
    "run_in_background",
    "show",
    "table",
    "usage_table",
    "usd",
]
