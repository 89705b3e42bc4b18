#!/usr/bin/env bash
# Two app processes and nginx in front (deploy/nginx-two-processes.conf): http://127.0.0.1:8080.
# Everything runs in the foreground and stops together (Ctrl-C, or the shell's end); logs in $RUN_DIR.
# Needs nginx (Debian: apt-get install nginx-light) and the project's .venv (make run creates it).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR=${RUN_DIR:-$(mktemp -d -t lab-deploy-XXXX)}
mkdir -p "$RUN_DIR"
PYTHON=${PYTHON:-.venv/bin/python}
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT INT TERM
for port in 8501 8502; do
    "$PYTHON" -m streamlit run app/serve.py --server.address 127.0.0.1 --server.port "$port" \
        --server.headless true > "$RUN_DIR/app-$port.log" 2>&1 &
    pids+=($!)
done
for port in 8501 8502; do  # each process answers its health check before nginx sends it anyone
    until curl -fsS "http://127.0.0.1:$port/_stcore/health" > /dev/null 2>&1; do sleep 0.3; done
done
nginx -p "$RUN_DIR" -c "$PWD/deploy/nginx-two-processes.conf" -g "daemon off;" &
pids+=($!)
echo "serving on http://127.0.0.1:8080 (app processes ${pids[0]} ${pids[1]}; logs in $RUN_DIR)"
wait -n
