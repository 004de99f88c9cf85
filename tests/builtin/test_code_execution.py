"""``execute_code`` through ``ToolSystem.call``: real child Pythons, a real socket, hostile scripts."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes_builtin.plugin
from hermes_core import Block, ToolSystem, hookimpl
from hermes_core.security import ApprovalRequest
from hermes_core.testing import processes_gone, sleep_marker


def _load(ws: Path, config: dict[str, Any] | None = None, **kwargs: Any) -> ToolSystem:
    return ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin],
        workspace=ws,
        config=config,
        **kwargs,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def system(ws: Path) -> Iterator[ToolSystem]:
    s = _load(ws)
    yield s
    s.close()


def _run(system: ToolSystem, code: str, **kwargs: Any) -> dict[str, Any]:
    timeout = kwargs.pop("timeout", None)
    args: dict[str, Any] = {"code": code}
    if timeout is not None:
        args["timeout"] = timeout
    result = system.call("execute_code", args, **kwargs)
    data: dict[str, Any] = json.loads(result)
    assert "error" not in data, data
    return data


# -- ordinary scripts ---------------------------------------------------------------------------------


def test_prints_output_and_exit_code(system: ToolSystem, ws: Path) -> None:
    data = _run(system, "import os\nprint('héllo ✓')\nprint(os.getcwd())")
    assert data["exit_code"] == 0
    assert data["stdout"] == f"héllo ✓\n{ws}\n"
    assert data["stderr"] == ""
    assert data["tool_calls"] == []
    assert data["timed_out"] is False
    assert isinstance(data["duration_ms"], int)
    assert "notes" not in data


def test_sys_exit_code_is_reported(system: ToolSystem) -> None:
    data = _run(system, "import sys\nprint('bye')\nsys.exit(3)")
    assert data["exit_code"] == 3
    assert data["stdout"] == "bye\n"


def test_exception_goes_to_stderr_with_script_lines(system: ToolSystem) -> None:
    data = _run(system, "print('before')\n\ndef f():\n    return 1 / 0\n\nf()\n")
    assert data["exit_code"] == 1
    assert data["stdout"] == "before\n"
    err = data["stderr"]
    assert err.startswith("Traceback (most recent call last):")
    assert 'File "<script>", line 6' in err and "return 1 / 0" in err
    assert err.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "_hermes_boot" not in err  # the bootstrap's own frame is not shown


def test_syntax_error(system: ToolSystem) -> None:
    data = _run(system, "print('never')\nx = (1,\n")
    assert data["exit_code"] == 1
    assert data["stdout"] == ""
    assert "SyntaxError" in data["stderr"] and '"<script>", line 2' in data["stderr"]


def test_secret_environment_is_scrubbed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-very-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    code = "import os\nprint(os.environ.get('MY_SERVICE_API_KEY'), os.environ.get('HARMLESS_SETTING'))"
    with _load(ws) as system:
        assert _run(system, code)["stdout"] == "None None\n"  # an allow-list: unknown variables stay out
    with _load(ws, {"sandbox": {"pass_env": ["HARMLESS_SETTING"]}}) as system:
        assert _run(system, code)["stdout"] == "None visible\n"


def test_workspace_modules_are_importable_but_do_not_shadow_the_bridge(system: ToolSystem, ws: Path) -> None:
    (ws / "helper.py").write_text("VALUE = 41\n")
    (ws / "socket.py").write_text("raise RuntimeError('workspace socket.py shadowed the stdlib')\n")
    data = _run(system, "import helper\nfrom hermes_tools import read_file\nprint(helper.VALUE + 1)")
    assert data["exit_code"] == 0, data["stderr"]
    assert data["stdout"] == "42\n"


def test_empty_code_is_an_error(system: ToolSystem) -> None:
    result = json.loads(system.call("execute_code", {"code": "   \n"}))
    assert result["error"] == "code is empty"


# -- tool calls through the bridge --------------------------------------------------------------------


def test_script_reads_and_writes_files_through_tools(system: ToolSystem, ws: Path) -> None:
    (ws / "in.txt").write_text("alpha\nbeta\n")
    code = (
        "from hermes_tools import read_file, write_file, call\n"
        "text = read_file(path='in.txt')\n"
        "print('beta' in text)\n"
        "print(write_file({'path': 'out.txt'}, content='gamma\\n'))\n"
        "print(call('read_file', path='out.txt'))\n"
    )
    data = _run(system, code)
    assert data["exit_code"] == 0, data["stderr"]
    assert (ws / "out.txt").read_text() == "gamma\n"
    lines = data["stdout"].splitlines()
    assert lines[0] == "True"
    assert "gamma" in data["stdout"].split("\n", 2)[2]
    assert [c["tool"] for c in data["tool_calls"]] == ["read_file", "write_file", "read_file"]
    assert all(c["status"] == "ok" and c["chars"] > 0 for c in data["tool_calls"])


def test_call_log_records_errors_and_sizes(system: ToolSystem) -> None:
    code = (
        "from hermes_tools import read_file\n"
        "r = read_file(path='missing.txt')\n"
        "bad = read_file(pathh='x')\n"
        "print(len(r), len(bad))\n"
    )
    data = _run(system, code)
    first, second = data["tool_calls"]
    assert (first["tool"], first["status"]) == ("read_file", "error")
    assert (second["tool"], second["status"]) == ("read_file", "error")
    assert data["stdout"] == f"{first['chars']} {second['chars']}\n"


def test_tool_not_enabled_is_refused_for_the_script(ws: Path) -> None:
    with _load(ws) as system:
        code = (
            "from hermes_tools import call, TOOLS\n"
            "print(sorted(TOOLS))\n"
            "print(call('write_file', path='nope.txt', content='x'))\n"
            "print(call('read_file', path='nope.txt'))\n"
        )
        data = _run(system, code, enabled=["execute_code", "terminal", "read_file"])
    assert not (ws / "nope.txt").exists()
    lines = data["stdout"].splitlines()
    assert lines[0] == "['process', 'read_file', 'terminal']"  # "terminal" names its toolset: process too
    assert "not available to scripts" in lines[1]
    assert [(c["tool"], c["status"]) for c in data["tool_calls"]] == [
        ("write_file", "refused"),
        ("read_file", "error"),
    ]


def test_execute_code_and_clarify_cannot_be_called_from_a_script(ws: Path) -> None:
    with _load(ws, ask_user=lambda question, choices: "yes") as system:
        assert "clarify" in system.available()
        code = (
            "import hermes_tools\n"
            "print(hasattr(hermes_tools, 'clarify'), hasattr(hermes_tools, 'execute_code'))\n"
            "print(hermes_tools.call('execute_code', code='print(1)'))\n"
            "print(hermes_tools.call('clarify', question='ok?'))\n"
        )
        data = _run(system, code)
    assert data["stdout"].splitlines()[0] == "False False"
    assert [c["status"] for c in data["tool_calls"]] == ["refused", "refused"]


def test_needs_terminal_enabled(ws: Path) -> None:
    with _load(ws) as system:
        result = system.call("execute_code", {"code": "print(1)"}, enabled=["execute_code", "read_file"])
        assert "runs only where the terminal tool is enabled" in json.loads(result)["error"]
        defs = system.definitions(enabled=["execute_code", "read_file"])
        (desc,) = [d["function"]["description"] for d in defs if d["function"]["name"] == "execute_code"]
        assert desc.startswith("Unavailable")


def test_description_lists_the_callable_tools(ws: Path) -> None:
    with _load(ws) as system:
        defs = system.definitions(enabled=["execute_code", "terminal", "read_file", "todo"])
        (desc,) = [d["function"]["description"] for d in defs if d["function"]["name"] == "execute_code"]
    assert desc.endswith("Tools the script can call: process, read_file, terminal, todo.")
    assert "hermes_tools" in desc


def test_a_long_listing_is_cut_and_the_script_still_sees_every_tool(system: ToolSystem) -> None:
    defs = system.definitions(search="off")
    (desc,) = [d["function"]["description"] for d in defs if d["function"]["name"] == "execute_code"]
    shown, _, rest = desc.partition("Tools the script can call: ")[2].partition(" and ")
    assert shown.startswith("terminal, process, read_file") and rest.endswith("more (hermes_tools.TOOLS).")
    data = _run(system, "import hermes_tools\nprint(len(hermes_tools.TOOLS), *hermes_tools.TOOLS)")
    count, *tools = data["stdout"].split()
    assert len(shown.split(", ")) + int(rest.split()[0]) == int(count) > 20 and len(desc) < 900
    assert set(shown.split(", ")) < set(tools)


class _Policy:
    """Blocks write_file and records every call the pipeline sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    @hookimpl
    def pre_tool_call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name == "write_file":
            return Block("scripts may not write here")
        return None

    @hookimpl
    def post_tool_call(self, name: str, context: Any, outcome: Any) -> None:
        self.seen.append((name, outcome.status, context.call_id if context is not None else ""))


