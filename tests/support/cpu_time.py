"""CPU seconds one call takes on this thread: the measure for "stays linear on hostile input".

Wall time fails on a loaded CI machine; process CPU time fails too once a long test run holds
server and pool threads that burn CPU beside the call, or a full collection of its heap lands
inside the timed window (CI saw 0.75 s charged to a 4 ms parse). This thread's CPU time with
the collector paused counts the call alone. Only for calls that do their work on this thread.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def cpu_seconds(call: Callable[..., object], *args: Any) -> float:
    """The CPU seconds ``call(*args)`` took on this thread."""
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        call(*args)
        return time.thread_time() - start
    finally:
        gc.enable()
