"""Ordinary development still works behind the walls: git, a workspace virtual environment with pip, pytest,
make and a C compiler with the system headers (the network: test_network.py)."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest
from sandbox_stage import Scene, load_system

pytestmark = pytest.mark.slow


def _run(scene: Scene, command: str, timeout: int = 120) -> str:
    out = scene.system.call("terminal", {"command": command, "timeout": timeout})
    assert "[exit code 0;" in out, out
    return out


def test_git_works_with_the_users_identity(scene: Scene) -> None:
    (scene.home / ".gitconfig").write_text("[user]\n\tname = Ada Dev\n\temail = ada@example.org\n")
    scene.system.close()
    scene.system = load_system(scene.workspace, scene.backend, scene.config, scene.config_marker)
    out = _run(
        scene,
        "git init -q repo && cd repo && echo hi > a.txt && git add a.txt && git commit -qm first && "
        "git log --format='%an <%ae> %s' && git status --short && echo clean",
    )
    assert "Ada Dev <ada@example.org> first" in out and "clean" in out


def _wheel(path: Path) -> None:
    """A tiny pure-Python wheel built by hand (no build backend or network needed to install it)."""
    files = {
        "tinypkg/__init__.py": b"VALUE = 42\n",
        "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("tinypkg-1.0.dist-info/RECORD", record + "tinypkg-1.0.dist-info/RECORD,,\n")


def test_pip_installs_into_a_workspace_venv(scene: Scene) -> None:
    _wheel(scene.workspace / "tinypkg-1.0-py3-none-any.whl")
    python = sys.executable
    out = _run(
        scene,
        f"{python} -m venv --without-pip venv && "
        f"{python} -m pip --python venv/bin/python install -q --no-index ./tinypkg-1.0-py3-none-any.whl && "
        "venv/bin/python -c 'import tinypkg; print(\"value\", tinypkg.VALUE)'",
        timeout=180,
    )
    assert "value 42" in out
    assert (scene.workspace / "venv" / "lib").is_dir()


def test_pytest_make_and_gcc_with_system_headers(scene: Scene) -> None:
    ws = scene.workspace
    (ws / "hello.c").write_text(
        '#include <stdio.h>\n#include <math.h>\nint main(void) { printf("sqrt %.1f\\n", sqrt(16.0)); return 0; }\n'
    )
    (ws / "Makefile").write_text("hello: hello.c\n\tgcc -O0 -o hello hello.c -lm\n")
    (ws / "test_math.py").write_text("def test_adds():\n    assert 1 + 1 == 2\n")
    out = _run(
        scene,
        f"make -s && ./hello && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider",
    )
    assert "sqrt 4.0" in out and "1 passed" in out


def test_node_and_npm_work_under_the_filter(scene: Scene) -> None:
    import shutil

    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    ws = scene.workspace
    (ws / "lib").mkdir()
    (ws / "lib" / "package.json").write_text('{"name": "lib", "version": "1.0.0", "main": "index.js"}')
    (ws / "lib" / "index.js").write_text("module.exports = () => 'from lib';\n")
    (ws / "app.js").write_text(
        "const { execFileSync } = require('child_process');\n"
        "const fs = require('fs');\n"
        "fs.writeFileSync('out.txt', require('lib')());\n"
        "console.log('child says', execFileSync('node', ['-e', 'process.stdout.write(\"hi\")']).toString());\n"
    )
    out = _run(
        scene,
        "npm init -y >/dev/null && npm install --offline --no-audit --no-fund ./lib >/dev/null && "
        "node app.js && cat out.txt",
        timeout=180,
    )
    assert "child says hi" in out and "from lib" in out


def test_cargo_builds_a_crate_under_the_filter(scene: Scene) -> None:
    import os
    import pwd
    import shutil

    cargo = shutil.which("cargo")
    real_home = pwd.getpwuid(os.getuid()).pw_dir  # HOME is the stage's fake one
    rustup = os.environ.get("RUSTUP_HOME") or os.path.join(real_home, ".rustup")
    if cargo is None:
        pytest.skip("cargo is not installed")
    bin_dir = os.path.dirname(os.path.realpath(cargo))
    shown = [bin_dir] + ([rustup] if os.path.isdir(rustup) else [])
    scene.system.close()
    scene.system = load_system(
        scene.workspace, scene.backend, scene.config, scene.config_marker, read_only=shown
    )
    out = _run(
        scene,
        f"export PATH={bin_dir}:$PATH RUSTUP_HOME={rustup} CARGO_HOME=$PWD/.cargo-home && "
        "cargo new -q --vcs none hello && cd hello && cargo run -q --offline",
        timeout=300,
    )
    assert "Hello, world!" in out
