#!/usr/bin/env python3
"""A stdio MCP server with one tool, `approve`: the scripted person at the client.
Claude Code calls it (`--permission-prompt-tool mcp__approver__approve`) where it
would ask a person to allow a call; it allows every call as it was made, and appends
each question to the file named by its first argument."""
import json
import sys

log = sys.argv[1] if len(sys.argv) > 1 else None
TOOLS = [{"name": "approve", "description": "answers a permission prompt: allow",
          "inputSchema": {"type": "object", "properties": {
              "tool_name": {"type": "string"}, "input": {"type": "object"},
              "tool_use_id": {"type": "string"}}}}]


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
                    "serverInfo": {"name": "approver", "version": "1"}})
    elif method == "tools/list":
        reply(id_, {"tools": TOOLS})
    elif method == "tools/call":
        args = req.get("params", {}).get("arguments", {})
        if log:
            with open(log, "a") as f:
                f.write(json.dumps(args) + "\n")
        answer = {"behavior": "allow", "updatedInput": args.get("input", {})}
        reply(id_, {"content": [{"type": "text", "text": json.dumps(answer)}]})
    else:
        reply(id_, error={"code": -32601, "message": f"unknown method {method}"})
