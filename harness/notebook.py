"""What the chapters use to show things: source code, messages, requests, events.

Notebooks import the package's real code and show it with :func:`show`, so what a learner
reads is exactly what runs (no copies that drift).
"""

from __future__ import annotations

import inspect
from typing import Any

from IPython.display import Code


def show(obj: Any) -> Code:
    """The source of a function, class, method or module, syntax-highlighted.

    Use it as the last expression of a cell: ``show(harness.messages.validate)``.
    """
    return Code(inspect.getsource(obj), language="python")
