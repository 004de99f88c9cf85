"""The MCP client to the letter, against real servers: FastMCP (a tool without annotations), server-everything
(HTTP+SSE, elicitation, sampling, roots, resources and prompts) and ``echo_server.py`` (junk on stdout, a
resource list that changes).

The issue's report: the client ran un-annotated tools without approval (MCP's default for a tool without
annotations is destructive); a ``/sse`` URL failed; server-everything hid its elicitation, sampling and roots tools
because hermes declared none of them; resources and prompts were neither used nor served; junk lines from a server
printed a traceback each.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import SERVER, eventually, free_port, load, wait_for_port
from pytest_httpserver import HTTPServer
from test_third_party import _everything, _ready

from hermes_core import ToolSystem, mcp
from hermes_core.security import CallbackApprover

NOTES = str(Path(__file__).with_name("fastmcp_server.py"))


def _fastmcp(trust: str | None = None, **kwargs: Any) -> ToolSystem:
    pytest.importorskip("fastmcp", reason="fastmcp is in the test extra: pip install -e '.[test]'")
    spec: dict[str, Any] = {"command": sys.executable, "args": [NOTES]}
    if trust is not None:
        spec["trust"] = trust
    system = load({"notes": spec}, **kwargs)
    _ready(system, "notes")
    return system


class Recorder:
    """An approver that records each request and answers ``answer``."""

    def __init__(self, answer: str = "once") -> None:
        self.answer = answer
        self.asked: list[Any] = []

    def __call__(self, request: Any) -> str:
        self.asked.append(request)
        return self.answer


# -- annotations and trust -----------------------------------------------------------------------------


def test_a_tool_without_annotations_asks_first_and_headless_is_denied() -> None:
    system = _fastmcp()
    try:
        assert system.registry["forget"].annotations is None  # FastMCP sent none
        denied = system.call_outcome("forget", {"name": "groceries"})
        assert (denied.status, denied.error_kind) == ("denied", "approval")
        assert "does not mark 'forget' read-only" in denied.result and "trust = 'all'" in denied.result
        assert system.call("recall", {"name": "groceries"}) == "the note groceries"  # read-only: no question
    finally:
        system.close()


def test_with_someone_to_ask_the_approval_binds_to_the_call() -> None:
    recorder = Recorder("once")
    system = _fastmcp(approver=CallbackApprover(recorder))
    try:
        assert system.call("forget", {"name": "groceries"}) == "forgot groceries"
        assert [r.subject for r in recorder.asked] == ['mcp:notes forget {"name": "groceries"}']
        assert system.call("recall", {"name": "x"}) == "the note x" and len(recorder.asked) == 1
    finally:
        system.close()


@pytest.mark.parametrize(
    ("trust", "asks_forget", "asks_recall"), [("all", False, False), ("none", True, True)]
)
def test_trust_relaxes_or_tightens_it_per_server(trust: str, asks_forget: bool, asks_recall: bool) -> None:
    recorder = Recorder("once")
    system = _fastmcp(trust, approver=CallbackApprover(recorder))
    try:
        assert system.call("forget", {"name": "a"}) == "forgot a"
        assert system.call("recall", {"name": "b"}) == "the note b"
        assert [r.subject.split()[1] for r in recorder.asked] == (
            ["forget"] * asks_forget + ["recall"] * asks_recall
        )
    finally:
        system.close()


def test_an_unknown_trust_is_a_configuration_error() -> None:
    system = load({"bad": {"command": sys.executable, "args": [NOTES], "trust": "some"}})
    try:
        assert "trust must be one of annotations, all, none" in system.mcp_status()["bad"]["error"]
    finally:
        system.close()


# -- HTTP+SSE ------------------------------------------------------------------------------------------


def test_an_old_http_sse_server_works_at_its_sse_url() -> None:
    command = _everything()
    port = free_port()
    proc = subprocess.Popen(
        [command, "sse"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        system = load({"old": {"url": f"http://127.0.0.1:{port}/sse", "trust": "all"}})
        try:
            _ready(system, "old")
            assert system.mcp_status()["old"]["transport"] == "sse"
            assert system.call("echo", {"message": "over sse"}) == "Echo: over sse"
            assert system.call("get-sum", {"a": 1, "b": 2}) == "The sum of 1 and 2 is 3."
        finally:
            system.close()
    finally:
        proc.terminate()
        proc.wait(10)


# -- elicitation, sampling, roots against a scripted host ----------------------------------------------


@pytest.fixture
def model_server(httpserver: HTTPServer) -> HTTPServer:
    """An OpenAI-compatible endpoint that answers every chat request with the same short text."""
    reply = {
        "id": "c1",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Tests pass, all green."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }  # fmt: skip
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(reply)
    return httpserver


class Script:
    """A scripted user: answers each question by the first key it contains (the rest: empty, the default)."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.questions: list[tuple[str, Any]] = []

    def __call__(self, question: str, choices: Any = None) -> str:
        self.questions.append((question, choices))
        return next((v for k, v in self.answers.items() if k in question), "")


