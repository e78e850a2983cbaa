"""The scripted model's stream: what ``ScriptedModel.stream(...)`` returns, offline.

``stream(...)`` is ``client.messages.stream(...)``: a context manager whose
``get_final_message()`` returns what ``create`` would (live mode streams, chapter 06).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from anthropic.types import Message


class ScriptedStream:
    """What ``ScriptedModel.stream(...)`` returns: the SDK's ``MessageStream``, offline.

    As with the SDK, an error the API answers with is raised when the stream opens (on
    ``with``), and ``get_final_message()`` is the whole reply. ``text_stream`` yields its text
    in pieces, as the SDK's does while the reply arrives.
    """

    def __init__(self, open_: Callable[[], Message]) -> None:
        self._open = open_
        self._message: Message | None = None

    def __enter__(self) -> ScriptedStream:
        self._message = self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def get_final_message(self) -> Message:
        if self._message is None:
            raise RuntimeError("use the stream in a `with` block, as the SDK's")
        return self._message

    @property
    def text_stream(self) -> Iterator[str]:
        for block in self.get_final_message().content:
            if block.type == "text":
                for start in range(0, len(block.text), 16):
                    yield block.text[start : start + 16]
