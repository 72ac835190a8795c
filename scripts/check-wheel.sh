#!/usr/bin/env bash
# The package as a user gets it. Builds the sdist and the wheel from this checkout, checks them
# with `twine check --strict`, installs the wheel (server and math extras, pinned by
# constraints.txt) into a new virtual environment, and from there, outside the checkout, serves
# gsm8k (`envhub serve gsm8k`, one reset over HTTP) and runs one `envhub verify`.
# Run by .ci/run; needs `build` and `twine` (the dev extra) in $PYTHON. Leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
unset PYTHONPATH PYTHONHOME  # the installed wheel is what runs, never a checkout on the path
work=$(mktemp -d "${TMPDIR:-/tmp}/envhub-wheel.XXXXXX")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

echo "check-wheel: building the sdist and the wheel"
"$PYTHON" -m build --sdist --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log"; exit 1; }
"$PYTHON" -m twine check --strict "$work"/dist/*
wheel=$(ls "$work"/dist/*.whl)

echo "check-wheel: installing $(basename "$wheel")[server,math] into a new virtual environment"
"$PYTHON" -m venv "$work/venv"
bin=$work/venv/bin
"$bin/python" -m pip install -q -c constraints.txt "$wheel[server,math]"

cd "$work"  # away from the checkout: what runs is the installed wheel
where=$("$bin/python" -c 'import envhub; print(envhub.__file__)')
case $where in "$work"/venv/*) ;; *) echo "check-wheel: envhub came from $where"; exit 1 ;; esac

echo "check-wheel: envhub verify gsm8k"
out=$("$bin/envhub" verify gsm8k --gold 42 --response 'so the answer is 42. #### 42')
echo "$out"
"$bin/python" -c 'import json, sys; s = json.loads(sys.argv[1]); assert s["status"] == "ok" and s["reward"] > 0, s' "$out"

port=$("$bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "check-wheel: envhub serve gsm8k --port $port"
"$bin/envhub" serve gsm8k --port "$port" >"$work/serve.log" 2>&1 &
server=$!
"$bin/python" - "$port" <<'EOF' || { tail -n 40 "$work/serve.log"; exit 1; }
import json, sys, time, urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(120):
    try:
        urllib.request.urlopen(f"{base}/health", timeout=2)
        break
    except OSError:
        time.sleep(0.5)
else:
    raise SystemExit("check-wheel: the server never answered /health")
req = urllib.request.Request(f"{base}/reset", data=b'{"seed": 0}',
                             headers={"content-type": "application/json"})
opened = json.load(urllib.request.urlopen(req, timeout=30))
assert opened["messages"][-1]["role"] == "user", opened
print("check-wheel: served gsm8k and played a reset:", opened["info"]["task_id"])
EOF
echo "check-wheel: ok"