@pytest.fixture
def scripted(model_server: HTTPServer, tmp_path: Path) -> Iterator[tuple[ToolSystem, Script, Recorder]]:
    script = Script(
        {"Answer its questions": "accept", "String:": "Ada Lovelace", "Boolean": "yes", "Choose your favorite friend":
         "Joey", "instruments": "Piano, Drums", "email": "ada@example.org"}
    )  # fmt: skip
    recorder = Recorder("session")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    system = ToolSystem.load(
        config={
            "mcp": {"servers": {"everything": {"command": _everything(), "timeout": 10}}},
            "models": {
                "fake": {"base_url": model_server.url_for("/v1"), "model": "fake-model", "stream": False}
            },
        },
        load_entry_points=False,
        plugins_dir=False,
        ask_user=script,
        approver=CallbackApprover(recorder),
        workspace=workspace,
    )
    try:
        _ready(system, "everything")
        yield system, script, recorder
    finally:
        system.close()


def test_elicitation_sampling_and_roots_tools_are_offered(
    scripted: tuple[ToolSystem, Script, Recorder],
) -> None:
    system, _, _ = scripted
    tools = set(system.mcp_status()["everything"]["tools"])
    assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= tools


def test_an_elicitation_reaches_the_user(scripted: tuple[ToolSystem, Script, Recorder]) -> None:
    system, script, _ = scripted
    result = system.call("trigger-elicitation-request", {})
    assert "Ada Lovelace" in result and "Joey" in result and "accept" in result.lower(), result
    assert script.questions[0][1] == ["accept", "decline", "cancel"]
    assert any(choices == ["yes", "no"] for _, choices in script.questions)


def test_sampling_is_served_by_the_configured_model_after_approval(
    scripted: tuple[ToolSystem, Script, Recorder], model_server: HTTPServer
) -> None:
    system, _, recorder = scripted
    result = system.call("trigger-sampling-request", {"prompt": "write a haiku", "maxTokens": 20})
    assert "Tests pass, all green." in result, result
    [request] = [r for r in recorder.asked if r.kind == "mcp-sampling"]
    assert request.subject == "mcp:everything sampling" and "write a haiku" in request.reason
    body = json.loads(model_server.log[-1][0].get_data())
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful test server."}
    assert "write a haiku" in body["messages"][1]["content"]
    system.call("trigger-sampling-request", {"prompt": "again"})
    assert len([r for r in recorder.asked if r.kind == "mcp-sampling"]) == 1  # "session" covers the server


def test_the_roots_are_the_workspace(scripted: tuple[ToolSystem, Script, Recorder]) -> None:
    system, _, _ = scripted
    result = system.call("get-roots-list", {})
    assert system.workspace.as_uri() in result, result


