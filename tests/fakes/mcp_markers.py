#!/usr/bin/env python3
"""A stdio MCP server (newline-delimited JSON-RPC) with two tools, `safe` and `danger`,
each of which creates the file named by its `path` argument: a test sees whether a
tool ran by whether its file exists."""
import json
import sys

TOOLS = [
    {"name": name, "description": f"creates the file at path ({name})",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"]}}
    for name in ("safe", "danger")
]


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    method, id_ = req.get("method"), req.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        reply(id_, {"protocolVersion": req.get("params", {}).get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "markers", "version": "1"}})
    elif method == "tools/list":
        reply(id_, {"tools": TOOLS})
    elif method == "tools/call":
        params = req.get("params", {})
        path = params.get("arguments", {}).get("path", "")
        try:
            open(path, "w").write(params.get("name", ""))
            reply(id_, {"content": [{"type": "text", "text": f"created {path}"}]})
        except OSError as e:
            reply(id_, {"content": [{"type": "text", "text": str(e)}], "isError": True})
    else:
        reply(id_, error={"code": -32601, "message": f"unknown method {method}"})
