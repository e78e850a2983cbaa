"""Claude Code's settings files, read by the harness: hooks, and folder trust (chapter 13).

* :mod:`harness.settings.schema`: the ``hooks`` section checked entry by entry
  (:class:`~harness.settings.schema.ConfiguredHook`, :func:`~harness.settings.schema.hooks_in`).
* :mod:`harness.settings.files`: the user, project, local (and managed) ``settings.json``
  files, found, read and merged in Claude Code's order
  (:func:`~harness.settings.files.load_settings`).
* :mod:`harness.settings.trust`: whether the project's own hooks may run
  (:class:`~harness.settings.trust.FolderTrust`).
* :mod:`harness.settings.session`: all of it for one session, with its hooks
  (:func:`~harness.settings.session.session_hooks`).
"""

from harness.settings.files import Settings, SettingsError, SettingsFile, load_settings
from harness.settings.schema import ConfiguredHook, Scope, hooks_in
from harness.settings.trust import FolderTrust, TrustRequest, TrustStoreError, default_store_path

__all__ = [
    "ConfiguredHook",
    "FolderTrust",
    "Scope",
    "Settings",
    "SettingsError",
    "SettingsFile",
    "TrustRequest",
    "TrustStoreError",
    "default_store_path",
    "hooks_in",
    "load_settings",
]
