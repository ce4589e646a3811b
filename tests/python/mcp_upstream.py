"""A small MCP server (Python `mcp` SDK) for the proxy tests: the upstream on stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo-upstream")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@server.tool()
def secret() -> str:
    """A tool the policy hides."""
    return "the secret"


@server.tool()
def ask_me() -> str:
    """A tool that needs approval."""
    return "approved and ran"


@server.tool()
def crash() -> str:
    """Ends the server process mid-call, for the proxy's restart test."""
    import os

    os._exit(3)


@server.prompt()
def greet(name: str) -> str:
    """A prompt, passed through unchanged."""
    return f"Hello, {name}!"


@server.resource("demo://readme")
def readme() -> str:
    """A resource, passed through unchanged."""
    return "read me"


if __name__ == "__main__":
    server.run("stdio")
