"""Folder trust: a project's own hooks run only once you have said you trust that project.

A hook is a shell command, and a project's ``.claude/settings.json`` comes with the code you
cloned: opening a stranger's repository must not run the stranger's commands. Claude Code
asks once per folder, at start-up, "Do you trust the files in this folder?" (Yes, proceed /
No, exit), remembers the yes in ``~/.claude.json`` (``projects[path].hasTrustDialogAccepted``,
a parent folder's yes counting too), and runs no hook at all until then
(``shouldSkipHookDueToTrust`` in openclaude ``src/utils/hooks.ts``; the dialog is
``src/components/TrustDialog/TrustDialog.tsx``; code.claude.com/docs/en/security, "Trust
verification"). In ``-p`` (non-interactive) runs trust is implicit.

This module keeps the idea and narrows it to hooks (our choices):

* Your own hooks (user scope) and the machine's policy (managed) always run: you wrote them,
  or your administrator did. Only the project's (project and local scopes) need trust.
* The question is asked lazily, the first time a project hook would run, not at start-up: a
  folder without hooks never asks.
* The answer, yes or no, is remembered per folder in a file of the harness's own
  (:func:`default_store_path`, ``~/.harness/trusted-folders.json``; never Claude Code's
  ``~/.claude.json``), with a fingerprint of the project's hook commands. When they change
  (a ``git pull`` brought a new hook) the question is asked again, showing them: a yes given
  to yesterday's commands is not a yes to today's.
* The file is replaced whole (:func:`harness.atomic.write_atomic`) under a lock, so two
  harnesses answering at once both keep their answer. A broken file is reported
  (:class:`TrustStoreError`) and counts as "not trusted yet"; it is moved aside (``.broken``)
  when the next answer is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.atomic import write_atomic
from harness.settings.schema import ConfiguredHook

STORE_VERSION = 1
MAX_STORE_BYTES = 8 * 1024 * 1024
"""Our cap on the trust file's size: a larger one is treated as broken."""

_NEEDS_TRUST = frozenset({"project", "local"})


def default_store_path(home: Path) -> Path:
    """Where the harness remembers the folders you trust (or not): a file of its own."""
    return home / ".harness" / "trusted-folders.json"


class TrustStoreError(ValueError):
    """The trust file cannot be used; ``str()`` names it and says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def fingerprint(hooks: Sequence[ConfiguredHook]) -> str:
    """A digest of what the project's hooks would run: scope, event, matcher and command of
    each project or local hook (not the timeout, which cannot make a command more harmful).
    Order does not count; a duplicate does not count."""
    rows = sorted({(h.scope, h.event, h.matcher, h.command) for h in hooks if needs_trust(h)})
    text = json.dumps(rows, ensure_ascii=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def needs_trust(hook: ConfiguredHook) -> bool:
    """Whether ``hook`` comes from the project (``.claude/settings*.json``), so needs trust."""
    return hook.scope in _NEEDS_TRUST


@dataclass(frozen=True)
class TrustRequest:
    """What the question shows: the folder, the commands it would run, and why we ask."""

    workspace: Path
    hooks: tuple[ConfiguredHook, ...]
    """The project's hooks that would run once the folder is trusted."""
    changed: bool
    """True when an answer was given before, for other hook commands."""

    def text(self) -> str:
        """The question, ready to print above a yes/no prompt."""
        lead = (
            "The hook commands of this folder changed since you last answered."
            if self.changed
            else "This folder's settings want to run shell commands as hooks."
        )
        lines = [f"{lead}", f"Folder: {self.workspace}"]
        for hook in self.hooks:
            match = f" [{hook.matcher}]" if hook.matcher not in ("", "*") else ""
            lines.append(f"  {hook.event}{match}: {hook.command}   ({hook.source.name})")
        lines.append("Only trust a folder whose files you know (your code, or your team's).")
        lines.append("Do you trust this folder's hooks?")
        return "\n".join(lines)


Ask = Callable[[TrustRequest], bool]
"""Asks the person at the keyboard; only ``True`` means yes (anything else, or raising, is no)."""


