"""Sessions: tests, lint, typecheck, docs-check, example_plugins, bench.  Run ``nox -s tests``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

EXAMPLES = [
    "example_plugins/hermes-weather",
    "example_plugins/hermes-ratelimit",
    "example_plugins/hermes-audit",
]


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite: core, built-ins, CLI and the example plugins (installed editable)."""
    session.install("-e", ".[test]")
    for path in EXAMPLES:
        session.install("-e", path)
    # one worker per core (pytest-xdist): on the 2-core CI machine the suite takes ~9.5 minutes this way
    workers = () if any(a.startswith("-n") for a in session.posargs) else ("-n", "auto")
    session.run("python", "-m", "pytest", "-q", *workers, "tests", *EXAMPLES, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.5")
    paths = ["hermes_core", "hermes_builtin", "tests", "benchmarks", "example_plugins", "noxfile.py"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict (pyproject.toml) over the framework and the built-in tools."""
    session.install("-e", ".[dev]")
    session.run("mypy", "hermes_core", "hermes_builtin")


@nox.session(name="docs-check")
def docs_check(session: nox.Session) -> None:
    """hookspecs.md documents every hook with its exact signature, and every hook has a test named after it."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-q", "tests/test_hookspecs_doc.py")


@nox.session(name="example_plugins")
def example_plugins(session: nox.Session) -> None:
    """Zero config: a fresh venv, hermes-tools, then each example plugin; the CLI sees tools and hooks."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-q", "-m", "slow", "tests/test_zero_config.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Side-by-side benchmarks from a non-editable install (as users get it); each prints min and median of
    its baseline and subject, interleaved, and their ratio."""
    session.install(".[mcp]")
    for script in (
        "bench_startup.py",
        "bench_definitions.py",
        "bench_pipeline.py",
        "bench_async.py",
        "bench_redact.py",
        "bench_sandbox.py",
        "bench_media.py",
        "bench_environment.py",
        "bench_dropins.py",
        "bench_listing.py",
        "bench_files.py",
        "bench_execute_code.py",
    ):
        session.run("python", f"benchmarks/{script}")
    session.run("python", "benchmarks/bench_agent.py")
    session.install(
        "bpe-openai"
    )  # counts the tool-search figures' tokens with o200k as well as estimating them
    session.run("python", "benchmarks/bench_tool_search.py")
    session.run("python", "benchmarks/bench_mcp.py")  # the 10-minute soak is separate: benchmarks/soak_mcp.py
