"""Opening a file the harness wrote, when something else may have swapped it since.

The harness reads back files it wrote itself: oversized tool results (``@tool-results/<id>.txt``,
:mod:`harness.tools.storage`) and, later in the course, the logs of background commands. Between
the write and the read, the model's own tools, which run as you, may have replaced the file: by a
symlink to a file outside (``ln -s ~/.ssh/id_ed25519``), by a FIFO (opening one waits for a
writer, so the tool call would hang), by a hard link to a secret (a plain file too), or by a huge
sparse file.

Checking the path and then opening it leaves a gap in which the swap can happen (a
"time-of-check to time-of-use" race, CWE-367). So :func:`open_owned` checks what it opened, not
the name: the folder is opened once, without following a link, and compared with the one the
harness made; the file is opened relative to that open folder (``dir_fd``), without following a
link (``O_NOFOLLOW``) and without waiting (``O_NONBLOCK``); then the open file itself must be a
plain file with one name (``fstat``). Whatever is read afterwards comes from that descriptor, so
what was checked is what is read. How much to read is the caller's to cap: a log has a size
limit, a stored result the size it was written with.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotOwned(OSError):
    """A file the harness wrote that is no longer its own: its folder was replaced or removed,
    or the file became a link, a FIFO, a device or a hard link to another file."""


def open_owned(path: Path, folder: os.stat_result | None = None) -> int | None:
    """A file descriptor for reading ``path``, a file the harness wrote, or ``None`` if it does
    not exist (yet). The caller closes it. Refused with :class:`NotOwned`:

    * a folder that is not the one the harness made (``folder``: its ``os.stat`` then): a link
      to another folder, or a new folder of the same name; or a folder that is gone;
    * a name that is a link (``O_NOFOLLOW``), a FIFO (opened without waiting for a writer,
      ``O_NONBLOCK``, then refused), a device, or a file with more than one name (a hard link
      to someone's key is a regular file too).
    """
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise NotOwned(f"the folder {path.parent} is gone") from None
    except OSError as error:  # ELOOP / ENOTDIR: a link or a file where the folder was
        raise NotOwned(f"the folder {path.parent} is no longer a folder") from error
    try:
        if folder is not None:
            info = os.fstat(parent)
            if (info.st_dev, info.st_ino) != (folder.st_dev, folder.st_ino):
                raise NotOwned(f"the folder {path.parent} was replaced")
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(path.name, flags, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as error:  # ELOOP: a link
            raise NotOwned(f"{path.name} is no longer the harness's file (a link)") from error
    finally:
        os.close(parent)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise NotOwned(f"{path.name} is no longer the harness's file (not a plain file)")
    return fd
