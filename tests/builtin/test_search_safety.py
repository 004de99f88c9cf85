"""``search_files`` under attack: no oracle on protected files, no pattern or glob that holds the host.

Every test runs on both engines (ripgrep and the pure-Python one) through ``ToolSystem.call``, with a fake
HOME and fake secrets generated here.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import string
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_core import ToolSystem
from hermes_core.security import CallbackApprover

MakeSystem = Callable[..., ToolSystem]

pytestmark = pytest.mark.usefixtures("fake_home")

ALPHABET = string.ascii_letters + string.digits + "/+"


@pytest.fixture(params=["python", "rg"])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "rg" and shutil.which("rg") is None:
        from hermes_builtin.tools.files._search import rg_available

        if rg_available() is None:
            pytest.skip("ripgrep is not installed")
    return str(request.param)


def _system(
    make: MakeSystem,
    engine: str,
    timeout: float | None = None,
    sandbox: dict[str, object] | None = None,
    **kwargs: object,
) -> ToolSystem:
    file_config: dict[str, object] = {"search_engine": engine}
    if timeout is not None:
        file_config["search_timeout"] = timeout
    return make(config={"plugins": {"file": file_config}, "sandbox": sandbox or {}}, **kwargs)


def _fake_aws_secret() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(40))


def _normalized(out: str, pattern: str) -> str:
    return out.replace(repr(pattern), "<pattern>")


def _extract(system: ToolSystem, prefix: str, path: str, rounds: int = 4) -> tuple[str, set[str]]:
    """The attack that used to work: grow the secret one character at a time, keeping the probe whose answer
    differs from the others. Returns what it recovered and every distinct (normalized) answer it saw."""
    recovered = ""
    answers: set[str] = set()
    for _ in range(rounds):
        outs = {}
        for ch in ALPHABET:
            pattern = re.escape(prefix + recovered + ch)
            outs[ch] = _normalized(system.call("search_files", {"pattern": pattern, "path": path}), pattern)
        answers.update(outs.values())
        counts: dict[str, int] = {}
        for out in outs.values():
            counts[out] = counts.get(out, 0) + 1
        odd = [ch for ch, out in outs.items() if counts[out] == 1]
        if len(odd) != 1:
            break
        recovered += odd[0]
    return recovered, answers


def test_probing_a_workspace_env_file_learns_nothing(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    secret = _fake_aws_secret()
    (workspace / "deploy").mkdir()
    (workspace / "deploy" / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={secret}\n")
    (workspace / "deploy" / "run.sh").write_text("echo deploying\n")
    system = _system(make_builtin_system, engine)
    recovered, answers = _extract(system, "AWS_SECRET_ACCESS_KEY=", "deploy")
    assert recovered == ""
    assert answers == {"no matches for <pattern> in deploy"}
    # the file is not even named in a listing, nor in a search for its variable name
    listing = system.call("search_files", {"pattern": "*", "target": "files", "path": "deploy"})
    assert listing.splitlines() == ["deploy/run.sh", "[files 1-1 of 1]"]
    out = system.call("search_files", {"pattern": "AWS_SECRET", "path": "deploy"})
    assert out == "no matches for 'AWS_SECRET' in deploy"
    assert secret not in listing + out


def test_probing_an_ssh_key_in_an_approved_home_learns_nothing(
    make_builtin_system: MakeSystem, fake_home: Path, engine: str
) -> None:
    known = "b3BlbnNzaC1rZXktdjEAAAAA"  # how every OpenSSH private key body starts: the attacker's prefix
    body = known + "".join(secrets.choice(ALPHABET) for _ in range(64))
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"
    (fake_home / ".ssh" / "id_ed25519").write_text(key)
    (fake_home / ".ssh" / "known_hosts").write_text("example.org ssh-ed25519 AAAAC3Nza\n")
    approving = _system(
        make_builtin_system,
        engine,
        approver=CallbackApprover(lambda request: "always"),
        sandbox={"read_only": [str(fake_home)]},  # the home granted: ~/.ssh stays hidden in it
    )
    recovered, answers = _extract(approving, known, "~/.ssh", rounds=2)
    assert recovered == ""
    # every probe answers the same way, whether or not the key holds the probed text
    assert len(answers) == 1 and "hidden" in next(iter(answers))
    listing = approving.call("search_files", {"pattern": "*", "target": "files", "path": "~/.ssh"})
    assert "known_hosts" not in listing and "id_ed25519" not in listing


def test_a_slow_pattern_cannot_time_a_protected_file(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    """A backtracking pattern that would only be slow if it read the secret (a timing oracle) answers at once:
    the Python engine never opens the file, ripgrep's engine runs in linear time."""
    (workspace / ".env").write_text("API_TOKEN=s" + "x" * 40 + "\n")
    system = _system(make_builtin_system, engine, timeout=3)
    outcome = system.call_outcome("search_files", {"pattern": r"^API_TOKEN=s(x+x+)+y$"})
    assert outcome.status == "ok"
    assert outcome.result.startswith("no matches")