def test_a_headless_host_refuses_with_the_reason() -> None:
    system = load({"everything": {"command": _everything(), "timeout": 10}})
    try:
        _ready(system, "everything")
        elicited = system.call("trigger-elicitation-request", {})
        assert "nobody can answer questions here" in elicited, elicited
        sampled = system.call("trigger-sampling-request", {"prompt": "hi"})
        assert "sampling refused" in sampled and "no model" in sampled, sampled
    finally:
        system.close()


# -- resources and prompts ------------------------------------------------------------------------------


def test_everything_resources_and_prompts_are_readable_through_hermes() -> None:
    system = load({"everything": {"command": _everything(), "timeout": 10}})
    try:
        _ready(system, "everything")
        listed = system.call("everything_list_resources")
        assert "demo://resource/static/document/architecture.md" in listed
        text = system.call(
            "everything_read_resource", {"uri": "demo://resource/static/document/architecture.md"}
        )
        assert len(text) > 100 and "Error" not in text[:50]
        assert "simple-prompt" in system.call("everything_list_prompts")
        prompt = system.call("everything_get_prompt", {"name": "args-prompt", "arguments": {"city": "Lyon"}})
        assert "Lyon" in prompt and "[user]" in prompt
        # the same through the Python API
        uris = [r["uri"] for r in mcp.resources(system, "everything")]
        assert "demo://resource/static/document/architecture.md" in uris
        assert mcp.read_resource(system, "everything", uris[0]) == text
        assert "simple-prompt" in [p["name"] for p in mcp.prompts(system, "everything")]
        assert "Lyon" in str(mcp.get_prompt(system, "everything", "args-prompt", {"city": "Lyon"}))
        assert system.registry["everything_read_resource"].annotations["readOnlyHint"] is True
    finally:
        system.close()


def test_a_changed_resource_list_is_listed_again() -> None:
    system = load({"echo": {"command": sys.executable, "args": [SERVER]}})
    try:
        _ready(system, "echo")
        assert "note://first" in system.call("echo_list_resources")
        assert "note://later" not in system.call("echo_list_resources")  # now cached
        assert system.call("publish", {"name": "later"}) == "published later"
        assert eventually(lambda: "note://later" in system.call("echo_list_resources"), 10)
        assert system.call("echo_read_resource", {"uri": "note://later"}) == "the note later"
    finally:
        system.close()


# -- a server that writes junk on its stdout ------------------------------------------------------------


def test_junk_lines_from_a_server_are_reported_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    noisy = tmp_path / "noisy_server.py"
    noisy.write_text(
        "import runpy, sys\n"
        "for i in range(20):\n"
        "    print(f'not json {i}', flush=True)\n"
        f"sys.argv = [{SERVER!r}]\n"
        f"runpy.run_path({SERVER!r}, run_name='__main__')\n"
    )
    with caplog.at_level(logging.DEBUG, logger="hermes.mcp"):
        system = load({"noisy": {"command": sys.executable, "args": [str(noisy)]}})
        try:
            _ready(system, "noisy")
            assert system.call("echo", {"text": "still works"}) == "still works"
        finally:
            system.close()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "not MCP" in r.getMessage()]
    assert len(warnings) == 1 and "logs belong on stderr" in warnings[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]  # no tracebacks


# -- cancelling a call to a server -----------------------------------------------------------------------


def test_a_cancelled_call_is_cancelled_on_the_server_too() -> None:
    import threading
    import time

    from hermes_core.cancellation import CancelToken, cancel_scope

    system = load({"echo": {"command": sys.executable, "args": [SERVER]}})
    try:
        _ready(system, "echo")
        token = CancelToken()
        threading.Timer(0.5, token.cancel).start()
        started = time.monotonic()
        with cancel_scope(token):
            outcome = system.call_outcome("sleep", {"seconds": 30})
        assert time.monotonic() - started < 5
        assert outcome.error_kind == "cancelled", outcome.result
        assert system.call("echo", {"text": "still connected"}) == "still connected"
    finally:
        system.close()
