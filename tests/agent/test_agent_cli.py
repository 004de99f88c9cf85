"""``hermes run`` and ``hermes chat`` against a scripted model: output, exit codes, headless denials, sessions,
and a real terminal (a pseudo-terminal) for streaming, approvals and Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from agent_support import model_table
from click.testing import CliRunner, Result
from scripted_llm import Reply, Request, ScriptedLLM, call, calls, say, status

from hermes_core.cli import cli
from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker

HERMES = Path(sys.executable).with_name("hermes")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> Path:
    """The test's HERMES_HOME; the current directory (the workspace) lies outside it."""
    monkeypatch.chdir(workspace)
    return Path(os.environ["HERMES_HOME"])


def configure(home: Path, llm: ScriptedLLM | None, **extra: Any) -> None:
    """Write ``$HERMES_HOME/config.toml`` with ``[models.test]`` pointing at ``llm`` (plus other tables)."""
    doc: dict[str, Any] = dict(extra)
    if llm is not None:
        doc["models"] = {"test": model_table(llm)}
    (home / "config.toml").write_text(tomlkit.dumps(doc), "utf-8")


def hermes(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


# -- hermes run ----------------------------------------------------------------------------------------------


def test_run_prints_the_answer_and_shows_tool_calls_on_stderr(home: Path, workspace: Path) -> None:
    (workspace / "todo.txt").write_text("buy milk\n")
    with ScriptedLLM([calls(call("read_file", {"path": "todo.txt"})), say("You need to buy milk.")]) as llm:
        configure(home, llm)
        result = hermes("run", "What is on my todo list?")
    assert result.exit_code == 0, result.output
    assert result.stdout == "You need to buy milk.\n"
    assert "⚙ read_file" in result.stderr and "✓ read_file" in result.stderr
    assert llm.requests[0].user_texts() == ["What is on my todo list?"]


def test_run_json(home: Path) -> None:
    with ScriptedLLM([calls(call("search_files", {"pattern": "x"})), say("nothing found")]) as llm:
        configure(home, llm)
        result = hermes("run", "--json", "--quiet", "--session", "job-7", "find x")
    assert result.exit_code == 0 and result.stderr == ""
    data = json.loads(result.stdout)
    assert data["text"] == "nothing found" and data["stop_reason"] == "done" and data["turns"] == 2
    assert data["session_id"] == "job-7" and data["model"] == "test"
    assert [c["name"] for c in data["tool_calls"]] == ["search_files"]
    assert data["usage"]["input_tokens"] > 0


def test_run_reads_the_prompt_from_stdin(home: Path) -> None:
    with ScriptedLLM([say("got it")]) as llm:
        configure(home, llm)
        result = hermes("run", "-", input="a long prompt\nover two lines\n")
    assert result.exit_code == 0 and llm.requests[0].user_texts() == ["a long prompt\nover two lines\n"]


def test_run_denies_what_needs_approval_and_tells_the_model(home: Path, workspace: Path) -> None:
    script = [calls(call("write_file", {"path": "x.txt", "content": "x"})), say("I could not write x.txt.")]
    with ScriptedLLM(script) as llm:
        configure(home, llm, approvals={"tools": ["write_file"]})
        result = hermes("run", "write x.txt")
    assert result.exit_code == 0
    assert "✗ write_file denied" in result.stderr
    assert "Denied" in llm.requests[1].tool_results()[0]
    assert not (workspace / "x.txt").exists()


def test_run_exit_codes(home: Path) -> None:
    configure(home, None)
    no_model = hermes("run", "hi")
    assert no_model.exit_code == 2 and "no model is configured" in no_model.stderr
    with ScriptedLLM(lambda r: status(500, "the model crashed", {"retry-after": "0"})) as llm:
        configure(home, llm)
        unknown = hermes("run", "--model", "gpt-9", "hi")
        assert unknown.exit_code == 2 and "unknown model 'gpt-9'; configured models: test" in unknown.stderr
        typo = hermes("run", "--toolset", "flie", "hi")
        assert typo.exit_code == 2 and "unknown toolset or tool 'flie'" in typo.stderr
        failed = hermes("run", "hi")
        assert (
            failed.exit_code == 1 and "model error" in failed.stderr and "the model crashed" in failed.stderr
        )
    with ScriptedLLM(lambda r: calls(call("todo", {}))) as llm:
        configure(home, llm)
        budget = hermes("run", "--max-turns", "2", "loop")
        assert budget.exit_code == 3 and "stopped after 2 model turns" in budget.stderr
    assert hermes("run", "  ").exit_code == 2


def run_process(
    *args: str, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HERMES), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        env=dict(os.environ),
    )


