"""What the scripted model answers to a session-memory extraction, so memory runs offline.

A responder for ``ScriptedModel.answer_when``: ``model.answer_when(is_extraction_request,
scripted_extraction)`` makes the model answer the memory fork (``harness.memory``) by reading
the conversation in the request and the memory file quoted in its directive, and editing the
file with ``edit_file`` calls, as a real model would. Nothing is typed in: every fact is built
from what the request holds.

What it records, and from where:

* Task: the user's first request, then each later request that is not a correction;
* Errors and corrections: what the user corrected (a later message with words such as
  "actually", "instead", "not", "wrong"), and every tool call that failed;
* Files and functions: each file read, edited or written, and how (an update supersedes the
  file's earlier fact);
* Learnings: the model's own sentences that start with "Note:";
* Current state: the model's last words (superseding the previous state);
* Worklog: a tally of the tool calls since the last worklog line.

Like a real model it only knows what is in the request: after a summary dropped the old
messages, it cannot record what they said. It lives next to the scripted model (it is part of
the test double); the memory code never imports it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness import messages as m
from harness.compaction.pinned import PINNED_HEADING
from harness.compaction.session_memory import MEMORY_PREAMBLE
from harness.compaction.summary import CONTINUE, REREAD, SUMMARY_PREAMBLE
from harness.memory import EXTRACTION_MARKER, Fact, fact_line, parse
from harness.model.scripted import Reply, Request, ToolCall

CORRECTION_WORDS = re.compile(
    r"\b(actually|instead|correction|not|don't|do not|never|wrong|rather|no longer)\b",
    re.IGNORECASE,
)
_FILE_VERBS = {"read_file": "read", "edit_file": "edited", "write_file": "written"}
DONE = "The session memory is up to date."


def is_extraction_request(request: Request) -> bool:
    """True for every request of a memory fork (its directive is in a user message)."""
    return any(
        msg["role"] == "user" and EXTRACTION_MARKER in m.text_of(msg) for msg in request.messages
    )


def _short(text: str, width: int = 240) -> str:
    flat = " ".join(text.replace("<!--", "").replace("-->", "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _quoted_memory(directive: str) -> tuple[str, str]:
    """The memory file's path and text, as the directive quotes them."""
    path = directive.split(EXTRACTION_MARKER, 1)[1].split(" from the conversation", 1)[0].strip()
    found = re.search(r"```markdown\n(.*?)```", directive, re.DOTALL)
    return path, found.group(1) if found else ""


def _prompts(conversation: Sequence[dict[str, Any]]) -> list[str]:
    """What the user typed, in order (not tool results, memory, summaries or continuations)."""
    out = []
    for msg in conversation:
        if msg["role"] != "user":
            continue
        for block in m.blocks(msg):
            said = str(block.get("text", "")) if block.get("type") == "text" else ""
            harness_wrote = (
                said.startswith((MEMORY_PREAMBLE, SUMMARY_PREAMBLE, CONTINUE, PINNED_HEADING))
                or REREAD in said.split("\n", 1)[0]
            )
            if said.strip() and not harness_wrote:
                out.append(said)
    return out


