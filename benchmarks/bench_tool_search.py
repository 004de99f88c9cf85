"""Tool search over a real catalog: ranking quality, definitions per turn, and search latency at 500 and 10,000 tools.

The catalog (``catalog/tools.json``) is 578 real definitions: the built-ins plus the tools of 34 MCP servers from
PyPI and npm, listed through hermes's own MCP client (``catalog/build_catalog.py``). The 10,000-tool catalog grows
it by realistic variation (other products of the same kind, the same operations on other objects:
``catalog/catalog.py``). ``catalog/queries.json`` holds 176 task phrasings written the way users ask, each with
the tools that would do it.

Printed:
- recall@1, recall@5 and MRR@10 of the built-in ranker over the whole catalog, side by side with a baseline
  ranker (a plain count of the query's words found in each tool's name and description, no index);
- tokens of the definitions sent per turn with search off (everything) and on (core + ``tool_search`` + the
  tools a search loaded), estimated (``hermes_core.selection.estimate_tokens``) and, where a tokenizer is installed (``pip
  install bpe-openai``), counted with OpenAI's o200k encoding;
- ``tool_search`` latency (the ranking alone, and the whole call through the pipeline) at 500 and 10,000 tools,
  the baseline interleaved, min / median / p95 over every query, and the time to build the index once.

Targets: recall@5 >= 0.90, recall@1 >= 0.70, a search under 2 ms at 10,000 tools, definitions under the budget
(4,000 tokens) at any size. Run: ``python benchmarks/bench_tool_search.py [rounds]``.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "catalog"))
from catalog import CatalogPlugin, load_queries, load_tools, synthesize

BUDGET = 4_000
CORE = [  # the hermes-core baseline (hermes_builtin.toolsets.CORE)
    "terminal", "process", "read_file", "write_file", "patch", "search_files", "todo", "memory", "session_search",
    "clarify", "execute_code", "skills_list", "skill_view", "skill_manage", "delegate_task", "web_search",
    "web_extract", "vision_analyze",
]  # fmt: skip


def make_system(tools: list[dict[str, Any]]) -> Any:
    from hermes_core import ToolSystem

    return ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[CatalogPlugin(tools)],
        config={"tools": {"search_core": CORE, "search_budget": BUDGET}},
        mcp=False,
    )


class WordCount:
    """The baseline ranker: how many of the query's words appear in a tool's name and description (a scan)."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self.texts = [
            (t["name"], set(re.findall(r"[a-z0-9]+", (t["name"] + " " + t["description"]).lower())))
            for t in tools
        ]

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        words = set(re.findall(r"[a-z0-9]+", query.lower()))
        scored = [(name, float(len(words & text))) for name, text in self.texts]
        scored.sort(key=lambda item: -item[1])
        return [s for s in scored[:limit] if s[1] > 0]


