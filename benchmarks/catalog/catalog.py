"""The benchmark catalog as a plugin: ``tools.json`` (real definitions) registered with echo handlers, and
``synthesize(n)``, the same catalog grown to ``n`` tools by realistic variation (other products of the same
kind, the same operations on other objects), for the 10,000-tool figures.

Used by ``bench_tool_search.py`` and by the tests (``tests/core/test_tool_search.py``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_core import ToolRegistry, hookimpl

HERE = Path(__file__).parent
TOOLS = HERE / "tools.json"
QUERIES = HERE / "queries.json"


def load_tools() -> list[dict[str, Any]]:
    """Every tool of the fixture: ``name``, ``description``, ``parameters``, ``toolset``, ``source``."""
    return list(json.loads(TOOLS.read_text("utf-8"))["tools"])


def load_queries() -> list[dict[str, Any]]:
    """The task phrasings: ``query`` and ``expected`` (tool names, any one of which is a hit)."""
    return list(json.loads(QUERIES.read_text("utf-8"))["queries"])


def _echo(**arguments: Any) -> str:
    return json.dumps({"echo": arguments}, sort_keys=True)


class CatalogPlugin:
    """Registers catalog tools (in their own toolsets) with a handler that echoes the arguments,
    plus the built-in ``tool_search``."""

    def __init__(self, tools: Iterable[dict[str, Any]], *, with_search: bool = True) -> None:
        self.tools = list(tools)
        self.with_search = with_search

    @hookimpl
    def register_tools(self, registry: ToolRegistry) -> None:
        for tool in self.tools:
            registry.register(
                name=tool["name"],
                toolset=tool["toolset"],
                schema={
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["parameters"],
                },
                handler=_echo,
            )
        if self.with_search:
            from hermes_builtin.tools.work import tool_search

            tool_search.register(registry)


# -- growing the catalog -------------------------------------------------------------------------------------

# Products of one kind stand in for each other: a tool for GitHub has its twin for Gitea, and so on.
_KINDS: dict[str, list[str]] = {
    "github": ["gitea", "forgejo", "codeberg", "sourcehut", "gogs", "bitbucket_server", "gerrit"],
    "gitlab": ["gitea", "forgejo", "gogs", "sourcehut", "onedev"],
    "slack": ["mattermost", "rocketchat", "zulip", "teams", "discord_bridge", "matrix", "webex"],
    "notion": ["coda", "confluence_cloud", "outline", "bookstack", "wikijs", "dokuwiki", "slab"],
    "jira": ["youtrack", "linear", "clickup", "asana", "trello", "monday", "shortcut", "plane"],
    "confluence": ["outline", "bookstack", "wikijs", "xwiki", "mediawiki", "slab"],
    "postgres": ["cockroach", "timescale", "yugabyte", "redshift", "greenplum", "alloydb"],
    "mongodb": ["couchdb", "ravendb", "documentdb", "firestore", "arangodb", "cosmosdb"],
    "kubernetes": ["nomad", "openshift", "rancher", "k3s", "eks", "gke", "aks"],
    "sentry": ["rollbar", "bugsnag", "honeybadger", "raygun", "glitchtip", "airbrake"],
    "circleci": ["jenkins", "buildkite", "drone", "travis", "teamcity", "gocd", "semaphore"],
    "airflow": ["prefect", "dagster", "luigi", "argo", "kestra", "mage", "temporal"],
    "neon": ["planetscale", "supabase_db", "xata", "turso", "crunchy", "aiven"],
    "pinecone": ["weaviate", "qdrant", "milvus", "chroma", "vespa", "lancedb"],
    "elasticsearch": ["opensearch", "meilisearch", "typesense", "solr", "algolia", "manticore"],
    "clickhouse": ["duckdb", "druid", "pinot", "snowflake", "bigquery", "databricks"],
    "firecrawl": ["scrapingbee", "apify", "browserless", "zyte", "crawlbase", "diffbot"],
    "tavily": ["serper", "serpapi", "you_search", "kagi", "perplexity", "searchapi"],
    "brave": ["bing", "duckduckgo", "mojeek", "startpage", "qwant", "yandex"],
    "playwright": ["selenium", "webdriver", "cypress", "puppeteer_cloud", "browserbase", "steel"],
    "puppeteer": ["selenium", "webdriverio", "nightwatch", "testcafe", "chromedp", "rod"],
    "obsidian": ["logseq", "joplin", "bear", "roam", "standard_notes", "evernote"],
    "excel": ["sheets", "numbers", "calc", "airtable", "smartsheet", "grist"],
    "email": ["gmail", "outlook", "fastmail", "protonmail", "zoho_mail", "yahoo_mail"],
    "figma": ["sketch", "penpot", "framer", "zeplin", "invision", "canva"],
    "google_maps": ["mapbox", "here", "tomtom", "openstreetmap", "bing_maps", "apple_maps"],
    "maps": ["mapbox", "here", "tomtom", "osm", "bing_maps", "apple_maps"],
    "arxiv": ["pubmed", "biorxiv", "semantic_scholar", "crossref", "openalex", "dblp"],
    "jupyter": ["colab", "zeppelin", "observable", "deepnote", "hex", "marimo"],
    "redis": ["memcached", "valkey", "keydb", "dragonfly", "hazelcast", "etcd"],
}
# Objects that the same operations apply to (list_X, create_X, ...).
_OBJECTS = [
    "invoice",
    "customer",
    "order",
    "product",
    "shipment",
    "refund",
    "subscription",
    "coupon",
    "ticket",
    "incident",
    "alert",
    "dashboard",
    "report",
    "playlist",
    "track",
    "album",
    "course",
    "lesson",
    "student",
    "patient",
    "appointment",
    "prescription",
    "vehicle",
    "booking",
    "reservation",
    "flight",
    "hotel",
    "recipe",
    "ingredient",
    "device",
    "sensor",
    "firmware",
    "certificate",
    "domain",
    "dns_record",
    "secret",
    "role",
    "policy",
    "budget",
    "expense",
    "timesheet",
    "candidate",
    "job_posting",
    "contract",
    "lead",
    "campaign",
    "survey",
    "form",
    "webhook",
    "feature_flag",
    "experiment",
    "asset",
    "warehouse",
    "supplier",
    "quote",
]


def _swap(text: str, old: str, new: str) -> str:
    pretty = new.replace("_", " ").title()
    text = re.sub(re.escape(old), new, text, flags=re.IGNORECASE) if "_" in old else text
    return re.sub(rf"\b{re.escape(old)}\b", pretty, text, flags=re.IGNORECASE)


def _variant(tool: dict[str, Any], rng: random.Random, number: int) -> dict[str, Any] | None:
    name, description = tool["name"], tool["description"]
    group = tool["toolset"].removeprefix("mcp-").replace("-", "_")
    haystack = f"{group} {name} {description}".lower()
    for product, twins in _KINDS.items():
        if product in haystack:
            twin = twins[number % len(twins)]
            new_name = name.replace(product, twin) if product in name else f"{twin}_{name}"
            return {
                **tool,
                "name": new_name,
                "description": _swap(_swap(description, product, twin), group, twin),
                "toolset": f"mcp-{twin}",
            }
    # operations on another kind of object: list_issues -> list_invoices
    parts = name.split("_")
    if len(parts) >= 2:
        obj = _OBJECTS[(number + rng.randrange(len(_OBJECTS))) % len(_OBJECTS)]
        old = parts[-1]
        plural = old.endswith("s")
        new_obj = obj + ("s" if plural else "")
        return {
            **tool,
            "name": "_".join([*parts[:-1], new_obj]),
            "description": re.sub(rf"\b{re.escape(old.rstrip('s'))}s?\b", obj.replace("_", " "), description),
            "toolset": f"mcp-{obj.split('_')[0]}-service",
        }
    return None


def synthesize(tools: list[dict[str, Any]], count: int, seed: int = 24) -> list[dict[str, Any]]:
    """``tools`` grown to ``count`` by variation (names unique; the originals come first and are unchanged)."""
    rng = random.Random(seed)
    out = list(tools)
    taken = {t["name"] for t in out}
    number = 0
    while len(out) < count:
        base = tools[number % len(tools)]
        number += 1
        made = _variant(base, rng, number // len(tools) + rng.randrange(1000))
        if made is None:
            continue
        name = re.sub(r"[^A-Za-z0-9_-]", "_", made["name"])[:60]
        if name in taken:
            name = f"{name[:54]}_{number % 10_000}"
            if name in taken:
                continue
        taken.add(name)
        out.append({**made, "name": name})
    return out
