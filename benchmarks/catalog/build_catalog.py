"""Build ``tools.json``: the built-in tools plus the tools of real MCP servers, listed through hermes's MCP client.

The servers are installed from PyPI and npm into scratch folders (nothing here is a project dependency):

    for p in <the PyPI packages of SERVERS>; do python -m venv /tmp/catalog-py/$p && /tmp/catalog-py/$p/bin/pip install $p; done
    npm install --ignore-scripts --prefix /tmp/catalog-npm <the npm packages of SERVERS>
    python benchmarks/catalog/build_catalog.py /tmp/catalog-py /tmp/catalog-npm

(one virtualenv per PyPI server: their pins conflict.)

Each server is started by hermes exactly as a user's ``[mcp.servers.NAME]`` table would start it (dummy
credentials where a server insists on one before it lists its tools; no call is ever made), and its tools are
read from the registry: names as hermes gives them (a clash becomes ``<server>_<tool>``), descriptions and
parameter schemas as the server sent them. Every tool records its source: registry, package, version, server.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OUT = HERE / "tools.json"

# name -> (registry, package, executable, args, env). Tried and left out: npm @supabase/mcp-server-supabase (fetches
# its API before listing), @azure-devops/mcp (needs keytar's native build), @benborla29/mcp-server-mysql (connects
# first), @heroku/mcp-server (broken against the SDK it installs).
SERVERS: dict[str, tuple[str, str, str, list[str], dict[str, str]]] = {
    "git": ("pypi", "mcp-server-git", "mcp-server-git", [], {}),
    "time": ("pypi", "mcp-server-time", "mcp-server-time", [], {}),
    "fetch": ("pypi", "mcp-server-fetch", "mcp-server-fetch", [], {}),
    "atlassian": (
        "pypi",
        "mcp-atlassian",
        "mcp-atlassian",
        [],
        {
            "JIRA_URL": "https://example.atlassian.net",
            "JIRA_USERNAME": "bench@example.com",
            "JIRA_API_TOKEN": "dummy",
            "CONFLUENCE_URL": "https://example.atlassian.net/wiki",
            "CONFLUENCE_USERNAME": "bench@example.com",
            "CONFLUENCE_API_TOKEN": "dummy",
        },
    ),
    "excel": ("pypi", "excel-mcp-server", "excel-mcp-server", ["stdio"], {}),
    "github": (
        "npm",
        "@modelcontextprotocol/server-github",
        "mcp-server-github",
        [],
        {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"},
    ),
    "gitlab": (
        "npm",
        "@modelcontextprotocol/server-gitlab",
        "mcp-server-gitlab",
        [],
        {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy", "GITLAB_API_URL": "https://gitlab.example.com/api/v4"},
    ),
    "slack": (
        "npm",
        "@modelcontextprotocol/server-slack",
        "mcp-server-slack",
        [],
        {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T0"},
    ),
    "google-maps": (
        "npm",
        "@modelcontextprotocol/server-google-maps",
        "mcp-server-google-maps",
        [],
        {"GOOGLE_MAPS_API_KEY": "dummy"},
    ),
    "puppeteer": ("npm", "@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer", [], {}),
    "redis": (
        "npm",
        "@modelcontextprotocol/server-redis",
        "mcp-server-redis",
        ["redis://127.0.0.1:6399"],
        {},
    ),
    "postgres": (
        "npm",
        "@modelcontextprotocol/server-postgres",
        "mcp-server-postgres",
        ["postgresql://127.0.0.1:5999/bench"],
        {},
    ),
    "memory": (
        "npm",
        "@modelcontextprotocol/server-memory",
        "mcp-server-memory",
        [],
        {"MEMORY_FILE_PATH": "{tmp}/memory.json"},
    ),
    "filesystem": ("npm", "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", ["{tmp}"], {}),
    "everything": ("npm", "@modelcontextprotocol/server-everything", "mcp-server-everything", ["stdio"], {}),
    "sequential-thinking": (
        "npm",
        "@modelcontextprotocol/server-sequential-thinking",
        "mcp-server-sequential-thinking",
        [],
        {},
    ),
    "brave-search": (
        "npm",
        "@modelcontextprotocol/server-brave-search",
        "mcp-server-brave-search",
        [],
        {"BRAVE_API_KEY": "dummy"},
    ),
    "aws-kb": (
        "npm",
        "@modelcontextprotocol/server-aws-kb-retrieval",
        "mcp-server-aws-kb-retrieval",
        [],
        {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_REGION": "us-east-1"},
    ),
    "playwright": ("npm", "@playwright/mcp", "playwright-mcp", [], {}),
    "notion": ("npm", "@notionhq/notion-mcp-server", "notion-mcp-server", [], {"NOTION_TOKEN": "dummy"}),
    "kubernetes": ("npm", "mcp-server-kubernetes", "mcp-server-kubernetes", [], {}),
    "desktop-commander": ("npm", "@wonderwhy-er/desktop-commander", "desktop-commander", [], {}),
    "mongodb": ("npm", "@mongodb-js/mongodb-mcp-server", "mongodb-mcp-server", [], {}),
    "firecrawl": ("npm", "firecrawl-mcp", "firecrawl-mcp", [], {"FIRECRAWL_API_KEY": "fc-dummy"}),
    "circleci": (
        "npm",
        "@circleci/mcp-server-circleci",
        "mcp-server-circleci",
        [],
        {"CIRCLECI_TOKEN": "dummy"},
    ),
    "neon": ("npm", "@neondatabase/mcp-server-neon", "mcp-server-neon", ["start", "dummy"], {}),
    "pinecone": ("npm", "@pinecone-database/mcp", "pinecone-mcp", [], {"PINECONE_API_KEY": "dummy"}),
    "playwright-ea": ("npm", "@executeautomation/playwright-mcp-server", "playwright-mcp-server", [], {}),
    "tavily": ("npm", "tavily-mcp", "tavily-mcp", [], {"TAVILY_API_KEY": "tvly-dummy"}),
    "elasticsearch": (
        "npm",
        "@elastic/mcp-server-elasticsearch",
        "mcp-server-elasticsearch",
        [],
        {"ES_URL": "http://127.0.0.1:9299", "ES_API_KEY": "dummy"},
    ),
    "sentry": ("npm", "@sentry/mcp-server", "sentry-mcp", ["--access-token", "dummy"], {}),
    "context7": ("npm", "@upstash/context7-mcp", "context7-mcp", [], {}),
    "figma": ("npm", "figma-developer-mcp", "figma-developer-mcp", ["--figma-api-key=dummy", "--stdio"], {}),
    "taskmanager": ("npm", "@kazuph/mcp-taskmanager", "mcp-taskmanager", [], {}),
}


def _npm_version(prefix: Path, package: str) -> str:
    try:
        return str(json.loads((prefix / "node_modules" / package / "package.json").read_text())["version"])
    except (OSError, KeyError, ValueError):
        return "?"


def _pypi_venv(venvs: Path, package: str, exe: str) -> Path:
    for venv in (venvs / package, venvs, Path(sys.prefix)):
        if (venv / "bin" / exe).exists():
            return venv
    return venvs / package


def _pypi_version(venv: Path, package: str) -> str:
    for path in (venv / "lib").glob("python3*/site-packages"):
        found = list(metadata.distributions(path=[str(path)], name=package))
        if found:
            return str(found[0].version)
    return "?"


def _tool(entry: Any, source: dict[str, Any]) -> dict[str, Any]:
    schema = entry.schema
    return {
        "name": entry.name,
        "description": entry.description or schema.get("description", ""),
        "parameters": schema.get("parameters", {"type": "object", "properties": {}}),
        "toolset": entry.toolset,
        "source": source,
    }


def build(venv: Path, prefix: Path, only: list[str]) -> dict[str, Any]:
    from hermes_core import ToolSystem

    scratch = tempfile.mkdtemp(prefix="catalog-")
    os.environ["HERMES_HOME"] = str(Path(scratch) / "home")
    os.environ["HERMES_LOAD_PLUGINS"] = "builtin"  # the built-ins, no other installed plugin
    servers: dict[str, Any] = {}
    sources: dict[str, dict[str, Any]] = {}
    for name, (registry, package, exe, args, env) in SERVERS.items():
        if only and name not in only:
            continue
        home = _pypi_venv(venv, package, exe) if registry == "pypi" else prefix
        where = (home / "bin" / exe) if registry == "pypi" else (prefix / "node_modules" / ".bin" / exe)
        if not where.exists():
            print(f"skip {name}: {where} is not installed", file=sys.stderr)
            continue
        version = _pypi_version(home, package) if registry == "pypi" else _npm_version(prefix, package)
        servers[name] = {
            "command": str(where),
            "args": [a.replace("{tmp}", scratch) for a in args],
            "env": {k: v.replace("{tmp}", scratch) for k, v in env.items()},
            "timeout": 60.0,
        }
        sources[name] = {"registry": registry, "package": package, "version": version, "server": name}
    system = ToolSystem.load(plugins_dir=False, config={"mcp": {"servers": servers}})
    try:
        system.wait_mcp(120)
        tools = []
        version = metadata.version("hermes-tools")
        for entry in system.registry.entries():
            if entry.toolset.startswith("mcp-"):
                continue
            if entry.name == "tool_search":
                continue
            source = {"registry": "builtin", "package": "hermes-tools", "version": version, "server": ""}
            tools.append(_tool(entry, source))
        status = system.mcp_status()
        for name in servers:
            state = status.get(name, {})
            count = 0
            for entry in system.registry.entries():
                if entry.toolset == f"mcp-{name}":
                    tools.append(_tool(entry, sources[name]))
                    count += 1
            print(f"{name}: {state.get('state')} {count} tools {state.get('error') or ''}", file=sys.stderr)
        return {"tools": tools, "servers": sources}
    finally:
        system.close()


def main() -> None:
    venv, prefix = Path(sys.argv[1]), Path(sys.argv[2])
    catalog = build(venv, prefix, sys.argv[3:])
    if not sys.argv[3:]:
        OUT.write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(catalog['tools'])} tools", file=sys.stderr)


if __name__ == "__main__":
    main()
