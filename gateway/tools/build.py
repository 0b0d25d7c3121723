"""The toolbox the settings and the tools file describe; None (and no SDK import) without any."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from gateway.config import Settings
from gateway.core.events import Events
from gateway.errors import ConfigError
from gateway.tools.config import ToolsFile, WebToolConfig, load_tools_file, tools_file_path
from gateway.tools.image import ImageTool
from gateway.tools.policy import RemoteTool, Rule, server_rule, web_rule
from gateway.tools.schedule import ScheduleTool
from gateway.tools.toolbox import Mounted, Tools
from gateway.tools.web import WebTools


def build_tools(
    settings: Settings,
    secrets: Sequence[str],
    file: ToolsFile | None = None,
    *,
    events: Events | None = None,
) -> Tools | None:
    """The configured tools, not yet started, publishing to `events`; None when the file lists
    none; `secrets`: every configured secret value (`registry.secrets`), kept from the tools."""
    config = file or load_tools_file(tools_file_path(settings.data_dir, settings.tools_file))
    if config.empty and settings.image_model is None:
        return None
    kept = tuple(secrets)
    mounted: list[Mounted] = []
    if config.servers:
        # The SDK costs about 2 s to import: only a gateway with servers pays it.
        from gateway.tools.mcp_client import McpServer

        for name, server in config.servers.items():
            timeout = settings.tool_connect_timeout_seconds
            backend = McpServer(
                name,
                server,
                secrets=kept,
                timeout=timeout,
                max_bytes=int(settings.tool_result_max_mb * 1024 * 1024),
            )
            mounted.append(Mounted(backend, partial(server_rule, server)))
    web = config.web
    if web.search is not None or web.fetch is not None:
        brave = settings.brave_api_key.get_secret_value() if settings.brave_api_key else None
        searching = web.search is not None and (settings.searxng_url or brave)
        web_tools = WebTools(
            search_url=settings.searxng_url if searching else None,
            brave_key=brave if searching and not settings.searxng_url else None,
            brave_url=settings.brave_search_url,
            fetch=web.fetch is not None,
            max_bytes=settings.web_fetch_max_bytes,
        )
        rules = {"web_search": web.search, "web_fetch": web.fetch}

        def rule(tool: RemoteTool) -> Rule:
            own = rules.get(tool.name)
            return web_rule(own) if own is not None else Rule("off", False)

        mounted.append(Mounted(web_tools, rule, prefixed=False))
    if settings.image_model is not None:
        mounted.append(Mounted(image_tool(settings), image_rule(config.image), prefixed=False))
    if config.schedule is not None:
        mounted.append(Mounted(ScheduleTool(), schedule_rule(config.schedule), prefixed=False))
    return Tools(mounted, settings=settings, secrets=kept, events=events or Events())


def image_tool(settings: Settings) -> ImageTool:
    """`generate_image` at IMAGE_BASE_URL (else the model's server), IMAGE_MODEL."""
    assert settings.image_model is not None
    base_url, key = settings.beside_model(settings.image_base_url, settings.image_api_key)
    if base_url is None:
        raise ConfigError("IMAGE_MODEL is set: set IMAGE_BASE_URL or LLM_BASE_URL too")
    return ImageTool(
        base_url=base_url,
        model=settings.image_model,
        api_key=key,
        timeout=settings.image_timeout_seconds,
        max_bytes=int(settings.image_max_mb * 1024 * 1024),
        unix_socket=settings.socket_for(base_url),
    )


def image_rule(config: WebToolConfig | None) -> Callable[[RemoteTool], Rule]:
    """The tools file's `image:` entry, else `confirm` and not in groups."""
    rule = web_rule(config or WebToolConfig())
    return lambda tool: rule


def schedule_rule(config: WebToolConfig) -> Callable[[RemoteTool], Rule]:
    """The tools file's `schedule:` entry: `auto` unless it says otherwise, no groups."""
    rule = Rule(config.policy or "auto", config.groups == "allow")
    return lambda tool: rule
