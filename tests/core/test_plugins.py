"""Plugin loading from entry points, the drop-in folder and in-process objects; broken plugins are contained."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from hermes_core import ToolSystem
from hermes_core.plugins import PluginLoadError, scan_directory

TOOL_FILE = """
from hermes_core import registry

def add(a: int, b: int) -> int:
    return a + b

registry.register(
    name="{name}",
    toolset="{toolset}",
    schema={{"name": "{name}", "description": "Add two integers.",
            "parameters": {{"type": "object", "properties": {{"a": {{"type": "integer"}}, "b": {{"type": "integer"}}}},
                           "required": ["a", "b"]}}}},
    handler=add,
)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def make_dist(
    site: Path, dist: str, module: str, body: str, ep_name: str | None = None, requires: str = ""
) -> None:
    """A real installed distribution: a module plus a dist-info folder with entry_points.txt."""
    write(site / f"{module}.py", body)
    info = site / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n{requires}"
    write(info / "METADATA", meta)
    write(info / "entry_points.txt", f"[hermes.tools]\n{ep_name or dist} = {module}\n")


def test_dropin_files_register_tools(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write(plugins / "adder.py", TOOL_FILE.format(name="add", toolset="math"))
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    assert system.call("add", '{"a": 2, "b": 3}') == "5"
    entry = system.registry["add"]
    assert (entry.plugin, entry.source) == ("dropin:adder", "drop-in")


def test_files_without_registration_are_never_executed(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    marker = tmp_path / "executed"
    write(plugins / "sneaky.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    write(plugins / "nested.py", "def f():\n    registry.register(name='x')\n")  # not top level
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    assert not marker.exists()
    statuses = {r.name: r.status for r in system.plugin_records()}
    assert statuses == {"dropin:nested": "skipped", "dropin:sneaky": "skipped"}


def test_broken_dropins_are_recorded_and_others_load(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write(plugins / "a_good.py", TOOL_FILE.format(name="add", toolset="math"))
    write(plugins / "b_syntax.py", "from hermes_core import registry\nregistry.register(name=\n")
    write(
        plugins / "c_raises.py",
        "from hermes_core import registry\nregistry.register(name='x', toolset='t', schema={'name': 'x'}, handler=print)\nraise RuntimeError('boom at import')\n",
    )
    write(
        plugins / "d_badschema.py",
        "from hermes_core import registry\nregistry.register(name='y', toolset='t', schema=['not', 'a', 'dict'], handler=print)\n",
    )
    write(plugins / "e_clash.py", TOOL_FILE.format(name="add", toolset="other"))
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    records = {r.name: r for r in system.plugin_records()}
    assert records["dropin:a_good"].status == "loaded"
    assert "SyntaxError" in (records["dropin:b_syntax"].error or "")
    assert "boom at import" in (records["dropin:c_raises"].error or "")
    assert "x" not in system.registry  # rolled back: a failed plugin leaves nothing behind
    assert "must be a dict" in (records["dropin:d_badschema"].error or "")
    assert records["dropin:e_clash"].status == "loaded"  # it loses the clashing tool, nothing more
    assert "clashes" in records["dropin:e_clash"].refused["add"]
    assert system.registry["add"].toolset == "math"
    assert system.call("add", {"a": 1, "b": 1}) == "2"


def test_strict_mode_turns_failures_into_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = tmp_path / "plugins"
    write(plugins / "broken.py", "from hermes_core import registry\nregistry.register(name=\n")
    monkeypatch.setenv("HERMES_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="SyntaxError"):
        ToolSystem.load(plugins_dir=plugins, load_entry_points=False)


def test_scan_cache_makes_warm_scans_parse_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = tmp_path / "plugins"
    for i in range(5):
        write(plugins / f"p{i}.py", TOOL_FILE.format(name=f"add{i}", toolset="math"))
    cache = tmp_path / "scan.json"
    first = scan_directory(plugins, cache)
    assert all(v.eligible for v in first)
    import hermes_core.plugins._dropin as dropin

    def no_parse(*_a: object, **_k: object) -> None:
        raise AssertionError("a warm scan must not parse")

    monkeypatch.setattr(dropin, "analyse_source", no_parse)
    assert [v.eligible for v in scan_directory(plugins, cache)] == [True] * 5
    # an edited file is parsed again; a corrupt cache means a full rescan
    monkeypatch.undo()
    write(plugins / "p0.py", "x = 1\n")
    assert not scan_directory(plugins, cache)[0].eligible
    cache.write_text("not json")
    assert len(scan_directory(plugins, cache)) == 5


def _bundle(home: Path) -> Path:
    (found,) = (home / "cache").glob("dropin-*.code")
    return found


def test_warm_starts_run_drop_ins_from_one_code_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    home = Path(os.environ["HERMES_HOME"])
    plugins = tmp_path / "plugins"
    for i in range(3):
        write(plugins / f"p{i}.py", TOOL_FILE.format(name=f"add{i}", toolset="math"))
    assert (
        ToolSystem.load(plugins_dir=plugins, load_entry_points=False).call("add0", '{"a": 2, "b": 3}') == "5"
    )
    bundle = _bundle(home)
    written = bundle.stat().st_mtime_ns
    # no .pyc is read or written once the bundle holds the code
    shutil.rmtree(plugins / "__pycache__")
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    assert system.call("add2", '{"a": 1, "b": 1}') == "2"
    assert not (plugins / "__pycache__").exists()
    assert bundle.stat().st_mtime_ns == written  # nothing changed: not rewritten
    assert (system.registry["add1"].plugin, system.registry["add1"].source) == ("dropin:p1", "drop-in")


def test_an_edited_drop_in_runs_its_new_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    home = Path(os.environ["HERMES_HOME"])
    plugins = tmp_path / "plugins"
    path = write(plugins / "adder.py", TOOL_FILE.format(name="add", toolset="math"))
    assert (
        ToolSystem.load(plugins_dir=plugins, load_entry_points=False).call("add", '{"a": 2, "b": 3}') == "5"
    )
    # the same size and a later mtime: only the stamp tells the edit apart
    path.write_text(path.read_text().replace("return a + b", "return a * b"))
    stamp = path.stat()
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert (
        ToolSystem.load(plugins_dir=plugins, load_entry_points=False).call("add", '{"a": 2, "b": 3}') == "6"
    )
    # a deleted file leaves the bundle; a torn bundle or another interpreter's is compiled again
    write(plugins / "gone.py", TOOL_FILE.format(name="gone", toolset="math"))
    ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    (plugins / "gone.py").unlink()
    ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    assert b"gone.py" not in _bundle(home).read_bytes()
    bundle = _bundle(home)
    for damaged in (
        bundle.read_bytes()[:-40],
        b"hermes-dropin-code 1\n" + b"\x00" * 4 + bundle.read_bytes()[25:],
    ):
        bundle.write_bytes(damaged)
        system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
        assert system.call("add", '{"a": 2, "b": 3}') == "6"
        assert _bundle(home).read_bytes() != damaged  # written again, whole


def test_no_code_bundle_is_written_without_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    home = Path(os.environ["HERMES_HOME"])
    plugins = tmp_path / "plugins"
    write(plugins / "adder.py", TOOL_FILE.format(name="add", toolset="math"))
    assert (
        ToolSystem.load(plugins_dir=plugins, load_entry_points=False).call("add", '{"a": 2, "b": 3}') == "5"
    )
    assert not list((home / "cache").glob("dropin-*.code"))


def test_two_systems_load_the_same_folder_independently(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write(plugins / "adder.py", TOOL_FILE.format(name="add", toolset="math"))
    one = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    two = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    assert one.registry["add"] is not two.registry["add"]
    one.registry.deregister("add")
    assert "add" not in one.registry and two.call("add", {"a": 1, "b": 2}) == "3"


def test_entry_points_are_discovered_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    body = """
    from hermes_core import hookimpl

    @hookimpl
    def register_tools(registry):
        registry.register(name="ping", toolset="net", handler=lambda: "pong",
                          schema={"name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}})
    """
    make_dist(site, "hermes-ping", "hermes_ping_mod", body)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "hermes-ping,hermes-pong")
    system = ToolSystem.load(plugins_dir=False)
    entry = system.registry["ping"]
    assert (entry.plugin, entry.distribution, entry.version, entry.source) == (
        "hermes-ping",
        "hermes-ping",
        "1.2.3",
        "entry point",
    )
    assert system.call("ping") == "pong"
    import os

    cache = Path(os.environ["HERMES_HOME"]) / "cache" / "entry-points.json"
    assert "hermes_ping_mod" in cache.read_text()
    # installing another distribution changes the directory's mtime, which invalidates the cache
    make_dist(site, "hermes-pong", "hermes_pong_mod", body.replace("ping", "pong2"))
    os.utime(site, ns=(1, 1))
    system2 = ToolSystem.load(plugins_dir=False)
    assert "pong2" in system2.registry and "ping" in system2.registry


def test_the_entry_point_cache_survives_files_coming_and_going_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_core.plugins import _entrypoints

    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend("")  # python -c and python -m put the current directory first
    cache = tmp_path / "eps.json"
    scans: list[int] = []
    real_scan = _entrypoints._scan
    monkeypatch.setattr(_entrypoints, "_scan", lambda group: scans.append(1) or real_scan(group))
    _entrypoints.discover(cache)
    (work / "notes.txt").write_text("a new file changes the directory's mtime")
    os.utime(work, ns=(5, 5))
    _entrypoints.discover(cache)
    assert len(scans) == 1  # still warm
    (work / "hermes_local-1.0.dist-info").mkdir()  # but distribution metadata in it is seen
    _entrypoints.discover(cache)
    assert len(scans) == 2


def test_broken_entry_points_do_not_stop_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    make_dist(site, "hermes-bad-import", "bad_import_mod", "import does_not_exist_anywhere\n")
    make_dist(
        site,
        "hermes-bad-hook",
        "bad_hook_mod",
        """
    from hermes_core import hookimpl

    @hookimpl
    def register_tools(registry, surprise):
        pass
    """,
    )
    make_dist(
        site,
        "hermes-raiser",
        "raiser_mod",
        """
    from hermes_core import hookimpl

    @hookimpl
    def register_tools(registry):
        raise ValueError("cannot register today")
    """,
    )
    make_dist(site, "hermes-exit", "exit_mod", "import sys\nsys.exit(3)\n")
    make_dist(site, "hermes-dupe-one", "dupe_one_mod", "", ep_name="shared-name")
    make_dist(site, "hermes-dupe-two", "dupe_two_mod", "", ep_name="shared-name")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("HERMES_LOAD_PLUGINS")
    system = ToolSystem.load(plugins_dir=False)
    records = {r.name: r for r in system.plugin_records()}
    assert (
        records["hermes-bad-import"].stage == "import"
        and "does_not_exist_anywhere" in records["hermes-bad-import"].error
    )
    assert records["hermes-bad-hook"].stage == "register" and "surprise" in records["hermes-bad-hook"].error
    assert (
        records["hermes-raiser"].stage == "register_tools"
        and "cannot register today" in records["hermes-raiser"].error
    )
    assert records["hermes-exit"].status == "failed"
    dupes = [r for r in system.plugin_records() if r.name.startswith("shared-name")]
    assert sorted(r.status for r in dupes) == ["failed", "loaded"]
    assert any("duplicate plugin name 'shared-name'" in (r.error or "") for r in dupes)


def test_blocking_and_load_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    for n in ("alpha", "beta"):
        make_dist(
            site,
            f"hermes-{n}",
            f"{n}_mod",
            f"""
        from hermes_core import hookimpl

        @hookimpl
        def register_tools(registry):
            registry.register(name="{n}", toolset="{n}", handler=lambda: "{n}",
                              schema={{"name": "{n}", "parameters": {{"type": "object", "properties": {{}}}}}})
        """,
        )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("HERMES_LOAD_PLUGINS")
    assert {"alpha", "beta"} <= set(ToolSystem.load(plugins_dir=False).registry.names())
    assert "alpha" not in ToolSystem.load(plugins_dir=False, blocked=["hermes-alpha"]).registry
    monkeypatch.setenv("HERMES_BLOCK_PLUGINS", "hermes-beta")
    assert "beta" not in ToolSystem.load(plugins_dir=False).registry
    monkeypatch.delenv("HERMES_BLOCK_PLUGINS")
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "hermes-alpha")
    system = ToolSystem.load(plugins_dir=False)
    assert "alpha" in system.registry and "beta" not in system.registry
    assert {r.name: r.note for r in system.plugin_records()}[
        "hermes-beta"
    ] == "not listed in HERMES_LOAD_PLUGINS"
    config = tmp_path / "config.toml"
    config.write_text('[plugins]\nblocked = ["hermes-alpha"]\n')
    monkeypatch.delenv("HERMES_LOAD_PLUGINS")
    assert "alpha" not in ToolSystem.load(plugins_dir=False, config=config).registry


def test_hook_plugins_from_dropins(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write(plugins / "adder.py", TOOL_FILE.format(name="add", toolset="math"))
    write(
        plugins / "policy.py",
        """
    from hermes_core import hookimpl, Block

    @hookimpl
    def pre_tool_call(name, arguments):
        if arguments.get("a") == 13:
            return Block("13 is unlucky")
    """,
    )
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    outcome = system.call_outcome("add", {"a": 13, "b": 1})
    assert outcome.status == "blocked" and "unlucky" in json.loads(outcome.result)["error"]
    assert system.call("add", {"a": 12, "b": 1}) == "13"


def test_trace_covers_load_time_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = tmp_path / "plugins"
    write(
        plugins / "hooked.py",
        """
    from hermes_core import hookimpl

    @hookimpl
    def register_tools(registry):
        registry.register(name="t", toolset="ts", handler=lambda: "ok", schema={"name": "t"})

    @hookimpl
    def register_toolsets():
        return {"bundle": {"includes": ["ts"]}}
    """,
    )
    monkeypatch.setenv("HERMES_TRACE_PLUGINS", "1")
    ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    err = capsys.readouterr().err
    assert "[hermes trace] register_tools dropin:hooked" in err and "registered ['t']" in err
    assert "[hermes trace] register_toolsets dropin:hooked" in err and "'bundle'" in err


def test_plugins_added_and_removed_at_run_time() -> None:
    from hermes_core import Block, hookimpl

    class Adder:
        @hookimpl
        def register_tools(self, registry):
            registry.register(
                name="add1",
                toolset="late",
                handler=lambda n: n + 1,
                schema={
                    "name": "add1",
                    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
                },
            )

        @hookimpl
        def register_toolsets(self):
            return {"late-set": {"includes": ["late"]}}

        @hookimpl
        def pre_tool_call(self, arguments):
            return Block("no negatives") if arguments.get("n", 0) < 0 else None

    class Broken:
        @hookimpl
        def register_tools(self, registry):
            registry.register(name="half", toolset="broken", handler=print, schema={"name": "half"})
            raise RuntimeError("failed half-way")

    system = ToolSystem.load(plugins_dir=False, load_entry_points=False)
    record = system.register_plugin(Adder(), name="adder")
    assert record.status == "loaded" and record.tools == ["add1"]
    assert system.call("add1", {"n": 1}, enabled=["late-set"]) == "2"
    assert system.call_outcome("add1", {"n": -1}).status == "blocked"
    broken = system.register_plugin(Broken(), name="broken")
    assert broken.status == "failed" and "failed half-way" in (broken.error or "")
    assert "half" not in system.registry
    system.unregister_plugin("adder")
    assert "add1" not in system.registry and "late-set" not in system.toolsets.names()
    assert system.call_outcome("add1", {"n": 1}).error_kind == "unknown_tool"


SCHEMA = '{"name": NAME, "parameters": {"type": "object", "properties": {}}}'
REGISTRATION_FORMS = {
    "alias": """
        from hermes_core import registry as r
        NAME = "via_alias"
        r.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)
    """,
    "in_if": """
        import os
        from hermes_core import registry
        NAME = "in_if"
        if os.sep:
            registry.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)
    """,
    "loop": """
        from hermes_core import registry
        for NAME in ("loop_a", "loop_b"):
            registry.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: "looped")
    """,
    "helper": """
        from hermes_core import registry

        def add_tool(NAME):
            registry.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)

        add_tool("from_helper")
    """,
    "module_import": """
        import hermes_core
        NAME = "module_import"
        hermes_core.registry.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)
    """,
    "reassigned": """
        from hermes_core.registry import register as add
        NAME = "reassigned"
        add(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)
    """,
    "hook_alias": """
        from hermes_core import hookimpl as hook

        @hook
        def register_tools(registry):
            NAME = "hook_alias"
            registry.register(name=NAME, toolset="forms", schema=SCHEMA, handler=lambda: NAME)
    """,
}


def test_every_form_of_registration_is_found(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    for name, body in REGISTRATION_FORMS.items():
        write(plugins / f"{name}.py", body.replace("SCHEMA", SCHEMA))
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    statuses = {r.name: (r.status, r.error) for r in system.plugin_records()}
    assert statuses == {f"dropin:{name}": ("loaded", None) for name in REGISTRATION_FORMS}
    expected = {
        "via_alias",
        "in_if",
        "loop_a",
        "loop_b",
        "from_helper",
        "module_import",
        "reassigned",
        "hook_alias",
    }
    assert set(system.registry.names()) == expected
    assert system.call("from_helper") == "from_helper"


def test_files_meant_as_plugins_that_register_nothing_are_reported(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    marker = tmp_path / "executed"
    write(
        plugins / "forgot.py",
        f"""
        from hermes_core import ToolError
        open({str(marker)!r}, "w").write("ran")

        def tool():
            raise ToolError("never registered")
        """,
    )
    write(
        plugins / "never_called.py",
        f"""
        from hermes_core import registry

        def setup():
            registry.register(name="later", toolset="t", schema={SCHEMA.replace("NAME", '"later"')}, handler=print)
        """,
    )
    system = ToolSystem.load(plugins_dir=plugins, load_entry_points=False)
    records = {r.name: r for r in system.plugin_records()}
    forgot = records["dropin:forgot"]
    assert forgot.status == "skipped" and not marker.exists()  # never executed...
    assert forgot.stage == "scan" and "imports hermes_core but calls no registry.register" in (
        forgot.error or ""
    )
    never = records["dropin:never_called"]  # ...while this one is imported, and says why nothing came of it
    assert never.status == "loaded" and never.tools == []
    assert "registered no tool" in never.note and "only called inside setup()" in never.note

    from hermes_core.doctor import run_doctor

    problems = {(p.plugin, p.severity) for p in run_doctor(system, timeout=30).problems}
    assert ("dropin:forgot", "error") in problems and ("dropin:never_called", "warning") in problems