def quality(search: Callable[[str, int], list[str]], queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    at1 = at5 = 0
    reciprocal = 0.0
    misses = []
    for q in queries:
        found = search(q["query"], 10)
        expected = set(q["expected"])
        rank = next((i for i, name in enumerate(found, 1) if name in expected), None)
        at1 += rank == 1
        at5 += rank is not None and rank <= 5
        reciprocal += 1 / rank if rank else 0.0
        if rank is None or rank > 5:
            misses.append((q["query"], q["expected"][0], found[:3]))
    n = len(queries)
    return {"recall@1": at1 / n, "recall@5": at5 / n, "mrr@10": reciprocal / n, "misses": misses}


def tokenizer() -> Callable[[str], int] | None:
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return lambda text: len(encoding.encode(text))
    except Exception:
        return None


def turn_tokens(
    system: Any, queries: Sequence[dict[str, Any]], count: Callable[[str], int] | None
) -> dict[str, Any]:
    """Tokens sent per turn with search off, and on: after each query's search (5 tools loaded), per session."""
    from hermes_core.selection import estimate_tokens

    def size(definitions: list[dict[str, Any]]) -> tuple[int, int | None]:
        sent = [d for d in definitions if not d.get("defer_loading")]
        estimate = sum(estimate_tokens(d) for d in sent)
        if count is None:
            return estimate, None
        if len(sent) > 200:  # too long for one encode: per definition (within a few tokens of the whole)
            return estimate, sum(count(json.dumps(d)) for d in sent)
        return estimate, count(json.dumps(sent))

    off = size(system.definitions(search="off"))
    on: list[tuple[int, int | None]] = []
    native: list[int] = []
    for number, q in enumerate(queries):
        session = f"turns-{number}"
        system.search_tools(q["query"], limit=5, session_id=session)
        on.append(size(system.definitions(session_id=session)))
        native.append(size(system.definitions(format="anthropic", session_id=session))[0])
        system.close_session(session)
    first = size(system.definitions())
    return {"off": off, "first": first, "on": on, "native_max": max(native)}


def latencies(
    subjects: dict[str, Callable[[str], object]], queries: Sequence[str], rounds: int
) -> dict[str, list[float]]:
    """Milliseconds per query, every subject interleaved query by query, ``rounds`` passes over the queries."""
    out: dict[str, list[float]] = {label: [] for label in subjects}
    labels = list(subjects)
    for label in labels:  # warm up
        for q in queries[:10]:
            subjects[label](q)
    for r in range(rounds):
        for i, q in enumerate(queries):
            order = labels[(r + i) % len(labels) :] + labels[: (r + i) % len(labels)]
            for label in order:
                start = time.perf_counter()
                subjects[label](q)
                out[label].append((time.perf_counter() - start) * 1000)
    return out


def show(label: str, values: Sequence[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"  {label:44s} min {ordered[0]:7.3f}  median {statistics.median(ordered):7.3f}  p95 {p95:7.3f} ms"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="bench-search-")
    os.environ["HERMES_LOAD_PLUGINS"] = ""
    tools = load_tools()
    queries = load_queries()
    texts = [q["query"] for q in queries]
    big_tools = synthesize(tools, 10_000)
    count = tokenizer()
    print(
        f"catalog: {len(tools)} tools from {len({t['toolset'] for t in tools})} toolsets; {len(queries)} queries"
    )

    for label, catalog in (("500", tools), ("10,000", big_tools)):
        system = make_system(catalog)
        started = time.perf_counter()
        system.search_tools("warm up", load=False, everything=True)
        built = (time.perf_counter() - started) * 1000
        ours = quality(
            lambda q, n, s=system: [
                m.name for m in s.search_tools(q, limit=n, load=False, everything=True).matches
            ],
            queries,
        )
        base = WordCount(catalog)
        baseline = quality(lambda q, n, b=base: [name for name, _ in b.search(q, n)], queries)
        print(f"\n== {len(catalog)} tools (the {label} catalog) ==")
        print(f"  index built in {built:.0f} ms (once per change of the selection)")
        for name, result in (("bm25 (hermes)", ours), ("baseline: word count", baseline)):
            print(
                f"  {name:22s} all {len(queries)} queries: recall@1 {result['recall@1']:.3f}  "
                f"recall@5 {result['recall@5']:.3f}  MRR@10 {result['mrr@10']:.3f}"
            )
            for part in ("tuning", "fresh", "unseen"):
                subset = [q for q in queries if q.get("set") == part]
                if name.startswith("bm25"):
                    found = quality(
                        lambda q, n, s=system: [
                            m.name for m in s.search_tools(q, limit=n, load=False, everything=True).matches
                        ],
                        subset,
                    )
                else:
                    found = quality(lambda q, n, b=base: [x for x, _ in b.search(q, n)], subset)
                print(
                    f"  {'':22s} {part + f' ({len(subset)})':14s}   recall@1 {found['recall@1']:.3f}  "
                    f"recall@5 {found['recall@5']:.3f}  MRR@10 {found['mrr@10']:.3f}"
                )
        if label == "500" and "-v" in sys.argv:
            for query, expected, found in ours["misses"]:
                print(f"    miss: {query!r} wants {expected}, got {found}")

        tokens = turn_tokens(system, queries, count)
        est_on = [t[0] for t in tokens["on"]]
        real_on = [t[1] for t in tokens["on"] if t[1] is not None]
        off_est, off_real = tokens["off"]
        print(
            f"  definitions per turn, search off: {off_est:,} tokens estimated"
            + (f", {off_real:,} o200k" if off_real else "")
        )
        print(
            f"  search on, first turn: {tokens['first'][0]:,} estimated"
            + (f", {tokens['first'][1]:,} o200k" if tokens["first"][1] else "")
            + f"; after a search loaded 5 tools: median {statistics.median(est_on):,.0f}, max {max(est_on):,} estimated"
            + (f" (median {statistics.median(real_on):,.0f}, max {max(real_on):,} o200k)" if real_on else "")
            + f"; budget {BUDGET:,}; {off_est / statistics.median(est_on):.1f}x fewer"
        )
        print(f"  Anthropic native (defer_loading), in context: max {tokens['native_max']:,} estimated")

        available = system.available()
        ranker = system.deferral.ranker(
            system.deferral.state(system.selector.select(None, None, None).runnable)
        )
        samples = latencies(
            {
                "tool_search ranking (bm25 index)": lambda q, r=ranker: r.search(q, 5),
                "tool_search call through the pipeline": lambda q, s=system: s.call(
                    "tool_search", {"query": q}, session_id="latency"
                ),
                "baseline: word count scan": lambda q, b=base: b.search(q, 5),
            },
            texts,
            rounds,
        )
        for name, values in samples.items():
            print(show(name, values))
        del available
        system.close()


if __name__ == "__main__":
    main()
