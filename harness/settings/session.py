"""The hooks of one session, from its settings files, behind folder trust, in one call.

:func:`session_hooks` is the wiring the command line and chapter 13 share: read the settings
files (:func:`~harness.settings.files.load_settings`), make the trust gate for the folder
(:class:`~harness.settings.trust.FolderTrust`), and the :class:`SettingsHooks` that asks it
before a project's hook runs. Give the result's ``hooks`` to the agent twice: as a plugin,
and installed into the tool runner's hooks (``hooks.install(Hooks())``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.settings.files import Settings, load_settings
from harness.settings.hooks import SettingsHooks
from harness.settings.trust import Ask, FolderTrust


@dataclass(frozen=True)
class SessionHooks:
    settings: Settings
    trust: FolderTrust
    hooks: SettingsHooks


def session_hooks(
    workspace: Path,
    home: Path | None,
    *,
    ask: Ask,
    store: Path,
    session_id: str,
    transcript_path: str | Path = "",
    permission_mode: str = "default",
    managed_dir: Path | None = None,
    source: str | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> SessionHooks:
    """The settings of ``workspace`` (and ``home``'s, and ``managed_dir``'s), the folder's
    trust gate (answers kept in ``store``, questions put to ``ask``), and the hooks."""
    settings = load_settings(workspace, home, managed_dir=managed_dir)
    trust = FolderTrust(store, workspace, ask, settings.hooks, on_problem=on_problem)
    hooks = SettingsHooks(
        settings.hooks,
        workspace=workspace,
        session_id=session_id,
        transcript_path=transcript_path,
        allows=trust.allows,
        permission_mode=permission_mode,
        source=source,
    )
    return SessionHooks(settings, trust, hooks)


__all__ = ["SessionHooks", "session_hooks"]
