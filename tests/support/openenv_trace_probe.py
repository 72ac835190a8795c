"""OpenEnv's own ``TrainingTrace`` on a trace document, run in the ``openenv`` 0.10 venv.

``python openenv_trace_probe.py`` reads one JSON TrainingTrace on stdin, validates it with
OpenEnv's model (strict: ids, logprobs, masks), passes it through OpenEnv's own
``to_trace_entries`` / ``from_entries`` round trip, and prints the result as JSON; a trace
OpenEnv refuses exits 1 with its error. It imports nothing of envhub.
"""

from __future__ import annotations

import json
import sys

from openenv.core.harness.training import TrainingTrace
from pydantic import ValidationError

try:
    trace = TrainingTrace.model_validate_json(sys.stdin.read())
except ValidationError as e:
    sys.exit(f"OpenEnv refuses the trace: {e}")
again = TrainingTrace.from_entries(trace.to_trace_entries())
print(json.dumps(again.model_dump(mode="json")))
