#!/usr/bin/env bash
# The README's QLM OpenAI API walkthrough, runnable: starts `plan serve` with a QLM plan on a
# free loopback port (and a fresh batch-queue directory), runs the walkthrough's curl calls
# against it, and stops it. Usage: scripts/openai-demo.sh bin/plan qlm.json
set -euo pipefail
plan=${1:?usage: scripts/openai-demo.sh bin/plan qlm.json}
planfile=${2:?usage: scripts/openai-demo.sh bin/plan qlm.json}
dir=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT
"$plan" serve "$planfile" --addr 127.0.0.1:0 --queue-dir "$dir/queue" >"$dir/log" 2>&1 &
pid=$!
U=
for _ in $(seq 100); do
	U=$(grep -o 'addr=http://[0-9.:]*' "$dir/log" | head -1 | cut -d= -f2 || true)
	if [ -n "$U" ] && curl -sf "$U/v2/health/ready" >/dev/null; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then cat "$dir/log" >&2; exit 1; fi
	sleep 0.2
done
[ -n "$U" ] || { echo "plan serve did not start" >&2; cat "$dir/log" >&2; exit 1; }
set -x
curl -sf "$U/v1/models"
curl -sf "$U/v1/completions" -H 'Content-Type: application/json' \
	-d '{"model": "mistral-chat", "prompt": "What is a request group?", "max_tokens": 8, "priority": 0}'
curl -sfN "$U/v1/chat/completions" -H 'Content-Type: application/json' \
	-d '{"model": "mistral-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": true, "stream_options": {"include_usage": true}}'
id=$(curl -sf "$U/v1/queue" -H 'Content-Type: application/json' \
	-d '{"model": "mistral-batch", "prompt": "Summarize the logs", "max_tokens": 16}' | grep -o '"id":"[^"]*"' | cut -d'"' -f4)
set +x
for _ in $(seq 300); do
	st=$(curl -sf "$U/v1/queue/$id")
	case $st in *'"status":"completed"'*) echo "$st"; exit 0 ;; *'"status":"failed"'*) echo "$st" >&2; exit 1 ;; esac
	sleep 0.2
done
echo "queued request $id not completed in a minute" >&2
exit 1