def _new_facts(conversation: Sequence[dict[str, Any]], memory: list[Fact]) -> list[Fact]:
    """Facts the conversation holds that the memory does not, some superseding old ones."""
    texts = {f.text for f in memory}
    sources = {f.source for f in memory}
    out: list[Fact] = []

    def add(section: str, text: str, source: str, supersedes: str | None = None) -> None:
        fact = Fact(section=section, text=_short(text), source=source, supersedes=supersedes)
        if fact.text not in texts:
            texts.add(fact.text)
            out.append(fact)

    prompts = _prompts(conversation)
    has_task = any(f.section == "Task" for f in memory)
    for n, said in enumerate(prompts):
        if n == 0 and not has_task:
            add("Task", said, "user")
        elif n > 0 and CORRECTION_WORDS.search(said):
            add("Errors and corrections", f"The user corrected: {said}", "user")
        elif n > 0:
            add("Task", f"Then: {said}", "user")

    calls = [u for msg in conversation if msg["role"] == "assistant" for u in m.tool_uses(msg)]
    results = {
        str(r["tool_use_id"]): r
        for msg in conversation
        if msg["role"] == "user"
        for r in m.tool_results(msg)
    }
    for call in calls:
        result = results.get(str(call["id"]))
        if result is not None and result.get("is_error") and str(call["id"]) not in sources:
            first = m.text_of({"role": "user", "content": [result]}).strip().splitlines()
            target = call["input"].get("path") or call["input"].get("command") or ""
            add(
                "Errors and corrections",
                f"{call['name']} {target} failed: {first[0] if first else 'no detail'}",
                str(call["id"]),
            )

    verbs: dict[str, list[str]] = {}
    last_call: dict[str, str] = {}
    for call in calls:
        path = call["input"].get("path")
        if call["name"] in _FILE_VERBS and isinstance(path, str):
            verb = _FILE_VERBS[str(call["name"])]
            if verb not in verbs.setdefault(path, []):
                verbs[path].append(verb)
            last_call[path] = str(call["id"])
    for path, done in verbs.items():
        old = next(
            (
                f
                for f in memory
                if f.section == "Files and functions" and f.text.startswith(f"{path}: ")
            ),
            None,
        )
        known = old.text.split(": ", 1)[1].split(", ") if old else []
        union = known + [v for v in done if v not in known]
        if union != known:
            add(
                "Files and functions",
                f"{path}: {', '.join(union)}",
                last_call[path],
                old.id if old else None,
            )

    words = [
        m.text_of(msg) for msg in conversation if msg["role"] == "assistant" and m.text_of(msg)
    ]
    for text in words:
        # A sentence ends at a full stop followed by a space or the end (not one in "0.01").
        for sentence in re.findall(r"Note: (.*?)(?:\.(?=\s|$)|$)", text, re.MULTILINE):
            add("Learnings", sentence, "assistant")

    # The scripted model numbers its calls (toolu_0001, ...): the worklog goes on after the
    # highest number it logged, even when the call it named was compacted away.
    logged = [_number(f.source) for f in memory if f.section == "Worklog"]
    since = [c for c in calls if _number(str(c["id"])) > max(logged, default=-1)]
    if since:
        tally: dict[str, int] = {}
        for call in since:
            tally[str(call["name"])] = tally.get(str(call["name"]), 0) + 1
        line = ", ".join(f"{name} ×{n}" for name, n in tally.items())
        span = f"{since[0]['id']}..{since[-1]['id']}" if len(since) > 1 else str(since[0]["id"])
        add("Worklog", f"{len(since)} tool calls ({span}): {line}", str(since[-1]["id"]))

    if words:
        state = next((f for f in memory if f.section == "Current state"), None)
        last_id = str(calls[-1]["id"]) if calls else "assistant"
        add("Current state", f"Last step: {words[-1]}", last_id, state.id if state else None)
    return out


def _number(tool_use_id: str) -> int:
    found = re.search(r"(\d+)$", tool_use_id)
    return int(found.group(1)) if found else -1


def _section_block(lines: list[str], section: str) -> tuple[int, int]:
    """Where a section's heading and facts are in the file's lines: [start, end)."""
    start = lines.index(f"## {section}")
    end = start + 1
    while end < len(lines) and lines[end].startswith(("- ", "* ")):
        end += 1
    return start, end


def _edits(path: str, text: str, new: list[Fact]) -> list[ToolCall]:
    """``edit_file`` calls, each anchored on one line, as a model edits: a superseded fact's
    line is replaced, a new fact goes after its section's last line (or its heading).

    The calls run one after another, so each is worked out on the text the ones before it
    leave behind.
    """
    calls = []
    for fact in new:
        lines = text.splitlines()
        line = fact_line(fact)
        old = next(
            (ln for ln in lines if fact.supersedes and f"<!-- {fact.supersedes} " in ln), None
        )
        if old is not None:
            edit = {"old_string": old, "new_string": line}
        else:
            _, end = _section_block(lines, fact.section)
            anchor = lines[end - 1]
            # The heading of an empty section also starts the next section's line, so it
            # carries its line break; a fact's line is unique by its comment.
            edit = {"old_string": anchor + "\n", "new_string": f"{anchor}\n{line}\n"}
        text = text.replace(edit["old_string"], edit["new_string"], 1)
        calls.append(ToolCall("edit_file", {"path": path, **edit}))
    return calls


def scripted_extraction(request: Request) -> Reply:
    """The memory fork's answer: edits built from the request, or "up to date"."""
    last = request.last_message
    if last.get("role") != "user" or EXTRACTION_MARKER not in m.text_of(last):
        return Reply(text=DONE)  # a later turn of the fork: its edits have been answered
    directive = next(
        str(b.get("text")) for b in m.blocks(last) if EXTRACTION_MARKER in str(b.get("text", ""))
    )
    path, text = _quoted_memory(directive)
    names = {str(t.get("name")) for t in request.tools or []}
    if "edit_file" not in names:
        return Reply(text="I have no edit_file tool, so I cannot update the memory file.")
    try:
        memory = parse(text)
    except ValueError:
        return Reply(text="The memory file is not in a form I can edit.")
    rest = [b for b in m.blocks(last) if EXTRACTION_MARKER not in str(b.get("text", ""))]
    conversation = [*request.messages[:-1], *([{"role": "user", "content": rest}] if rest else [])]
    new = _new_facts(conversation, memory)
    if not new:
        return Reply(text=DONE)
    return Reply(
        text=f"Recording {len(new)} fact{'' if len(new) == 1 else 's'} in the session memory.",
        tool_calls=tuple(_edits(path, text, new)),
    )


__all__ = ["DONE", "is_extraction_request", "scripted_extraction"]