def test_pre_tool_call_hook_applies_to_script_calls(ws: Path) -> None:
    policy = _Policy()
    with ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin, policy], workspace=ws
    ) as system:
        code = (
            "from hermes_tools import write_file, read_file\n"
            "print(write_file(path='blocked.txt', content='x'))\n"
            "print(read_file(path='blocked.txt'))\n"
        )
        outcome = system.call_outcome("execute_code", {"code": code}, call_id="outer-1")
    data = json.loads(outcome.result)
    assert not (ws / "blocked.txt").exists()
    assert "Blocked by" in data["stdout"] and "scripts may not write here" in data["stdout"]
    assert [(c["tool"], c["status"]) for c in data["tool_calls"]] == [
        ("write_file", "blocked"),
        ("read_file", "error"),
    ]
    # the hooks saw the nested calls, numbered under the outer call, and then the outer call itself
    assert policy.seen == [
        ("write_file", "blocked", "outer-1.1"),
        ("read_file", "error", "outer-1.2"),
        ("execute_code", "ok", "outer-1"),
    ]


def test_nested_calls_run_in_the_callers_session(system: ToolSystem) -> None:
    code = "from hermes_tools import todo\nprint(todo(action='add', items=['from the script']))"
    data = _run(system, code, session_id="s-42")
    assert data["tool_calls"][0]["status"] == "ok"
    assert "from the script" in system.call("todo", {"action": "list"}, session_id="s-42")
    assert "from the script" not in system.call("todo", {"action": "list"}, session_id="other")


