"""Drives `toolgate proxy` with the Python `mcp` SDK's client, for tests/it/proxy.rs.

Prints one JSON line per step on stdout; after the `waiting` line the test changes the
policy, and the script waits (with a deadline) for `notifications/tools/list_changed`.

usage: mcp_proxy_client.py MODE (stdio CMD... | http URL TOKEN) [--elicit accept] [--repeat N]
MODE is `legacy` (initialize handshake) or `2026-07-28` (no handshake, subscriptions/listen).
With `--repeat N` it only calls `echo` N times and prints them as the `repeated` step
(tests/it/rates.rs).
"""

import asyncio
import json
import os
import sys

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

DEADLINE = 30.0


def say(**fields):
    print(json.dumps(fields), flush=True)


def text_of(result):
    return " ".join(c.text for c in result.content if getattr(c, "text", None) is not None)


async def call(client, name, arguments):
    try:
        result = await client.call_tool(name, arguments)
        return {"is_error": bool(result.is_error), "text": text_of(result)}
    except MCPError as e:
        return {"code": e.code, "message": e.error.message}


async def main():
    args = sys.argv[1:]
    elicit = None
    if "--elicit" in args:
        i = args.index("--elicit")
        elicit = args[i + 1]
        del args[i : i + 2]
    repeat = None
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i : i + 2]
    mode, transport = args[0], args[1]
    if transport == "stdio":
        # the SDK passes only a safe subset of the environment unless told
        server = StdioServerParameters(command=args[2], args=args[3:], env=dict(os.environ))
    else:
        url, token = args[2], args[3]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=DEADLINE)
        server = streamable_http_client(url, http_client=http)

    changed = asyncio.Event()

    async def on_message(message):
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/tools/list_changed":
            changed.set()

    async def on_elicit(context, params):
        return types.ElicitResult(action=elicit, content={} if elicit == "accept" else None)

    async with Client(
        server,
        mode=mode,
        message_handler=on_message,
        elicitation_callback=on_elicit if elicit else None,
        cache=None,
        read_timeout_seconds=DEADLINE,
    ) as client:
        say(step="connected", protocol=client.protocol_version)
        if repeat is not None:
            # the proxy answers calls of the tools it has shown
            await client.list_tools()
            calls = [await call(client, "echo", {"text": f"call {i}"}) for i in range(repeat)]
            say(step="repeated", calls=calls)
            return
        listed = await client.list_tools()
        say(step="listed", tools=[t.name for t in listed.tools])
        say(
            step="calls",
            echo=await call(client, "echo", {"text": "through the proxy"}),
            secret=await call(client, "secret", {}),
            nothing=await call(client, "no_such_tool", {}),
            ask_me=await call(client, "ask_me", {}),
        )
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        resource = await client.read_resource("demo://readme")
        say(
            step="passthrough",
            prompt=prompt.messages[0].content.text,
            resource=resource.contents[0].text,
        )
        if mode == "legacy":
            say(step="waiting")
            await asyncio.wait_for(changed.wait(), DEADLINE)
        else:
            async with client.listen(tools_list_changed=True) as sub:
                say(step="waiting")

                async def first():
                    async for _event in sub:
                        return

                await asyncio.wait_for(first(), DEADLINE)
        add = await call(client, "add", {"a": 2, "b": 3})
        relisted = await client.list_tools()
        say(step="changed", add=add, tools=[t.name for t in relisted.tools])


if __name__ == "__main__":
    asyncio.run(main())
