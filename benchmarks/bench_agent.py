"""What the agent loop costs on top of the model: one task (a tool call, then the answer) through ``Agent.run``,
side by side with the same two streamed HTTP requests and the same tool call made by hand.

The model is a local server answering instantly (server-sent events over HTTP/1.1 on 127.0.0.1), so the
difference is the loop's own work: definitions, the context budget, parsing the stream, the pipeline, events,
and (in the third column) recording the session for ``session_search`` in SQLite.
Run: ``python benchmarks/bench_agent.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import httpx

import hermes_builtin.plugin
from hermes_core import ToolSystem, hookimpl
from hermes_core.agent import Agent

ROUNDS = 15
TASKS_PER_ROUND = 20


def _events(last_role: str) -> list[dict[str, Any]]:
    base = {"id": "x", "object": "chat.completion.chunk", "model": "bench"}
    if last_role == "tool":
        deltas = [{"content": piece} for piece in ("The ", "sum ", "is ", "3.")]
        finish = "stop"
    else:
        deltas = [
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "add", "arguments": ""},
                    }
                ]
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1, '}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": '"b": 2}'}}]},
        ]
        finish = "tool_calls"
    out = [
        {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    out += [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do: no 40 ms stall between headers and body

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        frames = b"".join(
            f"data: {json.dumps(e)}\n\n".encode() for e in _events(body["messages"][-1]["role"])
        )
        frames += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(frames)))
        self.end_headers()
        self.wfile.write(frames)


def add(a: int, b: int) -> int:
    return a + b


@hookimpl
def register_tools(registry: Any) -> None:
    registry.register(
        name="add",
        toolset="bench",
        handler=add,
        schema={
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    )


def by_hand(http: httpx.Client, url: str, tools: list[dict[str, Any]]) -> str:
    """The same two requests and tool call, with no loop around them."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "1+2?"},
    ]
    text = ""
    for _ in range(2):
        body = {"model": "bench", "messages": messages, "tools": tools, "stream": True}
        arguments, text = "", ""
        with http.stream("POST", url, json=body) as response:
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                delta = json.loads(line[6:])["choices"][0]["delta"]
                text += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    arguments += call["function"].get("arguments", "")
        if arguments:
            call_part = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": arguments},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call_part]})
            messages.append(
                {"role": "tool", "tool_call_id": "call_1", "content": str(add(**json.loads(arguments)))}
            )
    return text


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    config = {"models": {"bench": {"base_url": url}}}
    plugin = types.SimpleNamespace(register_tools=register_tools)
    system = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin, plugin], config=config
    )
    http = httpx.Client()
    tools = system.definitions(["bench"])

    def plain() -> str:
        return by_hand(http, url + "/chat/completions", tools)

    def agent(record: bool) -> str:
        return Agent(system, toolsets=["bench"], system_prompt="Be brief.", record=record).run("1+2?").text

    assert plain() == agent(False) == agent(True) == "The sum is 3."
    columns: dict[str, list[float]] = {"by hand": [], "Agent.run": [], "Agent.run, recorded": []}
    runners = {
        "by hand": plain,
        "Agent.run": lambda: agent(False),
        "Agent.run, recorded": lambda: agent(True),
    }
    for _ in range(ROUNDS):  # interleaved, so drift on a shared machine hits every column alike
        for name, fn in runners.items():
            start = time.perf_counter()
            for _ in range(TASKS_PER_ROUND):
                fn()
            columns[name].append((time.perf_counter() - start) * 1000 / TASKS_PER_ROUND)
    base_min, base_med = min(columns["by hand"]), statistics.median(columns["by hand"])
    print(
        f"one task = 2 streamed model requests + 1 tool call; {ROUNDS} rounds x {TASKS_PER_ROUND} tasks (ms per task)"
    )
    for name, values in columns.items():
        low, mid = min(values), statistics.median(values)
        print(
            f"  {name:<22} min {low:6.2f}  median {mid:6.2f}  ratio {mid / base_med:4.2f}x"
            f"  overhead {mid - base_med:+6.2f} ms (min {low - base_min:+.2f})"
        )
    http.close()
    system.close()
    server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
