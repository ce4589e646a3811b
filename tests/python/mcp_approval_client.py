"""Drives `toolgate proxy` with the Python `mcp` SDK's client, for tests/it/approvals.rs:
calls `ask_me` (which needs approval) as often as told, one line on stdin per call.

Prints one JSON line per step on stdout: `ready` before each call (the test answers
the approval request, or not, once it reads `go` back), then the call's result.

usage: mcp_approval_client.py CALLS CMD...
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

DEADLINE = 120.0


def say(**fields):
    print(json.dumps(fields), flush=True)


def text_of(result):
    return " ".join(c.text for c in result.content if getattr(c, "text", None) is not None)


async def main():
    calls, command = int(sys.argv[1]), sys.argv[2:]
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    loop = asyncio.get_running_loop()
    async with Client(server, mode="legacy", cache=None, read_timeout_seconds=DEADLINE) as client:
        await client.list_tools()
        for n in range(calls):
            say(step="ready", n=n)
            await loop.run_in_executor(None, sys.stdin.readline)
            try:
                result = await client.call_tool("ask_me", {})
                say(step="called", n=n, is_error=bool(result.is_error), text=text_of(result))
            except MCPError as e:
                say(step="called", n=n, code=e.code, message=e.error.message)


if __name__ == "__main__":
    asyncio.run(main())