def test_run_as_a_real_process_records_a_session_that_session_search_finds(home: Path) -> None:
    with ScriptedLLM([say("The capital of Burkina Faso is Ouagadougou.")]) as llm:
        configure(home, llm)
        done = run_process("run", "--session", "geo-1", "capital of Burkina Faso?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The capital of Burkina Faso is Ouagadougou.\n"
    found = run_process("call", "session_search", "query=Ouagadougou")
    assert found.returncode == 0 and "session geo-1" in found.stdout and "assistant" in found.stdout
    asked = run_process("call", "session_search", "query=Burkina", "role=user")
    assert "session geo-1" in asked.stdout


def test_run_exit_code_3_from_a_real_process(home: Path) -> None:
    with ScriptedLLM(lambda r: calls(call("todo", {}))) as llm:
        configure(home, llm)
        done = run_process("run", "--max-turns", "1", "--json", "loop")
    assert done.returncode == 3 and json.loads(done.stdout)["stop_reason"] == "max_turns"


def test_tools_list_explains_why_the_agent_tools_are_hidden(home: Path) -> None:
    configure(home, None)
    result = hermes("tools", "list", "--all", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name in ("delegate_task", "mixture_of_agents"):
        text = json.dumps(rows[name])
        assert "no model is configured" in text


# -- hermes chat without a terminal (CliRunner input) --------------------------------------------------------


def test_chat_reads_prompts_until_exit_and_keeps_the_conversation(home: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = [
        calls(call("read_file", {"path": "a.txt"})),
        say("It says alpha."),
        say("You asked about a.txt."),
    ]
    with ScriptedLLM(script) as llm:
        configure(home, llm)
        result = hermes("chat", input="what is in a.txt?\n\nwhat did I ask?\n/exit\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "hermes chat · model test" in out and "session chat-" in out
    assert "⚙ read_file" in out and "✓ read_file" in out
    assert out.index("It says alpha.") < out.index("You asked about a.txt.")
    assert llm.requests[2].user_texts() == ["what is in a.txt?", "what did I ask?"]


def test_chat_new_starts_a_fresh_conversation(home: Path) -> None:
    with ScriptedLLM([say("one"), say("two")]) as llm:
        configure(home, llm)
        result = hermes("chat", "--session", "first", input="hello\n/new\nhello again\n")
    assert result.exit_code == 0
    assert "(new conversation: session chat-" in result.stdout
    assert llm.requests[1].user_texts() == ["hello again"]


def test_chat_shows_a_model_error_and_goes_on(home: Path) -> None:
    with ScriptedLLM([status(400, "bad request body"), say("recovered")]) as llm:
        configure(home, llm)
        result = hermes("chat", input="first\nsecond\n")
    assert result.exit_code == 0
    assert (
        "model error:" in result.stdout
        and "bad request body" in result.stdout
        and "recovered" in result.stdout
    )


def test_chat_without_a_model_is_a_configuration_error(home: Path) -> None:
    configure(home, None)
    result = hermes("chat", input="hi\n")
    assert result.exit_code == 2 and "no model is configured" in result.stderr


# -- hermes chat on a pseudo-terminal ------------------------------------------------------------------------


class Terminal:
    """``hermes ARGS`` running on a pseudo-terminal: what it prints, what we type, its exit status."""

    def __init__(self, *args: str, cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal
            try:
                os.chdir(cwd)
                os.execve(
                    str(HERMES), [str(HERMES), *args], {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
                )
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.output = ""
        self.seen = 0

    def read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            self.output += ANSI.sub("", data.decode("utf-8", "replace"))

    def expect(self, text: str, timeout: float = 20.0) -> str:
        """Wait until ``text`` appears after what was already matched; return the output up to it."""
        deadline = time.monotonic() + timeout
        while text not in self.output[self.seen :]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; output so far:\n{self.output}")
            self.read(0.1)
        end = self.output.index(text, self.seen) + len(text)
        chunk, self.seen = self.output[self.seen : end], end
        return chunk

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, code = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(code)
            self.read(0.05)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"hermes did not exit; output:\n{self.output}")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


@pytest.fixture
def terminal(home: Path, workspace: Path) -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        term = Terminal(*args, cwd=workspace)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


def test_chat_on_a_terminal_streams_asks_for_approval_and_ctrl_c_stops_one_turn(
    home: Path, workspace: Path, terminal: Any
) -> None:
    def model(request: Request) -> Reply:
        last = request.user_texts()[-1]
        if last == "write it" and not request.tool_results():
            return calls(call("write_file", {"path": "note.txt", "content": "approved\n"}))
        if last == "write it":
            return say("Written after your approval.")
        if last == "talk":
            return say("blah " * 400, pieces=400, chunk_delay=0.02, delay_from=2)
        return say(f"You said: {last}")

    with ScriptedLLM(model) as llm:
        configure(home, llm, approvals={"tools": ["write_file"]})
        term = terminal("chat")
        term.expect("hermes chat · model test")
        term.expect("you> ")
        term.send("write it\n")
        term.expect("Approval needed")
        term.expect("Allow? [o]nce / [s]ession / [a]lways / [d]eny: ")
        term.send("o\n")
        term.expect("✓ write_file")
        term.expect("Written after your approval.")
        assert (workspace / "note.txt").read_text() == "approved\n"
        term.expect("you> ")
        term.send("talk\n")
        term.expect("blah blah blah")  # streaming has begun
        term.send("\x03")  # Ctrl-C: the terminal sends SIGINT to hermes
        term.expect("(turn stopped)")
        term.expect("you> ")
        term.send("still there?\n")
        term.expect("You said: still there?")
        term.expect("you> ")
        term.send("\x04")  # Ctrl-D at an empty prompt quits
        assert term.wait() == 0
    stopped = llm.requests[-1].messages
    interrupted = [m for m in stopped if m["role"] == "assistant" and "blah" in str(m.get("content"))]
    assert len(interrupted) == 1 and len(interrupted[0]["content"]) < len("blah " * 400)


# -- outcomes, interruption and slash commands ---------------------------------------------------------------


def test_run_exit_codes_for_refusal_truncation_and_the_content_filter(home: Path) -> None:
    cases = [
        (Reply(refusal="I can't help with that."), 4, "declined"),
        (say("Part of an answ", stop="length"), 5, "output limit"),
        (say("Part", stop="content_filter"), 6, "content filter"),
    ]
    for reply, code, words in cases:
        with ScriptedLLM([reply, reply]) as llm:
            configure(home, llm)
            plain = hermes("run", "x")
            as_json = hermes("run", "--json", "--quiet", "x")
        assert plain.exit_code == code and words in plain.stderr, (code, plain.output)
        data = json.loads(as_json.stdout)
        assert as_json.exit_code == code and data["stop_reason"] in ("refusal", "length", "content_filter")
        assert words in data["error"]


def test_run_json_on_sigint_prints_the_partial_outcome(home: Path) -> None:
    slow = say("word " * 200, pieces=200, chunk_delay=0.03)
    with ScriptedLLM([slow]) as llm:
        configure(home, llm)
        proc = subprocess.Popen(
            [str(HERMES), "run", "--json", "--quiet", "talk for a while"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + 30
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.6)  # some of the answer has streamed in
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert proc.returncode == 130, err
    data = json.loads(out)
    assert data["stop_reason"] == "cancelled" and 0 < len(data["text"]) < len("word " * 200)
    assert data["session_id"].startswith("run-") and took < 3.0


def test_chat_slash_commands_are_handled_here_and_never_sent(home: Path) -> None:
    with ScriptedLLM([say("about hosts", usage=(40, 8))]) as llm:
        configure(home, llm)
        typed = "/help\n/tools\n/model\n/bogus stuff\n//etc/hosts lists what?\n/usage\n/quit\nnever read\n"
        result = hermes("chat", input=typed)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "/model [NAME]" in out and "/usage" in out  # /help
    assert "tools:" in out and "read_file" in out  # /tools
    assert "model test (scripted-openai); configured: test" in out  # /model
    assert "unknown command /bogus" in out
    assert "this conversation: 40 tokens in, 8 out" in out and "· 40 tokens in, 8 out" in out
    assert [r.user_texts() for r in llm.requests] == [["/etc/hosts lists what?"]]


def test_chat_model_switches_models_and_keeps_the_conversation(home: Path) -> None:
    with ScriptedLLM([say("from the first"), say("from the second")]) as llm:
        doc = {
            "models": {"default": "first", "first": model_table(llm), "second": model_table(llm, model="m2")}
        }
        (home / "config.toml").write_text(tomlkit.dumps(doc), "utf-8")
        result = hermes("chat", input="hello\n/model second\nand you?\n/model nope\n")
    assert result.exit_code == 0
    assert "(now talking to second: m2; the conversation goes on)" in result.stdout
    assert "unknown model 'nope'" in result.stdout
    assert [r.body["model"] for r in llm.requests] == ["scripted-openai", "m2"]
    assert llm.requests[1].user_texts() == ["hello", "and you?"]


def test_chat_shows_a_refusal(home: Path) -> None:
    with ScriptedLLM([Reply(refusal="I won't do that.")]) as llm:
        configure(home, llm)
        result = hermes("chat", input="do it\n")
    assert "(the model refused: I won't do that.)" in result.stdout


def test_ctrl_c_at_a_sub_agents_approval_stops_everything_and_no_key_answers_it_later(
    home: Path, workspace: Path, terminal: Any
) -> None:
    waits = [sleep_marker(), sleep_marker()]
    push = "touch pushed.txt && git push --force origin main"

    def model(request: Request) -> Reply:
        if "You are a sub-agent" in request.system_text():
            if request.tool_results():
                return say("sub-agent done")
            goal = request.user_texts()[0]
            if "push" in goal:
                return calls(call("terminal", {"command": push}))
            marker = next(m for m in waits if m in goal)
            return calls(call("terminal", {"command": f"sleep {marker}", "timeout": 120}))
        last = request.user_texts()[-1]
        if last == "delegate" and not request.tool_results():
            tasks = [{"goal": f"wait: sleep {m}"} for m in waits] + [{"goal": "push the branch"}]
            return calls(call("delegate_task", {"tasks": tasks}))
        return say(f"You said: {last}")

    with ScriptedLLM(model) as llm:
        configure(home, llm)
        term = terminal("chat")
        term.expect("you> ")
        term.send("delegate\n")
        term.expect("Approval needed")
        term.expect("Allow? [o]nce / [s]ession / [a]lways / [d]eny: ")
        deadline = time.monotonic() + 20
        while not all(processes_with_arg(m) for m in waits) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [pid for m in waits for pid in processes_with_arg(m)]
        assert len(pids) >= 2, term.output
        term.send("\x03")  # Ctrl-C at the sub-agent's approval prompt
        stopped = time.monotonic()
        term.expect("(turn stopped)")
        left = max(0.0, 1.0 - (time.monotonic() - stopped))
        assert all(processes_gone(m, left) for m in waits), "a sub-agent's sleep outlived the Ctrl-C"
        assert not set(pids) & {pid for m in waits for pid in processes_with_arg(m)}  # by pid, too
        term.expect("you> ")
        term.send("o\n")  # the key that used to answer the old prompt now goes to the chat
        term.expect("You said: o")
        term.expect("you> ")
        time.sleep(0.5)
        term.send("\x04")
        assert term.wait() == 0
    assert not (workspace / "pushed.txt").exists(), "the cancelled command ran"
    assert "✗ delegate_task error: Stopped" in term.output and "\n(turn stopped)" in term.output


def test_keys_typed_before_an_approval_prompt_never_answer_it(
    home: Path, workspace: Path, terminal: Any
) -> None:
    push = "touch pushed.txt && git push --force origin main"

    def model(request: Request) -> Reply:
        if not request.tool_results():
            return calls(call("terminal", {"command": push}), wait=0.5)  # the prompt comes a moment later
        return say("Understood, not pushing.")

    with ScriptedLLM(model) as llm:
        configure(home, llm)
        term = terminal("chat")
        term.expect("you> ")
        term.send("push it\n")
        term.send("o\n")  # typed ahead, before any prompt is on the screen
        term.expect("Allow? [o]nce / [s]ession / [a]lways / [d]eny: ")
        time.sleep(0.5)
        term.read(0.2)
        assert "terminal" not in term.output[term.seen :], "a key typed ahead answered the prompt"
        term.send("d\n")
        term.expect("✗ terminal denied")
        term.expect("Understood, not pushing.")
        term.send("\x04")
        assert term.wait() == 0
    assert not (workspace / "pushed.txt").exists()
