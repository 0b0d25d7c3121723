"""The synthesis lock's holders: who holds it, and whether that holder is still alive.

A holder is `host:pid:start:pass`; a pass holds a leased lock row (see the store), and a
holder that is a dead process on this machine may have its lock taken over at once.
"""

from __future__ import annotations

import os
import socket
import uuid

LOCK_NAME = "synthesis"
BOOT = uuid.uuid4().hex[:8]
"""This process's start: a lock holder with our pid but another start is a dead predecessor."""
INTERRUPTED = "interrupted: the process running this pass stopped before it finished"


def holder_dead(holder: str) -> bool:
    """True when a lock holder is a process on this machine that no longer runs.

    A holder is `host:pid:start:pass`. Holders on other machines are never judged
    (their lease still ends them); neither is a pid this user may not signal.
    """
    host, _, rest = holder.partition(":")
    pid_text, _, rest = rest.partition(":")
    start = rest.partition(":")[0] if rest.count(":") >= 1 else None
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return start is not None and start != BOOT
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def new_holder() -> str:
    """A holder name for one pass of this process."""
    return f"{socket.gethostname()}:{os.getpid()}:{BOOT}:{uuid.uuid4().hex[:12]}"
