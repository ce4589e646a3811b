#!/usr/bin/env python3
"""A fake OpenAI Responses API on loopback, for driving Codex offline.

Usage: openai_responses.py SCRIPT.json LOG.jsonl
Prints the port it listens on (127.0.0.1, an ephemeral port) as its first stdout line.

SCRIPT is a list of shell commands, e.g. ["touch marker"]. Each POST .../responses whose
input holds no function_call_output answers the next scripted command as one call of
the shell tool the request offers (`exec_command`, `shell_command` or `shell`, as the
model's tool set has it), streamed as SSE; a
request that carries a function_call_output answers with a short message. When the
script is used up, every answer is a message. Every request body is appended to LOG,
one JSON document per line, so a test can read what Codex told the model. Codex is
pointed at it with a model provider whose `base_url` is http://127.0.0.1:PORT/v1 and
`wire_api = "responses"`. GET answers an empty model list.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 16 * 1024 * 1024

script = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
lock = threading.Lock()
state = {"next": 0, "ids": 0}


def offered(tools):
    """The names of the tools a request offers, namespaces included."""
    names = set()
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict):
            names.add(t.get("name"))
            names |= offered(t.get("tools", []))
    return names


def shell_call(names, command):
    """The call of whichever shell tool Codex offers (it depends on the model)."""
    if "exec_command" in names:
        return "exec_command", {"cmd": command}
    if "shell_command" in names:
        return "shell_command", {"command": command}
    return "shell", {"command": ["bash", "-lc", command]}


def events(body):
    with lock:
        state["ids"] += 1
        rid = f"resp_{state['ids']}"
        answered = any(
            isinstance(i, dict) and i.get("type") == "function_call_output"
            for i in body.get("input", [])
        )
        command = None
        if not answered and state["next"] < len(script):
            command = script[state["next"]]
            state["next"] += 1
    out = [{"type": "response.created", "response": {"id": rid}}]
    if command is not None:
        name, arguments = shell_call(offered(body.get("tools", [])), command)
        out.append({"type": "response.output_item.done", "item": {
            "type": "function_call", "call_id": f"call_{rid}", "name": name,
            "arguments": json.dumps(arguments)}})
    else:
        out.append({"type": "response.output_item.done", "item": {
            "type": "message", "role": "assistant", "id": f"msg_{rid}",
            "content": [{"type": "output_text", "text": "done"}]}})
    out.append({"type": "response.completed", "response": {"id": rid, "usage": {
        "input_tokens": 0, "input_tokens_details": None, "output_tokens": 0,
        "output_tokens_details": None, "total_tokens": 0}}})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, kind, data):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(200, "application/json", b'{"object": "list", "data": [], "models": []}')

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        if n > MAX_BODY:
            self.answer(413, "text/plain", b"too large")
            return
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError:
            self.answer(400, "text/plain", b"not JSON")
            return
        with lock:
            with open(log_path, "a") as log:
                log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events(body))
        self.answer(200, "text/event-stream", sse.encode())


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
