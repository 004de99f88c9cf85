"""The model clients on their own: the ``[models]`` table, what goes on the wire, retries and timeouts."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from agent_support import MakeSystem, model_table
from scripted_llm import Reply, ScriptedLLM, call, calls, say, status

from hermes_core.config import ConfigError, load_config
from hermes_core.models import (
    AnthropicClient,
    CancelToken,
    ModelConfigError,
    ModelError,
    OpenAIChatClient,
    get_model,
    model_problem,
    model_specs,
)
from hermes_core.models._anthropic import to_anthropic_messages
from hermes_core.models._http import iter_sse, retry_after_seconds


def client_for(make_system: MakeSystem, table: dict[str, Any]) -> Any:
    return get_model(make_system(models={"test": table}))


# -- configuration -------------------------------------------------------------------------------------------


def test_no_model_configured_is_a_clear_config_error(make_system: MakeSystem) -> None:
    system = make_system()
    with pytest.raises(ModelConfigError, match="no model is configured"):
        get_model(system)
    assert "no model is configured" in (model_problem(system.config) or "")


def test_the_default_model_unknown_names_and_several_models(make_system: MakeSystem) -> None:
    one = make_system(models={"local": {"base_url": "http://127.0.0.1:9/v1"}})
    assert get_model(one).name == "local" and get_model(one).model == "local"
    two = make_system(
        models={"a": {"base_url": "http://127.0.0.1:9/v1"}, "b": {"base_url": "http://127.0.0.1:9/v1"}}
    )
    with pytest.raises(ModelConfigError, match="none is the default"):
        get_model(two)
    assert get_model(two, "b").name == "b"
    with pytest.raises(ModelConfigError, match="unknown model 'c'; configured models: a, b"):
        get_model(two, "c")
    chosen = make_system(
        models={"default": "b", "a": {"base_url": "http://x/v1"}, "b": {"base_url": "http://y/v1"}}
    )
    assert get_model(chosen).name == "b"


def test_an_api_key_from_an_unset_variable_makes_the_model_unusable(
    make_system: MakeSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HERMES_TEST_MODEL_KEY", raising=False)
    system = make_system(
        models={"m": {"base_url": "http://127.0.0.1:9/v1", "api_key": {"env": "HERMES_TEST_MODEL_KEY"}}}
    )
    assert "environment variable HERMES_TEST_MODEL_KEY" in (model_problem(system.config) or "")
    hosted = make_system(models={"gpt": {"provider": "openai"}})
    assert "api.openai.com needs an api_key" in (model_problem(hosted.config) or "")


def test_bad_model_tables_name_the_key(tmp_path: Any) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[models.x]\nprovider = "gemini"\n')
    with pytest.raises(ConfigError, match=r"\[models.x\]: provider must be one of openai, anthropic"):
        model_specs(load_config(path))
    path.write_text('[models.x]\nbase_url = "ftp://host"\n')
    with pytest.raises(ConfigError, match="base_url must start with http"):
        model_specs(load_config(path))
    path.write_text("[models.x]\ncontext_windw = 100\n")
    with pytest.raises(ConfigError, match=r":2: key 'models.x.context_windw' is not a known setting"):
        load_config(path)
    path.write_text("[models.x]\nmax_tokens = 0\n")
    with pytest.raises(ConfigError, match="max_tokens must be positive"):
        model_specs(load_config(path))


# -- the wire ------------------------------------------------------------------------------------------------


def test_openai_request_carries_key_headers_options_and_clean_messages(
    make_system: MakeSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_TEST_MODEL_KEY", "sk-test-123")
    with ScriptedLLM([say("hi")]) as llm:
        table = model_table(
            llm,
            api_key={"env": "HERMES_TEST_MODEL_KEY"},
            headers={"X-Team": "hermes"},
            max_tokens=300,
            temperature=0.1,
            params={"top_p": 0.5},
        )
        client = client_for(make_system, table)
        assert isinstance(client, OpenAIChatClient)
        messages = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call_part("c1", "ping")]},
            {"role": "tool", "tool_call_id": "c1", "name": "ping", "content": "pong", "extra": 1},
        ]
        reply = client.complete(
            messages, [{"type": "function", "function": {"name": "ping", "parameters": {}}}]
        )
    assert reply.text == "hi" and reply.stop_reason == "stop"
    request = llm.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-123" and request.headers["x-team"] == "hermes"
    body = request.body
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stream"]) == (300, 0.1, 0.5, True)
    assert body["model"] == "scripted-openai" and body["tools"][0]["function"]["name"] == "ping"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "pong"}


def call_part(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_anthropic_request_shape(make_system: MakeSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_MODEL_KEY", "sk-ant-test")
    with ScriptedLLM([say("hello")]) as llm:
        client = client_for(
            make_system, model_table(llm, "anthropic", api_key={"env": "HERMES_TEST_MODEL_KEY"})
        )
        assert isinstance(client, AnthropicClient)
        messages = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read two files"},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [call_part("t1", "read"), call_part("t2", "read", "{bad")],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "one"},
            {"role": "tool", "tool_call_id": "t2", "content": "two"},
            {"role": "user", "content": "and?"},
        ]
        client.complete(messages, [{"name": "read", "input_schema": {"type": "object"}}])
    request = llm.requests[0]
    assert request.path == "/v1/messages"
    assert (
        request.headers["x-api-key"] == "sk-ant-test" and request.headers["anthropic-version"] == "2023-06-01"
    )
    body = request.body
    assert body["system"] == "be brief" and body["max_tokens"] == 4096
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]  # tool results and the next user text share one user turn
    assistant = body["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert assistant[2]["input"] == {}  # unparsable arguments become an empty object on this wire
    results = body["messages"][2]["content"]
    assert [(b["type"], b.get("tool_use_id")) for b in results] == [
        ("tool_result", "t1"),
        ("tool_result", "t2"),
        ("text", None),
    ]


def test_to_anthropic_messages_starts_with_a_user_turn() -> None:
    system, messages = to_anthropic_messages([{"role": "assistant", "content": "hello"}])
    assert system == "" and [m["role"] for m in messages] == ["user", "assistant"]


def test_streamed_tool_calls_without_an_index_are_put_back_together(make_system: MakeSystem) -> None:
    """Some servers (Ollama-style) send each call whole and without ``index``."""
    client = client_for(make_system, {"base_url": "http://127.0.0.1:9/v1"})
    slots: dict[int, Any] = {}
    client._merge_call(slots, {"id": "a", "function": {"name": "read", "arguments": '{"path": '}})
    client._merge_call(slots, {"function": {"arguments": '"x"}'}})
    client._merge_call(slots, {"id": "b", "function": {"name": "write", "arguments": {"path": "y"}}})
    assert [(s.id, s.name, s.arguments) for s in slots.values()] == [
        ("a", "read", '{"path": "x"}'),
        ("b", "write", '{"path": "y"}'),
    ]


def test_server_sent_events_parsing() -> None:
    lines = [": comment", "event: one", "data: a", "data: b", "", "data: c", "", "data: tail"]
    assert list(iter_sse(iter(lines))) == [("one", "a\nb"), ("message", "c"), ("message", "tail")]


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


@pytest.mark.parametrize(("provider", "stream"), [("openai", True), ("anthropic", True), ("openai", False)])
def test_connections_are_reused_between_requests(
    make_system: MakeSystem, provider: str, stream: bool
) -> None:
    with ScriptedLLM([calls(call("ping")), say("two"), say("three")]) as llm:
        client = client_for(make_system, model_table(llm, provider, stream))
        for _ in range(3):
            client.complete([{"role": "user", "content": "hi"}])
    assert len({r.client_port for r in llm.requests}) == 1


# -- failures and retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_429_and_5xx_are_retried_honouring_retry_after(make_system: MakeSystem, provider: str) -> None:
    retries: list[tuple[int, float, str]] = []
    script = [
        status(429, "rate limited", {"retry-after": "0.2"}),
        status(503, "overloaded", {"retry-after-ms": "10"}),
        say("finally"),
    ]
    with ScriptedLLM(script) as llm:
        client = client_for(make_system, model_table(llm, provider))
        reply = client.complete([{"role": "user", "content": "hi"}], on_retry=lambda *a: retries.append(a))
    assert reply.text == "finally" and len(llm.requests) == 3
    assert [(a, d) for a, d, _ in retries] == [(1, 0.2), (2, 0.01)]


def test_retries_give_up_after_max_retries(make_system: MakeSystem) -> None:
    with ScriptedLLM(lambda r: status(500, "boom", {"retry-after": "0"})) as llm:
        client = client_for(make_system, model_table(llm, max_retries=1))
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert err.value.kind == "server" and err.value.status == 500 and len(llm.requests) == 2
    assert "HTTP 500: boom" in err.value.message


def test_a_key_echoed_back_by_the_server_is_redacted_from_the_error(
    make_system: MakeSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    monkeypatch.setenv("HERMES_TEST_MODEL_KEY", key)
    with ScriptedLLM([status(401, f"Incorrect API key provided: {key}.")]) as llm:
        client = client_for(make_system, model_table(llm, api_key={"env": "HERMES_TEST_MODEL_KEY"}))
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert (
        err.value.kind == "auth" and key not in err.value.message and "check the api_key" in err.value.message
    )
    assert key not in repr(get_model(make_system(models={"m": model_table(llm, api_key=key)})).spec)


def test_a_retry_after_beyond_max_retry_wait_is_not_waited_for(make_system: MakeSystem) -> None:
    with ScriptedLLM([status(429, "quota", {"retry-after": "3600"})]) as llm:
        client = client_for(make_system, model_table(llm))
        with pytest.raises(ModelError, match="longer than max_retry_wait") as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert err.value.kind == "rate_limit" and len(llm.requests) == 1


@pytest.mark.parametrize(("code", "kind"), [(400, "bad_request"), (401, "auth"), (404, "bad_request")])
def test_client_errors_are_not_retried(make_system: MakeSystem, code: int, kind: str) -> None:
    with ScriptedLLM([status(code, "nope")]) as llm:
        client = client_for(make_system, model_table(llm))
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert err.value.kind == kind and len(llm.requests) == 1


def test_a_refused_connection_is_retried_then_reported(make_system: MakeSystem) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    client = client_for(
        make_system, {"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 1, "timeout": 5}
    )
    retries: list[Any] = []
    with pytest.raises(ModelError) as err:
        client.complete([{"role": "user", "content": "hi"}], on_retry=lambda *a: retries.append(a))
    assert err.value.kind == "connection" and len(retries) == 1


def test_a_silent_server_times_out_and_is_retried(make_system: MakeSystem) -> None:
    # the first event arrives, then nothing for longer than the timeout: nothing reached the caller, so retry
    with ScriptedLLM(lambda r: say("late", chunk_delay=1.0)) as llm:
        client = client_for(make_system, model_table(llm, timeout=0.3, max_retries=1))
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert err.value.kind == "timeout" and len(llm.requests) == 2


def test_a_stream_that_breaks_after_text_arrived_is_not_retried(make_system: MakeSystem) -> None:
    seen: list[str] = []
    with ScriptedLLM(lambda r: say("a b c d", pieces=4, chunk_delay=1.0, delay_from=1)) as llm:
        client = client_for(make_system, model_table(llm, timeout=0.5, max_retries=3))
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}], on_text=seen.append)
    assert err.value.kind == "timeout" and seen == ["a "] and len(llm.requests) == 1


def test_cancelling_during_a_retry_wait_stops_at_once(make_system: MakeSystem) -> None:
    import threading

    token = CancelToken()
    with ScriptedLLM([status(429, "wait", {"retry-after": "30"})]) as llm:
        client = client_for(make_system, model_table(llm))
        threading.Timer(0.2, token.cancel).start()
        with pytest.raises(ModelError) as err:
            client.complete([{"role": "user", "content": "hi"}], cancel=token)
    assert err.value.kind == "cancelled" and len(llm.requests) == 1


def test_cancel_tokens_cascade_to_children() -> None:
    parent = CancelToken()
    child = parent.child()
    grandchild = child.child()
    child.cancel()
    assert grandchild.cancelled and not parent.cancelled
    other = parent.child()
    parent.cancel()
    assert other.cancelled and parent.child().cancelled


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_stop_reason_length_is_reported(make_system: MakeSystem, provider: str) -> None:
    with ScriptedLLM([Reply(text="cut", stop="length")]) as llm:
        client = client_for(make_system, model_table(llm, provider))
        assert client.complete([{"role": "user", "content": "hi"}]).stop_reason == "length"


def test_an_error_event_in_an_anthropic_stream_is_retried(make_system: MakeSystem) -> None:
    """``overloaded_error`` inside a 200 stream (before any text) counts like a 529."""
    from scripted_llm import _Handler

    sent = {"n": 0}
    original = _Handler._send_events

    def overloaded_once(self: Any, events: Any, reply: Any, *, named: bool) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            events = iter([("error", error)])
        original(self, events, reply, named=named)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Handler, "_send_events", overloaded_once)
        with ScriptedLLM([say("lost"), calls(call("ping"))]) as llm:
            client = client_for(make_system, model_table(llm, "anthropic"))
            reply = client.complete([{"role": "user", "content": "hi"}])
    assert reply.tool_calls and reply.tool_calls[0].name == "ping" and len(llm.requests) == 2
