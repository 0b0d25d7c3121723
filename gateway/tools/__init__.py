"""Tools for the agent: MCP servers and built-in web tools, each under a policy.

`mcp_client` is the only module that imports the `mcp` SDK, and only when a server is
configured; the toolbox (`toolbox.Tools`) implements the core's `Toolbox` port.
"""
