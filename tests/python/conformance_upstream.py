"""The MCP conformance suite's server fixtures (tools, resources, prompts, logging,
subscriptions, completion) on the Python `mcp` SDK, written for toolgate's tests from
the suite's scenario descriptions: the upstream the suite runs against directly and
through `toolgate proxy`.

    conformance_upstream.py stdio
    conformance_upstream.py http PORT        (Streamable HTTP at /mcp on 127.0.0.1)

Beyond the suite, for the proxy's own tests: `test_slow` runs until it is cancelled
and says so in log messages, `test_touch_watched` sends
`notifications/resources/updated` for the watched resource to every subscriber, and
`test_meta` answers with the request's `_meta` as it arrived.
"""

import base64
import json
import sys

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
WATCHED = "test://watched-resource"

server = MCPServer("toolgate-conformance-upstream")
subscribers = {}


@server.tool()
def test_simple_text() -> str:
    """Answers with one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[types.ImageContent]:
    """Answers with a PNG image."""
    return [types.ImageContent(type="image", data=IMAGE, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[types.AudioContent]:
    """Answers with a WAV sound."""
    return [types.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")]


def embedded(uri, mime, text):
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri=uri, mime_type=mime, text=text),
    )


@server.tool()
def test_embedded_resource() -> list[types.EmbeddedResource]:
    """Answers with an embedded resource."""
    return [embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@server.tool()
def test_multiple_content_types() -> list[types.TextContent | types.ImageContent | types.EmbeddedResource]:
    """Answers with text, an image and a resource."""
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
        embedded("test://mixed-content-resource", "application/json", '{"test": "data", "value": 123}'),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    for i, text in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
        if i:
            await anyio.sleep(0.05)
        await ctx.info(text)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress three times; answers with the progress token it was given."""
    for step in (0, 50, 100):
        await ctx.report_progress(progress=step, total=100, message=f"Completed step {step} of 100")
        await anyio.sleep(0.05)
    meta = ctx.request_context.meta
    token = getattr(meta, "progress_token", None) if meta else None
    return str(token)


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model through sampling/createMessage."""
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
    except Exception as e:  # the client refused or cannot sample
        return f"Sampling not supported or error: {e}"
    text = result.content.text if result.content.type == "text" else "No response"
    return f"LLM response: {text}"


class UserResponse(BaseModel):
    response: str = Field(description="User's response")


async def elicit(ctx, message, schema, prefix):
    try:
        result = await ctx.elicit(message=message, schema=schema)
    except Exception as e:
        return f"Elicitation not supported or error: {e}"
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"{prefix}: action={result.action}, content={content}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user through elicitation/create."""
    return await elicit(ctx, message, UserResponse, "User response")


class Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose every primitive field has a default."""
    return await elicit(ctx, "Please provide user information", Defaults, "Elicitation result")


class Enums(BaseModel):
    untitledSingle: str = Field(
        description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ]
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={"enum": ["small", "medium", "large"], "enumNames": ["Small Size", "Medium Size", "Large Size"]},
    )


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with every enum form."""
    return await elicit(ctx, "Please select values using different enum schema types", Enums, "Elicitation completed")


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str = "", address: dict | None = None) -> str:
    return f"name={name}"


# the listed input schema, exactly as the scenario gives it
server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@server.tool()
async def test_slow(ctx: Context) -> str:
    """Runs until cancelled, saying so in log messages (`slow started`, `slow cancelled`)."""
    await ctx.info("slow started")
    try:
        await anyio.sleep(600)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await ctx.info("slow cancelled")
        raise
    return "finished"


@server.tool()
async def test_touch_watched(ctx: Context) -> str:
    """Sends notifications/resources/updated for the watched resource."""
    for session in list(subscribers.get(WATCHED, [])):
        await session.send_resource_updated(WATCHED)
    return "touched"


@server.tool()
def test_meta(ctx: Context) -> str:
    """Answers with the request's _meta as JSON, as the upstream received it."""
    meta = ctx.request_context.meta or {}
    if not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    return json.dumps(meta, sort_keys=True, default=str)


@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (an image)."""
    return base64.b64decode(IMAGE)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template(id: str) -> str:
    """A resource template with one parameter."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource(WATCHED, mime_type="text/plain")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@server.prompt()
def test_simple_prompt() -> list[dict]:
    """A prompt without arguments."""
    return [{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[dict]:
    """A prompt with two required arguments."""
    text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    return [{"role": "user", "content": {"type": "text", "text": text}}]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict]:
    """A prompt holding an embedded resource."""
    return [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."},
            },
        },
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


@server.prompt()
def test_prompt_with_image() -> list[dict]:
    """A prompt holding an image."""
    return [
        {"role": "user", "content": {"type": "image", "data": IMAGE, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


@server.completion()
async def complete(ref, argument, context):
    return types.Completion(values=[], total=0, has_more=False)


async def set_level(ctx, params):
    return types.EmptyResult()


async def subscribe(ctx, params):
    subscribers.setdefault(str(params.uri), set()).add(ctx.session)
    return types.EmptyResult()


async def unsubscribe(ctx, params):
    subscribers.get(str(params.uri), set()).discard(ctx.session)
    return types.EmptyResult()


low = server._lowlevel_server
low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
