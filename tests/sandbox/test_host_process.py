"""The attacks on the host process itself, run against a real host: a separate Python process that loads a
tool system (every guard off) with an API key in its environment, as an agent would. Its commands try to
read that environment through ``/proc/$PPID`` (re-encoded past the redactor) and to kill or freeze it.
A frozen or killed host shows as a timeout or a bad exit here, never as a hung test run."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_stage import token

from hermes_core.sandbox._landlock import probe_landlock


def _decoded(text: str) -> list[str]:
    """Every run of base64 in ``text`` (line breaks joined), decoded: a leak re-encoded is a leak."""
    out = []
    for run in re.findall(r"[A-Za-z0-9+/=\n]{16,}", text):
        joined = run.replace("\n", "")
        try:
            out.append(base64.b64decode(joined + "=" * (-len(joined) % 4)).decode("latin-1"))
        except ValueError:
            continue
    return out


HOST = r"""
import json, sys
import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.testing import unguarded

workspace, backend = sys.argv[1], sys.argv[2]
system = unguarded(ToolSystem.load(
    load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=workspace,
    config={"sandbox": {"backend": backend}},
))
shell = (
    "cat /proc/$PPID/environ > ppid.env 2>&1; base64 /proc/$PPID/environ; rev /proc/$PPID/environ; "
    "od -c /proc/$PPID/environ | head -40; cat /proc/*/environ 2>/dev/null | base64 -w0; "
    "kill -STOP $PPID; kill -9 $PPID; echo survived"
)
code = (
    "import base64, os, signal\n"
    "parent = os.getppid()\n"
    "try:\n"
    "    data = open(f'/proc/{parent}/environ', 'rb').read()\n"
    "    open('parent.env', 'wb').write(data)\n"
    "    print(base64.b64encode(data).decode())\n"
    "except OSError as exc:\n"
    "    print('read refused:', exc.errno)\n"
    "for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
    "    try:\n"
    "        os.kill(parent, sig)\n"
    "    except OSError as exc:\n"
    "        print('signal refused:', exc.errno)\n"
    "print('survived')\n"
)
out = {
    "terminal": system.call("terminal", {"command": shell, "timeout": 30}),
    "execute_code": system.call("execute_code", {"code": code, "timeout": 30}),
}
system.close()
print("RESULT:" + json.dumps(out))
"""


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
def test_a_real_host_keeps_its_environment_and_its_life(tmp_path: Path, backend_name: str) -> None:
    from hermes_core.sandbox import choose_backend

    choice = choose_backend(backend_name)
    if choice.backend is None:
        pytest.skip(f"the {backend_name} backend is not usable here: {choice.reason}")
    if backend_name == "landlock" and probe_landlock()[0] < 6:
        pytest.skip("Landlock blocks signals to outside processes only from ABI 6 on (documented)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = f"sk-host-{token()}{token()}"
    env = {**os.environ, "OPENAI_API_KEY": secret, "PLAIN_LOOKING": secret[::-1]}
    try:
        done = subprocess.run(
            [sys.executable, "-c", HOST, str(workspace), backend_name],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the host process hung: a sandboxed command froze it (SIGSTOP reached it)")
    assert done.returncode == 0, f"the host died (exit {done.returncode}): {done.stderr[-2000:]}"
    result = json.loads(done.stdout.split("RESULT:", 1)[1])
    for channel, text in result.items():
        assert "survived" in text, (channel, text)
        for form in (text, *_decoded(text)):
            assert secret not in form and secret[::-1] not in form, (channel, text)
    for dump in ("ppid.env", "parent.env"):
        path = workspace / dump
        if path.exists():
            assert secret.encode() not in path.read_bytes()