class FolderTrust:
    """The trust gate for one workspace: ``allows(hook)`` is what ``SettingsHooks`` asks.

    ``hooks`` are the workspace's configured hooks (:attr:`Settings.hooks`); the question
    lists the project's ones and the fingerprint covers them. A project hook not among them
    is added (and changes the fingerprint). The decision is made once per instance and per
    fingerprint: a session asks at most once unless the hooks change under it.
    """

    def __init__(
        self,
        store_path: Path,
        workspace: Path,
        ask: Ask,
        hooks: Sequence[ConfiguredHook] = (),
        *,
        on_problem: Callable[[str], None] | None = None,
    ) -> None:
        self.store_path = store_path
        self.workspace = workspace
        self._key = _folder_key(workspace)
        self._ask = ask
        self._hooks: list[ConfiguredHook] = []
        for hook in hooks:
            if needs_trust(hook) and hook not in self._hooks:
                self._hooks.append(hook)
        self._on_problem = on_problem
        self._decided: tuple[str, bool] | None = None
        self.problems: list[str] = []
        """Every problem met (broken trust file, failed write, ``ask`` raising)."""

    def allows(self, hook: ConfiguredHook) -> bool:
        """Whether ``hook`` may run: always for user and managed hooks; for the project's,
        once the folder is trusted for its current hook commands (asking if need be)."""
        if not needs_trust(hook):
            return True
        if hook not in self._hooks:
            self._hooks.append(hook)
        return self._decide()

    def status(self) -> bool | None:
        """The remembered answer for the current hook commands (None: never asked, or asked
        about other commands), without asking."""
        entry = self._entry()
        if entry is None or entry.get("fingerprint") != fingerprint(self._hooks):
            return None
        trusted = entry.get("trusted")
        return trusted if isinstance(trusted, bool) else None

    def forget(self) -> None:
        """Drop the remembered answer for this folder: the next project hook asks again."""
        self._decided = None
        try:
            with _locked(self.store_path):
                store = self._read_for_update()
                folders = store["folders"]
                if isinstance(folders, dict) and self._key in folders:
                    del folders[self._key]
                    self._write(store)
        except OSError as error:
            self._problem(f"{self.store_path}: cannot be written ({error})")

    def _decide(self) -> bool:
        current = fingerprint(self._hooks)
        if self._decided is not None and self._decided[0] == current:
            return self._decided[1]
        entry = self._entry()
        if entry is not None and entry.get("fingerprint") == current:
            trusted = entry.get("trusted") is True
            self._decided = (current, trusted)
            return trusted
        request = TrustRequest(self.workspace, tuple(self._hooks), changed=entry is not None)
        try:
            answer = self._ask(request) is True
        except Exception as error:  # a broken prompt is a "no", for this session only
            self._problem(f"asking whether to trust {self.workspace} failed: {error!r}")
            self._decided = (current, False)
            return False
        self._decided = (current, answer)
        self._remember(current, answer)
        return answer

    def _entry(self) -> Mapping[str, Any] | None:
        """This folder's stored entry; None when there is none or the file is broken."""
        try:
            store = read_store(self.store_path)
        except TrustStoreError as error:
            self._problem(f"{error} (the folder counts as not trusted yet)")
            return None
        entry = store["folders"].get(self._key)
        if entry is not None and not isinstance(entry, Mapping):
            self._problem(f"{self.store_path}: the entry for {self._key} is not an object")
            return None
        return entry

    def _remember(self, current: str, trusted: bool) -> None:
        entry = {
            "trusted": trusted,
            "fingerprint": current,
            "commands": sorted({h.command for h in self._hooks}),
        }
        try:
            with _locked(self.store_path):
                store = self._read_for_update()
                store["folders"][self._key] = entry
                self._write(store)
        except OSError as error:
            self._problem(
                f"{self.store_path}: cannot be written ({error}); the answer holds "
                "for this session only"
            )

    def _read_for_update(self) -> dict[str, Any]:
        """The store as it is now (the lock is held); a broken one is moved aside first."""
        try:
            return read_store(self.store_path)
        except TrustStoreError as error:
            if self.store_path.is_dir():
                raise IsADirectoryError(f"{self.store_path} is a folder") from None
            aside = self.store_path.with_name(self.store_path.name + ".broken")
            os.replace(self.store_path, aside)
            self._problem(f"{error}; moved to {aside.name} and started afresh")
            return {"version": STORE_VERSION, "folders": {}}

    def _write(self, store: Mapping[str, Any]) -> None:
        write_atomic(self.store_path, json.dumps(store, indent=2, sort_keys=True) + "\n")

    def _problem(self, message: str) -> None:
        self.problems.append(message)
        if self._on_problem is not None:
            self._on_problem(message)


def read_store(path: Path) -> dict[str, Any]:
    """The trust file as ``{"version": 1, "folders": {path: entry}}`` (empty when absent).
    Raises :class:`TrustStoreError` when it exists but cannot be used."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_STORE_BYTES + 1)
    except FileNotFoundError:
        return {"version": STORE_VERSION, "folders": {}}
    except IsADirectoryError:
        raise TrustStoreError(path, "is a folder, not a file") from None
    except OSError as error:
        raise TrustStoreError(path, f"cannot be read ({error.strerror or error})") from None
    if len(raw) > MAX_STORE_BYTES:
        raise TrustStoreError(path, f"is larger than {MAX_STORE_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise TrustStoreError(path, f"is not valid JSON ({str(error)[:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("folders"), dict):
        raise TrustStoreError(path, 'must be an object with a "folders" object')
    if data.get("version") != STORE_VERSION:
        raise TrustStoreError(path, f"has version {data.get('version')!r}, not {STORE_VERSION}")
    return data


def _folder_key(workspace: Path) -> str:
    """The folder's name in the store: absolute, symbolic links resolved."""
    try:
        return str(workspace.resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(workspace)


@contextlib.contextmanager
def _locked(store_path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the store (``<name>.lock``) while it is read and
    rewritten, so two processes cannot both read the old file and lose one's answer. The
    lock is the operating system's (``flock``): a process that dies lets it go. Windows has
    no ``fcntl``: there, writes are whole but not serialised."""
    store_path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = store_path.with_name(store_path.name + ".lock")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Windows
        yield
        return
    with open(lock_path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


__all__ = [
    "STORE_VERSION",
    "Ask",
    "FolderTrust",
    "TrustRequest",
    "TrustStoreError",
    "default_store_path",
    "fingerprint",
    "needs_trust",
    "read_store",
]