def test_more_than_max_tool_calls_is_refused(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_tool_calls": 3}}}
    with _load(ws, config) as system:
        code = (
            "from hermes_tools import todo\n"
            "for i in range(5):\n"
            "    r = todo(action='list')\n"
            "    print(i, 'error' in r and 'tool calls' in r)\n"
        )
        data = _run(system, code)
    assert data["stdout"] == "0 False\n1 False\n2 False\n3 True\n4 True\n"
    assert len(data["tool_calls"]) == 3
    assert data["notes"] == ["2 tool calls refused: the limit is 3 per script"]


def test_socket_token_is_enforced(system: ToolSystem, ws: Path) -> None:
    # the bridge has no name anywhere (an inherited socket pair): only the script reaches it, and even then a
    # request without the run's token, or a descriptor that is not a socket, is refused
    code = (
        "import hermes_tools, json, os, socket\n"
        "channel = socket.socket(fileno=hermes_tools._FD)\n"
        "replies = []\n"
        "for request in (\n"
        "    {'token': '0' * 32, 'tool': 'write_file', 'arguments': {'path': 'evil.txt', 'content': 'x'}},\n"
        "    {'tool': 'write_file', 'arguments': {'path': 'evil.txt', 'content': 'x'}},\n"
        "):\n"
        "    mine, theirs = socket.socketpair()\n"
        "    socket.send_fds(channel, [b'call'], [theirs.fileno()])\n"
        "    theirs.close()\n"
        "    mine.sendall(json.dumps(request).encode() + b'\\n')\n"
        "    mine.shutdown(socket.SHUT_WR)\n"
        "    replies.append(json.loads(mine.makefile('rb').read()))\n"
        "    mine.close()\n"
        "fd = os.open('plain.txt', os.O_CREAT | os.O_RDWR)\n"
        "socket.send_fds(channel, [b'call'], [fd])\n"
        "print(json.dumps([r['status'] for r in replies]), all('invalid token' in r['result'] for r in replies))\n"
        "print(hermes_tools.todo(action='list'))\n"
    )
    data = json.loads(system.call("execute_code", {"code": code}))
    assert data["exit_code"] == 0, data
    assert data["stdout"].startswith('["denied", "denied"] True'), data
    assert not (ws / "evil.txt").exists()
    assert [c["tool"] for c in data["tool_calls"]] == ["todo"]  # only the script's own, authenticated call
    assert data["notes"] == ["3 malformed or unauthenticated bridge requests were refused"]


# -- approvals ----------------------------------------------------------------------------------------


class _Approver:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def approve(self, request: ApprovalRequest) -> str:
        self.requests.append(request)
        return self.answer


@pytest.mark.parametrize("answer", ["deny", "once"])
def test_code_approval_when_configured(ws: Path, answer: str) -> None:
    approver = _Approver(answer)
    code = "open('ran.txt', 'w').write('yes')\nprint('ran')"
    with _load(ws, {"approvals": {"code": "ask"}}, approver=approver) as system:
        outcome = system.call_outcome("execute_code", {"code": code})
    (request,) = approver.requests
    assert request.kind == "code"
    assert request.subject == "python script sha256:" + hashlib.sha256(code.encode()).hexdigest()
    assert code in request.reason
    if answer == "deny":
        assert outcome.status == "denied"
        assert "was not approved" in outcome.result
        assert not (ws / "ran.txt").exists()
    else:
        assert outcome.status == "ok"
        assert json.loads(outcome.result)["stdout"] == "ran\n"


def test_no_approval_asked_by_default(ws: Path) -> None:
    approver = _Approver("deny")
    with _load(ws, approver=approver) as system:
        data = _run(system, "print('free')")
    assert data["stdout"] == "free\n"
    assert approver.requests == []


# -- hostile scripts ----------------------------------------------------------------------------------


def test_hanging_script_is_killed_with_its_children(system: ToolSystem) -> None:
    child, detached = sleep_marker(), sleep_marker()
    code = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{child}'])\n"
        f"subprocess.Popen(['sleep', '{detached}'], start_new_session=True)\n"
        "print('started')\n"  # buffered: the SIGTERM handler flushes it
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    data = _run(system, code, timeout=1)
    assert time.monotonic() - started < 8
    assert data["timed_out"] is True and data["exit_code"] is None
    assert data["stdout"] == "started\n"
    assert "timed out after 1s" in data["notes"][0]
    assert processes_gone(child) and processes_gone(detached)


def test_children_left_behind_are_killed(system: ToolSystem) -> None:
    child, detached = sleep_marker(), sleep_marker()
    code = (
        "import subprocess\n"
        f"subprocess.Popen(['sleep', '{child}'])\n"
        f"subprocess.Popen(['sleep', '{detached}'], start_new_session=True)\n"
    )
    data = _run(system, code)
    assert data["exit_code"] == 0 and data["timed_out"] is False
    assert processes_gone(child) and processes_gone(detached)


def test_fork_bomb_is_contained(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_processes": 16}}}
    survivor = sleep_marker()
    code = (
        "import os, subprocess, time\n"
        f"subprocess.Popen(['sleep', '{survivor}'], start_new_session=True)\n"
        "for _ in range(8):\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "time.sleep(60)\n"
    )
    with _load(ws, config) as system:
        started = time.monotonic()
        data = _run(system, code, timeout=30)
        elapsed = time.monotonic() - started
    assert elapsed < 10
    assert data["notes"][0] == "killed: the script started more than 16 processes at once"
    assert data["timed_out"] is False and data["exit_code"] is None
    assert processes_gone(survivor)


def test_unbounded_allocation_hits_the_memory_limit(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_memory_mb": 200}}}
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 1024 * 1024))\n"
    with _load(ws, config) as system:
        data = _run(system, code, timeout=30)
    assert data["timed_out"] is False
    assert data["exit_code"] == 1
    assert data["stderr"].rstrip().endswith("MemoryError")


def test_output_flood_is_capped(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_stdout_chars": 2000, "max_stderr_chars": 1000}}}
    code = (
        "import sys\n"
        "print('FIRST')\n"
        "for _ in range(20):\n"
        "    sys.stdout.write('x' * 1_000_000)\n"
        "    sys.stderr.write('e' * 100_000)\n"
        "print('LAST')\n"
    )
    with _load(ws, config) as system:
        data = _run(system, code, timeout=30)
    assert data["exit_code"] == 0
    assert data["stdout"].startswith("FIRST\n") and data["stdout"].endswith("LAST\n")
    assert len(data["stdout"]) < 2200 and "bytes of output omitted" in data["stdout"]
    assert len(data["stderr"]) < 1200
    notes = " ".join(data["notes"])
    assert "stdout capped" in notes and "stderr capped" in notes


def test_endless_flood_with_timeout_keeps_head_and_tail(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_stdout_chars": 4000}}}
    code = "import itertools\nprint('START')\nfor i in itertools.count():\n    print(i)\n"
    with _load(ws, config) as system:
        data = _run(system, code, timeout=1)
    assert data["timed_out"] is True
    out = data["stdout"]
    assert out.startswith("START\n0\n1\n") and len(out) < 4200
    tail = out.rsplit("omitted ...]\n", 1)[1].splitlines()
    numbers = [int(x) for x in tail[1:-1]]  # first and last may be cut mid-line
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert numbers[0] > 10_000


def test_pipeline_timeout_also_ends_the_script(ws: Path) -> None:
    config = {"limits": {"tools": {"execute_code": {"timeout": 1}}}}
    child = sleep_marker()
    code = f"import subprocess\nsubprocess.run(['sleep', '{child}'])\n"
    with _load(ws, config) as system:
        started = time.monotonic()
        outcome = system.call_outcome("execute_code", {"code": code, "timeout": 60})
    assert time.monotonic() - started < 8
    assert (outcome.status, outcome.error_kind) == ("error", "timeout")
    assert processes_gone(child)


def test_file_size_limit(ws: Path) -> None:
    config = {"plugins": {"code_execution": {"max_file_mb": 1}}}
    code = (
        "try:\n"
        "    with open('big.bin', 'wb') as fh:\n"
        "        fh.write(b'x' * (3 * 1024 * 1024))\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    with _load(ws, config) as system:
        data = _run(system, code)
    assert data["stdout"] == "refused 27\n"  # EFBIG
    assert (ws / "big.bin").stat().st_size <= 1024 * 1024


class _OddNames:
    """A plugin whose tool names are not Python identifiers."""

    @hookimpl
    def register_tools(self, registry: Any) -> None:
        schema = {"name": "weather-now", "description": "Say the weather.", "parameters": {"type": "object"}}
        registry.register(name="weather-now", toolset="odd", schema=schema, handler=lambda: "sunny")


def test_tools_with_odd_names_are_reached_through_call(ws: Path) -> None:
    with ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin, _OddNames()], workspace=ws
    ) as system:
        code = (
            "import hermes_tools\n"
            "print('weather-now' in hermes_tools.TOOLS, hermes_tools.call('weather-now'))\n"
            "print(hermes_tools.read_file.__doc__[:40])\n"
        )
        data = _run(system, code)
        entry = system.registry.get("read_file")
        assert entry is not None
    assert data["stdout"].splitlines() == ["True sunny", " ".join(entry.description.split())[:40]]


# -- the lean start: no site at start-up, the same environment for the script -------------------------


def test_script_sees_the_hosts_packages_prefix_and_builtins(system: ToolSystem) -> None:
    import sys

    code = (
        "import sys, pluggy, jsonschema\n"
        "print(sys.prefix)\n"
        "print(callable(exit), callable(quit), callable(help))\n"
        "exit(7)\n"
    )
    data = _run(system, code)
    assert data["exit_code"] == 7, data
    assert data["stdout"].splitlines() == [sys.prefix, "True True True"]


def test_an_import_that_needs_a_pth_file_runs_site_late(tmp_path: Path) -> None:
    """The bootstrap itself (no sandbox): a package reachable only through a .pth file in a site directory
    imports, because an import that finds nothing runs site's .pth processing once."""
    import subprocess
    import sys

    from hermes_builtin.tools.execution import _code_sandbox

    site_dir, extra, run = tmp_path / "site", tmp_path / "extra", tmp_path / "run"
    for folder in (site_dir, extra, run):
        folder.mkdir()
    (extra / "late_pkg.py").write_text("VALUE = 42\n")
    (site_dir / "extra.pth").write_text(f"{extra}\n")
    (run / "script.py").write_text("import late_pkg\nprint(late_pkg.VALUE)\nimport nothing_at_all\n")
    boot = run / _code_sandbox.BOOT_NAME
    source = _code_sandbox.BOOTSTRAP.replace("{site_dirs!r}", repr([str(site_dir)]))
    boot.write_text(source.replace("{prefixes!r}", repr((sys.prefix, sys.exec_prefix))))
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(boot)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout == "42\n"
    assert done.returncode == 1 and "No module named 'nothing_at_all'" in done.stderr
    assert "_hermes_boot" not in done.stderr  # no frame of the bootstrap


# -- the warm interpreter of a session -------------------------------------------------------------------

_LINEAGE = (
    "import os\n"
    "def parent(pid):\n"
    "    return int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "shepherd = os.getppid()\n"
    "print(parent(shepherd), open(f'/proc/{parent(shepherd)}/cmdline', 'rb').read().count(b'hermes-runner-'))\n"
)


def test_scripts_of_a_session_fork_from_one_warm_interpreter_and_share_nothing(system: ToolSystem) -> None:
    from hermes_core.sandbox import sandbox_for

    if sandbox_for(system).backend != "bwrap":
        pytest.skip("the warm interpreter needs the bwrap backend's PID namespace")
    first = _run(system, _LINEAGE + "import sys\nsys.leftover_state = 1\n")["stdout"].split()
    second = _run(system, _LINEAGE + "import sys\nprint(hasattr(sys, 'leftover_state'))\n")["stdout"].split()
    assert first[1] == "1" and first[0] == second[0]  # the same runner forked both
    assert second[2] == "False"  # each script starts from the runner's clean state, not the last script's


def test_a_script_that_kills_its_interpreter_ends_alone(system: ToolSystem) -> None:
    """A script may kill the warm interpreter of its session: its own run ends, the next one gets a new one."""
    code = (
        "import os, signal\n"
        "for name in os.listdir('/proc'):\n"
        "    if name.isdigit() and b'hermes-runner-' in open(f'/proc/{name}/cmdline', 'rb').read():\n"
        "        os.kill(int(name), signal.SIGKILL)\n"
        "import time\ntime.sleep(5)\n"
    )
    started = time.monotonic()
    data = _run(system, code)
    assert time.monotonic() - started < 4 and data["exit_code"] != 0
    assert _run(system, "print('next')")["stdout"] == "next\n"


def test_calls_at_once_in_one_session_all_run(system: ToolSystem) -> None:
    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(_run(system, f"import time\ntime.sleep(0.3)\nprint({i})"))
        )
        for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r["stdout"] for r in results) == ["0\n", "1\n", "2\n"]  # one warm, the others the cold way


def test_without_a_pid_namespace_scripts_run_the_cold_way(ws: Path) -> None:
    """No warm interpreter where the runner could not tell its runs' processes from the host's (no PID
    namespace): no ancestor of the script is a runner."""
    code = (
        "import os\n"
        "pid, found = os.getpid(), 0\n"
        "for _ in range(4):\n"
        "    pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "    found += open(f'/proc/{pid}/cmdline', 'rb').read().count(b'hermes-runner-')\n"
        "print(found)\n"
    )
    with _load(ws, {"sandbox": {"backend": "none"}}) as system:
        assert [_run(system, code)["stdout"] for _ in range(2)] == ["0\n", "0\n"]
