#!/usr/bin/env python3
"""A fake Anthropic Messages API on loopback, for driving agent clients offline.

Usage: anthropic.py SCRIPT.json LOG.jsonl
Prints the port it listens on (127.0.0.1, an ephemeral port) as its first stdout line.

SCRIPT is a list of tool calls, e.g. [{"name": "Bash", "input": {"command": "ls"}}].
Each POST /v1/messages whose last user turn holds no tool_result answers the next
scripted call as a `tool_use` (streamed as SSE when the request asks for a stream);
a request that carries a tool_result answers with a short text and `end_turn`. When the
script is used up, every answer is text. Every request body is appended to LOG, one
JSON document per line, so a test can read what the model was told (the tool_result).
HEAD / and anything else answer 200 with an empty body.
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


def last_user_has_tool_result(messages):
    for m in reversed(messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
        return False
    return False


def answer(body):
    """The content block and stop reason for one request."""
    with lock:
        state["ids"] += 1
        n = state["ids"]
        wants_tool = bool(body.get("tools")) and not last_user_has_tool_result(
            body.get("messages", [])
        )
        if wants_tool and state["next"] < len(script):
            call = script[state["next"]]
            state["next"] += 1
            block = {"type": "tool_use", "id": f"toolu_fake_{n:04d}",
                     "name": call["name"], "input": call["input"]}
            return n, block, "tool_use"
    return n, {"type": "text", "text": "done"}, "end_turn"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def empty(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_HEAD(self):
        self.empty()

    def do_GET(self):
        self.empty()

    def do_POST(self):
        length = min(int(self.headers.get("content-length", "0")), MAX_BODY)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with lock, open(log_path, "a") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if not self.path.split("?")[0].endswith("/v1/messages"):
            out = json.dumps({"input_tokens": 10}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        n, block, stop = answer(body)
        model = body.get("model", "claude-fake")
        message = {"id": f"msg_fake_{n:04d}", "type": "message", "role": "assistant",
                   "model": model, "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not body.get("stream"):
            message.update(content=[block], stop_reason=stop)
            out = json.dumps(message).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if block["type"] == "tool_use":
            start = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        out = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
