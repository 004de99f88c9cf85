"""A scripted chat model behind real HTTP on 127.0.0.1 (ephemeral port), for the agent tests.

It speaks both wire formats: ``POST /v1/chat/completions`` (OpenAI-compatible) and ``POST /v1/messages``
(Anthropic), each streaming (server-sent events over chunked transfer encoding) or as one JSON answer, as the
request asks. What it answers comes from a script: a list of ``Reply`` (one per request, in order) or a
function of the ``Request`` (for concurrent requests, whose order is not fixed).

```python
with ScriptedLLM([calls(call("read_file", {"path": "a.txt"})), say("done")]) as llm:
    ...  # point [models.test] base_url at llm.openai_url (or llm.anthropic_url)
    llm.requests[1].tool_results()  # what the model was shown
```
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ToolCallSpec = tuple[str, Any, str | None]


@dataclass
class Reply:
    """One scripted answer: text, tool calls, or an HTTP error (``status`` >= 400)."""

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "scripted failure"
    chunk_delay: float = 0.0  # seconds to wait after each streamed event...
    delay_from: int = 0  # ...counting from this event on
    stop: str | None = None
    pieces: int = 3


def say(text: str, **options: Any) -> Reply:
    return Reply(text=text, **options)


def call(name: str, arguments: Any = None, id: str | None = None) -> ToolCallSpec:
    """A tool call; ``arguments`` is a dict (sent as JSON) or a string sent as it is (malformed on purpose)."""
    return (name, {} if arguments is None else arguments, id)


def calls(*tool_calls: ToolCallSpec, text: str = "", **options: Any) -> Reply:
    return Reply(text=text, tool_calls=list(tool_calls), **options)


def status(code: int, message: str = "scripted failure", headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=code, error=message, headers=dict(headers or {}))


@dataclass
class Request:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    client_port: int = 0  # the same port twice means the client reused its connection

    @property
    def anthropic(self) -> bool:
        return self.path.endswith("/messages")

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def tool_names(self) -> list[str]:
        out = []
        for tool in self.body.get("tools") or ():
            fn = tool.get("function")
            out.append(fn["name"] if isinstance(fn, dict) else tool["name"])
        return sorted(out)

    def system_text(self) -> str:
        if self.anthropic:
            return str(self.body.get("system", ""))
        return "\n".join(str(m.get("content")) for m in self.messages if m.get("role") == "system")

    def tool_results(self) -> list[str]:
        """The tool results after the last assistant message (what the model is answering now)."""
        if self.anthropic:
            last = self.messages[-1] if self.messages else {}
            if last.get("role") != "user" or not isinstance(last.get("content"), list):
                return []
            return [str(b.get("content")) for b in last["content"] if b.get("type") == "tool_result"]
        out: list[str] = []
        for msg in reversed(self.messages):
            if msg.get("role") != "tool":
                break
            out.append(str(msg.get("content")))
        return out[::-1]

    def user_texts(self) -> list[str]:
        out = []
        for msg in self.messages:
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(str(b.get("text")) for b in content if b.get("type") == "text")
        return out


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class ScriptedLLM:
    """The server. ``openai_url`` / ``anthropic_url`` are the base URLs to configure; ``requests`` what came in."""

    def __init__(self, script: list[Reply] | Callable[[Request], Reply]) -> None:
        self._script = script
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.openai_url = f"http://127.0.0.1:{self.port}/v1"
        self.anthropic_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if callable(self._script):
                script = self._script
            elif self._script:
                return self._script.pop(0)
            else:
                return status(500, "the script is exhausted: the test expected fewer requests")
        return script(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do: no 40 ms stall between headers and body
    llm: ScriptedLLM

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        request = Request(
            self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.client_address[1]
        )
        reply = self.llm.next_reply(request)
        if reply.status >= 400:
            if request.anthropic:
                payload = {"type": "error", "error": {"type": "api_error", "message": reply.error}}
            else:
                payload = {"error": {"message": reply.error, "type": "server_error"}}
            self._send_json(payload, reply.status, reply.headers)
            return
        if request.anthropic:
            if request.stream:
                self._send_events(_anthropic_events(reply, body), reply, named=True)
            else:
                self._send_json(_anthropic_json(reply, body))
        elif request.stream:
            self._send_events(_openai_chunks(reply, body), reply, named=False)
        else:
            self._send_json(_openai_json(reply, body))

    def _send_json(self, payload: Any, code: int = 200, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterator[tuple[str, Any]], reply: Reply, *, named: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for number, (name, data) in enumerate(events):
                text = data if isinstance(data, str) else json.dumps(data)
                frame = (f"event: {name}\n" if named else "") + f"data: {text}\n\n"
                raw = frame.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()
                if reply.chunk_delay and number >= reply.delay_from:
                    time.sleep(reply.chunk_delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _finish(reply: Reply) -> str:
    return reply.stop or ("tool_calls" if reply.tool_calls else "stop")


def _openai_json(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": cid or f"call_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for name, args, cid in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _openai_chunks(reply: Reply, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": body.get("model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, Any]:
        return "message", {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.text, reply.pieces):
        yield chunk({"content": piece})
    for index, (name, args, cid) in enumerate(reply.tool_calls):
        text = _arguments(args)
        head = {"index": index, "id": cid or f"call_{uuid.uuid4().hex[:8]}", "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(text, 3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(reply))
    yield "message", {**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}
    yield "message", "[DONE]"


_ANTHROPIC_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


def _anthropic_json(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for name, args, cid in reply.tool_calls:
        value = args if isinstance(args, dict) else json.loads(args)
        content.append(
            {"type": "tool_use", "id": cid or f"toolu_{uuid.uuid4().hex[:8]}", "name": name, "input": value}
        )
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(_finish(reply), _finish(reply)),
        "usage": {"input_tokens": 13, "output_tokens": 5},
    }


def _anthropic_events(reply: Reply, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_test",
                "model": body.get("model"),
                "usage": {"input_tokens": 13, "output_tokens": 1},
            },
        },
    )
    index = 0
    if reply.text:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield "ping", {"type": "ping"}
        for piece in _pieces(reply.text, reply.pieces):
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    for name, args, cid in reply.tool_calls:
        block = {"type": "tool_use", "id": cid or f"toolu_{uuid.uuid4().hex[:8]}", "name": name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        for piece in _pieces(_arguments(args), 3):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    stop = _ANTHROPIC_STOP.get(_finish(reply), _finish(reply))
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
    )
    yield "message_stop", {"type": "message_stop"}
