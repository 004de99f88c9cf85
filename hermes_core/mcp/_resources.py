"""Resources and prompts of an MCP server, for the model (as tools) and for the host (as a Python API).

A server that offers resources gets two more tools in its toolset, ``<server>_list_resources`` and
``<server>_read_resource``; one that offers prompts gets ``<server>_list_prompts`` and ``<server>_get_prompt``.
They are read-only (no approval, unless ``trust = "none"``). The listings are cached until the server says they
changed (``notifications/resources/list_changed``, ``notifications/prompts/list_changed``) or it reconnects.
The host reaches the same things with ``hermes_core.mcp.resources(system, server)``, ``read_resource``,
``prompts`` and ``get_prompt``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..decisions import ToolOutput
from ..errors import ToolError
from .results import render_result

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = [
    "OPERATIONS",
    "describe_prompts",
    "describe_resources",
    "fetch",
    "plain",
    "render",
    "run",
    "schema_of",
]

OPERATIONS: dict[str, tuple[str, ...]] = {
    "resources": ("list_resources", "read_resource"),
    "prompts": ("list_prompts", "get_prompt"),
}

_PAGES = 100


def schema_of(server: str, op: str) -> dict[str, Any]:
    """The JSON schema (name, description, parameters) of a resource or prompt tool of ``server``."""
    what = {
        "list_resources": (f"List the resources (files, records, documents) the MCP server {server!r} offers, "
                           "with the URI to read each one, and its URI templates.", {}, []),
        "read_resource": (f"Read a resource of the MCP server {server!r} by its URI (from its list_resources).",
                          {"uri": {"type": "string", "description": "The resource's URI."}}, ["uri"]),
        "list_prompts": (f"List the prompts (reusable instructions) the MCP server {server!r} offers, with "
                         "their arguments.", {}, []),
        "get_prompt": (f"Get a prompt of the MCP server {server!r} by name, filled with its arguments.",
                       {"name": {"type": "string", "description": "The prompt's name."},
                        "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                                      "description": "The prompt's arguments, by name."}}, ["name"]),
    }[op]  # fmt: skip
    description, properties, required = what
    return {
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


async def _pages(method: Any, attribute: str) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await method(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def fetch(session: ClientSession, listings: dict[str, list[Any]], what: str) -> list[Any]:
    """``resources``, ``templates`` or ``prompts`` of a server, from ``listings`` when cached there."""
    if what not in listings:
        if what == "resources":
            listings[what] = await _pages(session.list_resources, "resources")
        elif what == "templates":
            listings[what] = await _pages(session.list_resource_templates, "resource_templates")
        else:
            listings[what] = await _pages(session.list_prompts, "prompts")
    return listings[what]


def describe_resources(resources: list[Any], templates: list[Any]) -> str:
    if not resources and not templates:
        return "This server offers no resources."
    lines = [f"{len(resources)} resources (read one with read_resource and its uri):"]
    for r in resources:
        extra = f" ({r.mime_type})" if r.mime_type else ""
        about = f": {' '.join(r.description.split())[:200]}" if r.description else ""
        lines.append(f"- {r.uri} {r.name}{extra}{about}")
    if templates:
        lines.append(f"{len(templates)} URI templates (fill in the {{placeholders}} to make a uri):")
        for t in templates:
            about = f": {' '.join(t.description.split())[:200]}" if t.description else ""
            lines.append(f"- {t.uri_template} {t.name}{about}")
    return "\n".join(lines)


def describe_prompts(prompts: list[Any]) -> str:
    if not prompts:
        return "This server offers no prompts."
    lines = [f"{len(prompts)} prompts (get one with get_prompt):"]
    for p in prompts:
        arguments = ", ".join(f"{a.name}{'' if a.required else '?'}" for a in (p.arguments or ()))
        about = f": {' '.join(p.description.split())[:200]}" if p.description else ""
        lines.append(f"- {p.name}({arguments}){about}")
    return "\n".join(lines)


def render(result: Any) -> str | ToolOutput:
    """A ``ReadResourceResult`` or ``GetPromptResult`` as text (plus attachments), like a tool result."""
    from mcp.types import CallToolResult, EmbeddedResource, TextContent

    blocks: list[Any] = []
    if hasattr(result, "contents"):
        for item in result.contents:
            blocks.append(EmbeddedResource(resource=item))
    else:
        for message in result.messages:
            content = message.content
            blocks.append(TextContent(text=f"[{message.role}]"))
            blocks.extend(content if isinstance(content, list) else [content])
    return render_result(CallToolResult(content=blocks))


async def run(
    session: ClientSession, listings: dict[str, list[Any]], op: str, arguments: dict[str, Any]
) -> Any:
    """One resource or prompt operation (a tool call's work), as the text and attachments the model gets."""
    from mcp.shared.exceptions import MCPError

    try:
        if op == "list_resources":
            resources = await fetch(session, listings, "resources")
            try:
                templates = await fetch(session, listings, "templates")
            except MCPError:
                templates = []
            return describe_resources(resources, templates)
        if op == "read_resource":
            return render(await session.read_resource(str(arguments["uri"])))
        if op == "list_prompts":
            return describe_prompts(await fetch(session, listings, "prompts"))
        values = {str(k): str(v) for k, v in (arguments.get("arguments") or {}).items()}
        return render(await session.get_prompt(str(arguments["name"]), values or None))
    except MCPError as err:
        raise ToolError(f"the MCP server refused: {err}", kind="mcp_error") from None


def plain(items: list[Any]) -> list[dict[str, Any]]:
    """Listing items as plain dicts (the host API's shape)."""
    return [json.loads(item.model_dump_json(by_alias=True, exclude_none=True)) for item in items]