def _ticker(stop: threading.Event, gaps: list[float]) -> None:
    last = time.monotonic()
    while not stop.wait(0.02):
        now = time.monotonic()
        gaps.append(now - last)
        last = now


def test_catastrophic_patterns_end_in_time_and_the_host_stays_responsive(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    (workspace / "big.txt").write_text(("a" * 30 + "b\n") * 50 + "aaaa\n")
    system = _system(make_builtin_system, engine, timeout=1.5)
    stop, gaps = threading.Event(), []
    ticker = threading.Thread(target=_ticker, args=(stop, gaps))
    ticker.start()
    try:
        started = time.monotonic()
        outcomes = [
            system.call_outcome("search_files", {"pattern": pattern})
            for pattern in (r"^(a+)+$", r"^(a|aa)+$", r"^(\w*)*$" + "b")
        ]
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        ticker.join()
    assert elapsed < 30, elapsed  # a hang would take hours; the bound is three deadlines and start-up
    # other threads of the host kept running all along: a regex run in-process would hold the GIL for minutes
    assert max(gaps) < 5.0, max(gaps)
    if engine == "python":
        for outcome in outcomes:
            assert outcome.status == "error", outcome.result
            assert "took longer than 1.5s" in outcome.result and "narrow" in outcome.result
    else:  # ripgrep's automata answer correctly at once
        assert [o.result.splitlines()[0] for o in outcomes[:2]] == ["big.txt:51:aaaa", "big.txt:51:aaaa"]
        assert outcomes[2].result.startswith("no matches")
    # the system is usable straight after
    assert system.call("search_files", {"pattern": "ab$"}).endswith("[matches 1-50 of 50]")


def _rg_children() -> list[int]:
    mine = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
        except OSError:
            continue
        if fields[1] == mine and comm == "rg":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("engine", ["rg"])
def test_ripgrep_is_killed_at_the_deadline(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    """A real ripgrep blocked on a FIFO nobody writes to: the call ends at the deadline, rg is gone."""
    from hermes_builtin.tools.files._search import rg_available

    if rg_available() is None:
        pytest.skip("ripgrep is not installed")
    os.mkfifo(workspace / "stuck")
    system = _system(make_builtin_system, engine, timeout=1)
    started = time.monotonic()
    outcome = system.call_outcome("search_files", {"pattern": "x", "path": "stuck"})
    assert time.monotonic() - started < 20
    assert outcome.status == "error" and "took longer than 1s" in outcome.result
    assert _rg_children() == []


def test_pathological_globs_match_fast_or_are_refused(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    name = "a" * 200 + ".txt"
    (workspace / name).write_text("needle\n")
    (workspace / ("a" * 200 + "b.txt")).write_text("needle\n")
    system = _system(make_builtin_system, engine, timeout=10)
    many = "*a" * 30 + "*b*"  # 31 stars: exponential for a backtracking translation
    started = time.monotonic()
    out = system.call("search_files", {"pattern": many, "target": "files"})
    assert out.splitlines() == ["a" * 200 + "b.txt", "[files 1-1 of 1]"]
    out = system.call("search_files", {"pattern": "needle", "file_glob": many})
    assert out.splitlines() == ["a" * 200 + "b.txt:1:needle", "[matches 1-1 of 1]"]
    out = system.call("search_files", {"pattern": "*/" * 40 + "x", "target": "files"})
    assert out.startswith("no files")
    assert time.monotonic() - started < 10
    for glob, why in (("*x" * 70, "more than 64 wildcards"), ("a" * 2000, "longer than 1024 characters")):
        outcome = system.call_outcome("search_files", {"pattern": glob, "target": "files"})
        assert outcome.status == "error" and why in outcome.result
        outcome = system.call_outcome("search_files", {"pattern": "needle", "file_glob": glob})
        assert outcome.status == "error" and why in outcome.result
    outcome = system.call_outcome("search_files", {"pattern": "a" * 20_000})
    assert outcome.status == "error" and "longer than 10000 characters" in outcome.result


def test_a_hostile_gitignore_does_not_hold_the_walk(
    make_builtin_system: MakeSystem, workspace: Path, engine: str
) -> None:
    (workspace / ".gitignore").write_text(
        "*a" * 30 + "*b\n" + "*x" * 70 + "\n" + "*" * 100 + "?.txt\n!a*\nignored.txt\n"
    )
    (workspace / ("a" * 200 + ".txt")).write_text("needle\n")
    (workspace / "ignored.txt").write_text("needle\n")
    system = _system(make_builtin_system, engine, timeout=10)
    out = system.call("search_files", {"pattern": "needle"})
    assert out.splitlines() == ["a" * 200 + ".txt:1:needle", "[matches 1-1 of 1]"]
