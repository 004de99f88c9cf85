"""A scripted chat model behind real HTTP on 127.0.0.1 (ephemeral port), for the agent tests.

It speaks both wire formats: ``POST /v1/chat/completions`` (OpenAI-compatible) and ``POST /v1/messages``
(Anthropic), each streaming (server-sent events over chunked transfer encoding) or as one JSON answer, as the
request asks. Answers are built from the official SDKs' own response classes (``openai.types.chat``,
``anthropic.types``) and requests are checked as strictly as the real APIs check them (``sdk_wire``): an invalid
request gets the provider's 400, lands in ``llm.invalid`` and fails the test when the ``with`` block ends. Like the real APIs, an OpenAI stream carries its
usage only when asked (``stream_options.include_usage``), and Anthropic refuses a thinking-enabled request whose
tool-use turn does not start with the thinking blocks it sent, unchanged.

What it answers comes from a script: a list of ``Reply`` (one per request, in order) or a function of the
``Request`` (for concurrent requests, whose order is not fixed).

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

import anthropic.types as at
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat import chat_completion as cc
from openai.types.chat import chat_completion_chunk as ck
from sdk_wire import request_problems

ToolCallSpec = tuple[str, Any, str | None]


@dataclass
class Reply:
    """One scripted answer: text, tool calls, thinking, a refusal, or an error.

    ``status`` >= 400 answers with an error: ``body`` as given (a provider's real error body), else a generic
    one with ``error`` as its message. In a stream, ``error_at`` sends ``stream_error`` (an error event) after
    that many events, and ``cut_at`` ends the connection after that many, without the stream's end.
    """

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "scripted failure"
    body: dict[str, Any] | None = None
    chunk_delay: float = 0.0  # seconds to wait after each streamed event...
    delay_from: int = 0  # ...counting from this event on
    stop: str | None = None  # the provider's own stop/finish reason (default: from the content)
    pieces: int = 3
    thinking: tuple[str, ...] = ()  # Anthropic thinking blocks (the server signs them)
    redacted: tuple[str, ...] = ()  # Anthropic redacted_thinking blocks (their data)
    reasoning: str = ""  # reasoning_content of an OpenAI-compatible server
    refusal: str = ""  # OpenAI: message.refusal; Anthropic: stop_reason "refusal" after ``text``
    usage: tuple[int, int] | None = None  # (input, output) tokens
    error_at: int | None = None
    stream_error: dict[str, Any] | None = None
    cut_at: int | None = None
    wait: float = 0.0  # seconds of silence before the answer's headers (a server still reading the prompt)


def say(text: str, **options: Any) -> Reply:
    return Reply(text=text, **options)


def call(name: str, arguments: Any = None, id: str | None = None) -> ToolCallSpec:
    """A tool call; ``arguments`` is a dict (sent as JSON) or a string sent as it is (malformed on purpose)."""
    return (name, {} if arguments is None else arguments, id)


def calls(*tool_calls: ToolCallSpec, text: str = "", **options: Any) -> Reply:
    return Reply(text=text, tool_calls=list(tool_calls), **options)


def status(
    code: int,
    message: str = "scripted failure",
    headers: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> Reply:
    return Reply(status=code, error=message, headers=dict(headers or {}), body=body)


@dataclass
class Request:
    """One request the server received (``problems``: what made it invalid, empty when it was valid)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    client_port: int = 0  # the same port twice means the client reused its connection
    problems: list[str] = field(default_factory=list)

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
    """The server. ``openai_url`` / ``anthropic_url`` are the base URLs to configure; ``requests`` what came in,
    ``invalid`` the requests it refused as the real API would."""

    def __init__(
        self,
        script: list[Reply] | Callable[[Request], Reply],
        *,
        strict: bool = True,
        expect_valid: bool = True,
    ) -> None:
        self._script = script
        self._lock = threading.Lock()
        self.strict = strict
        self.expect_valid = expect_valid  # an invalid request fails the test when the block ends
        self.requests: list[Request] = []
        self.invalid: list[Request] = []
        self.signatures: dict[str, str] = {}  # signature -> the thinking it signs (what this server sent)
        self.redactions: set[str] = set()
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.openai_url = f"http://127.0.0.1:{self.port}/v1"
        self.anthropic_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if kind is None and self.invalid and self.expect_valid:
            problems = [p for r in self.invalid for p in r.problems]
            raise AssertionError(f"{len(self.invalid)} request(s) the real API would refuse: {problems}")

    def check(self, request: Request) -> list[str]:
        """What the real API would refuse in ``request`` (empty: nothing)."""
        found = request_problems(request.body, anthropic=request.anthropic)
        if request.anthropic and (request.body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
            found += self._thinking_problems(request.messages)
        return found

    def _thinking_problems(self, messages: list[dict[str, Any]]) -> list[str]:
        found = []
        for i, msg in enumerate(messages):
            content = msg.get("content")
            if msg.get("role") != "assistant" or not isinstance(content, list):
                continue
            for j, block in enumerate(content):
                kind = block.get("type")
                if kind == "thinking" and self.signatures.get(block.get("signature", "")) != block.get(
                    "thinking"
                ):
                    found.append(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
                elif kind == "redacted_thinking" and block.get("data") not in self.redactions:
                    found.append(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        content = last.get("content") if last else None
        if isinstance(content, list) and any(b.get("type") == "tool_use" for b in content):
            first = content[0].get("type")
            if first not in ("thinking", "redacted_thinking"):
                found.append(
                    f"messages.{messages.index(last)}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    f"but found `{first}`. When `thinking` is enabled, a final `assistant` message must start "
                    "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
                )
        return found

    def next_reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.problems:
                self.invalid.append(request)
                return status(400, "; ".join(request.problems))
            if callable(self._script):
                script = self._script
            elif self._script:
                return self._script.pop(0)
            else:
                return status(500, "the script is exhausted: the test expected fewer requests")
        return script(request)

    def sign(self, thinking: str) -> str:
        signature = "sig-" + uuid.uuid4().hex
        with self._lock:
            self.signatures[signature] = thinking
        return signature

    def redact(self, data: str) -> str:
        with self._lock:
            self.redactions.add(data)
        return data


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up (a cancel) is normal
            super().handle_error(request, client_address)


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
        if self.llm.strict:
            request.problems = self.llm.check(request)
        reply = self.llm.next_reply(request)
        if reply.wait:
            time.sleep(reply.wait)
        if reply.status >= 400:
            self._send_json(reply.body or _error_body(request, reply), reply.status, reply.headers)
            return
        if request.anthropic:
            if request.stream:
                self._send_events(_anthropic_events(reply, body, self.llm), reply, named=True)
            else:
                self._send_json(_anthropic_json(reply, body, self.llm))
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
                if reply.cut_at is not None and number >= reply.cut_at:
                    self.close_connection = True  # no end of the stream: the connection just ends
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if reply.error_at is not None and number == reply.error_at:
                    name, data = "error", reply.stream_error or {}
                self._frame(name, data, named)
                if name == "error":
                    break
                if reply.chunk_delay and number >= reply.delay_from:
                    time.sleep(reply.chunk_delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _frame(self, name: str, data: Any, named: bool) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        raw = ((f"event: {name}\n" if named else "") + f"data: {text}\n\n").encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()


def _error_body(request: Request, reply: Reply) -> dict[str, Any]:
    if request.anthropic:
        kind = "invalid_request_error" if reply.status == 400 else "api_error"
        return at.ErrorResponse(
            type="error",
            error={"type": kind, "message": reply.error},
            request_id="req_scripted",
        ).model_dump(mode="json", exclude_unset=True)
    kind = "invalid_request_error" if reply.status < 500 else "server_error"
    return {"error": {"message": reply.error, "type": kind, "param": None, "code": None}}


def _finish(reply: Reply) -> str:
    return reply.stop or ("tool_calls" if reply.tool_calls else "stop")


def _call_id(cid: str | None, prefix: str) -> str:
    return cid or f"{prefix}_{uuid.uuid4().hex[:8]}"


def _openai_json(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    prompt, completion = reply.usage or (11, 7)
    message = cc.ChatCompletionMessage(
        role="assistant",
        content=reply.text or None,
        refusal=reply.refusal or None,
        tool_calls=[
            {
                "id": _call_id(cid, "call"),
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for name, args, cid in reply.tool_calls
        ]
        or None,
    )
    data = ChatCompletion(
        id="chatcmpl-test",
        object="chat.completion",
        created=int(time.time()),
        model=str(body.get("model")),
        choices=[cc.Choice(index=0, message=message, finish_reason=_finish(reply), logprobs=None)],  # type: ignore[arg-type]
        usage=CompletionUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
    ).model_dump(mode="json", exclude_unset=True)
    if reply.reasoning:  # not in OpenAI's own types: what DeepSeek, vLLM and llama.cpp add
        data["choices"][0]["message"]["reasoning_content"] = reply.reasoning
    return data


def _openai_chunks(reply: Reply, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    model = str(body.get("model"))
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> tuple[str, Any]:
        data = ChatCompletionChunk(
            id="chatcmpl-test",
            object="chat.completion.chunk",
            created=created,
            model=model,
            choices=[ck.Choice(index=0, delta=ck.ChoiceDelta(**delta), finish_reason=finish)],  # type: ignore[arg-type]
        ).model_dump(mode="json", exclude_unset=True)
        data["choices"][0]["delta"].update(extra)
        return "message", data

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.reasoning, 2):
        yield chunk({}, reasoning_content=piece)
    for piece in _pieces(reply.text, reply.pieces):
        yield chunk({"content": piece})
    for piece in _pieces(reply.refusal, 2):
        yield chunk({"refusal": piece})
    for index, (name, args, cid) in enumerate(reply.tool_calls):
        text = _arguments(args)
        head = {"index": index, "id": _call_id(cid, "call"), "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(text, 3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(reply))
    if (body.get("stream_options") or {}).get("include_usage"):  # as OpenAI: usage only when asked for
        prompt, completion = reply.usage or (11, 7)
        usage = ChatCompletionChunk(
            id="chatcmpl-test",
            object="chat.completion.chunk",
            created=created,
            model=model,
            choices=[],
            usage=CompletionUsage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            ),
        )
        yield "message", usage.model_dump(mode="json", exclude_unset=True)
    yield "message", "[DONE]"


_ANTHROPIC_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


def _anthropic_stop(reply: Reply) -> str:
    if reply.refusal:
        return "refusal"
    return _ANTHROPIC_STOP.get(_finish(reply), _finish(reply))


def _tool_input(args: Any) -> dict[str, Any]:
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args)
    except ValueError:
        return {}  # malformed on purpose: a stream sends the text as it is (see _raw_input)
    return value if isinstance(value, dict) else {}


def _anthropic_blocks(reply: Reply, llm: ScriptedLLM) -> list[Any]:
    blocks: list[Any] = [
        at.ThinkingBlock(type="thinking", thinking=t, signature=llm.sign(t)) for t in reply.thinking
    ]
    blocks += [at.RedactedThinkingBlock(type="redacted_thinking", data=llm.redact(d)) for d in reply.redacted]
    if reply.text:
        blocks.append(at.TextBlock(type="text", text=reply.text))
    for name, args, cid in reply.tool_calls:
        block = at.ToolUseBlock(
            type="tool_use", id=_call_id(cid, "toolu"), name=name, input=_tool_input(args)
        )
        blocks.append((block, _arguments(args)))
    return blocks


def _anthropic_json(reply: Reply, body: dict[str, Any], llm: ScriptedLLM) -> dict[str, Any]:
    prompt, completion = reply.usage or (13, 5)
    return at.Message(
        id="msg_test",
        type="message",
        role="assistant",
        model=str(body.get("model")),
        content=[b[0] if isinstance(b, tuple) else b for b in _anthropic_blocks(reply, llm)],
        stop_reason=_anthropic_stop(reply),  # type: ignore[arg-type]
        stop_sequence=None,
        usage=at.Usage(input_tokens=prompt, output_tokens=completion),
    ).model_dump(mode="json", exclude_unset=True)


def _dump(event: Any) -> tuple[str, Any]:
    data = event.model_dump(mode="json", exclude_unset=True)
    return data["type"], data


def _anthropic_events(reply: Reply, body: dict[str, Any], llm: ScriptedLLM) -> Iterator[tuple[str, Any]]:
    prompt, completion = reply.usage or (13, 5)
    start = at.Message(
        id="msg_test",
        type="message",
        role="assistant",
        model=str(body.get("model")),
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=at.Usage(input_tokens=prompt, output_tokens=1),
    )
    yield _dump(at.RawMessageStartEvent(type="message_start", message=start))
    for index, item in enumerate(_anthropic_blocks(reply, llm)):
        block, raw = item if isinstance(item, tuple) else (item, "")
        if isinstance(block, at.ThinkingBlock):
            empty: Any = at.ThinkingBlock(type="thinking", thinking="", signature="")
            deltas: list[Any] = [
                at.ThinkingDelta(type="thinking_delta", thinking=p) for p in _pieces(block.thinking, 2)
            ]
            deltas.append(at.SignatureDelta(type="signature_delta", signature=block.signature))
        elif isinstance(block, at.TextBlock):
            empty = at.TextBlock(type="text", text="")
            deltas = [at.TextDelta(type="text_delta", text=p) for p in _pieces(block.text, reply.pieces)]
        elif isinstance(block, at.ToolUseBlock):
            empty = at.ToolUseBlock(type="tool_use", id=block.id, name=block.name, input={})
            deltas = [at.InputJSONDelta(type="input_json_delta", partial_json=p) for p in _pieces(raw, 3)]
        else:  # redacted thinking arrives whole
            empty, deltas = block, []
        yield _dump(
            at.RawContentBlockStartEvent(type="content_block_start", index=index, content_block=empty)
        )
        if isinstance(block, at.TextBlock):
            yield "ping", {"type": "ping"}
        for delta in deltas:
            yield _dump(at.RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta))
        yield _dump(at.RawContentBlockStopEvent(type="content_block_stop", index=index))
    yield _dump(
        at.RawMessageDeltaEvent(
            type="message_delta",
            delta={"stop_reason": _anthropic_stop(reply), "stop_sequence": None},  # type: ignore[arg-type]
            usage=at.MessageDeltaUsage(output_tokens=completion),
        )
    )
    yield _dump(at.RawMessageStopEvent(type="message_stop"))
