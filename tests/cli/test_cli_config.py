"""The configuration file through the CLI: path, show with secrets masked, set, and broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Run, run_json

from hermes_core.cli._config_cmd import MASK, redact_settings
from hermes_core.config import ConfigError, load_config, update_config

BROKEN = {
    "bad toml": ("[toolsets\nenabled = []\n", ["invalid TOML", "line 1"]),
    "wrong type": ('[limits]\ntimeout = "soon"\n', [":2:", "limits.timeout", "must be a number"]),
    "unknown key": ("[tools]\ndisabled = []\n\n[toolz]\nx = 1\n", [":4:", "'toolz'", "not a known setting"]),
}


def test_config_path_follows_hermes_home_and_option(home: Path, run: Run, tmp_path: Path) -> None:
    assert run("config", "path").stdout.strip() == str(home / "config.toml")
    other = tmp_path / "other.toml"
    assert run("--config", str(other), "config", "path").stdout.strip() == str(other)


def test_config_path_also_names_the_drop_in_folder(home: Path, run: Run, tmp_path: Path) -> None:
    result = run("config", "path")
    assert result.stdout == f"{home / 'config.toml'}\n"  # one line on stdout, for scripts
    assert f"# drop-in plugin folder: {home / 'plugins'}" in result.stderr
    assert f"# data: {home / 'data'}" in result.stderr
    other = run("--plugins-dir", str(tmp_path / "mine"), "config", "path")
    assert f"# drop-in plugin folder: {tmp_path / 'mine'}" in other.stderr


def test_config_show_masks_secrets_and_keeps_references(home: Path, run: Run) -> None:
    (home / "config.toml").write_text(
        "[plugins.weather]\n"
        'api_key = "sk-live-123456"\n'
        'units = "metric"\n'
        'token = { env = "WEATHER_TOKEN" }\n'
        "[mcp.servers.gh]\n"
        'command = "gh-mcp"\n'
        'env = { GITHUB_TOKEN = "ghp_abcdef", LOG = "info" }\n'
    )
    data = run_json(run, "config", "show", "--json")
    assert data["path"] == str(home / "config.toml") and data["exists"] is True
    weather = data["settings"]["plugins"]["weather"]
    assert weather == {"api_key": MASK, "units": "metric", "token": {"env": "WEATHER_TOKEN"}}
    assert data["settings"]["mcp"]["servers"]["gh"]["env"] == {"GITHUB_TOKEN": MASK, "LOG": "info"}
    assert data["settings"]["limits"]["timeout"] == 120.0  # defaults filled in
    raw = run_json(run, "config", "show", "--json", "--raw")
    assert "limits" not in raw["settings"]
    plain = run("config", "show")
    assert plain.exit_code == 0
    assert "sk-live-123456" not in plain.stdout and "ghp_abcdef" not in plain.stdout
    assert f'api_key = "{MASK}"' in plain.stdout


def test_redact_settings_uses_the_text_redactor_for_other_values() -> None:
    out = redact_settings(
        {"a": "x SECRET y", "password": 5, "nested": [{"auth": "b"}]}, lambda t: t.replace("SECRET", "***")
    )
    assert out == {"a": "x *** y", "password": MASK, "nested": [{"auth": MASK}]}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize(
    "command", [["config", "show"], ["tools", "list"], ["plugins", "list"], ["call", "x"]]
)
def test_broken_config_exits_2_naming_line_and_key(
    home: Path, run: Run, case: str, command: list[str]
) -> None:
    text, expected = BROKEN[case]
    (home / "config.toml").write_text(text)
    result = run(*command)
    assert result.exit_code == 2, result.output
    assert str(home / "config.toml") in result.stderr
    for part in expected:
        assert part in result.stderr
    assert result.stdout == ""


def test_missing_named_config_is_an_error_but_config_path_still_works(
    home: Path, run: Run, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.toml"
    result = run("--config", str(missing), "tools", "list")
    assert result.exit_code == 2
    assert "not found" in result.stderr
    assert run("--config", str(missing), "config", "path").exit_code == 0


def test_unknown_enabled_toolset_is_a_configuration_error(home: Path, run: Run) -> None:
    (home / "config.toml").write_text('[toolsets]\nenabled = ["no-such-toolset"]\n')
    result = run("tools", "list")
    assert result.exit_code == 2
    assert "no-such-toolset" in result.stderr and str(home / "config.toml") in result.stderr


def test_config_set_keeps_comments_and_validates(home: Path, run: Run) -> None:
    path = home / "config.toml"
    path.write_text("# my settings\n[limits]\ntimeout = 30  # short on purpose\n")
    assert run("config", "set", "limits.tools.terminal.timeout", "600").exit_code == 0
    assert run("config", "set", "toolsets.disabled", '["web"]').exit_code == 0
    text = path.read_text()
    assert text.startswith("# my settings\n[limits]\ntimeout = 30  # short on purpose\n")
    config = load_config(path)
    assert config.tool_limits("terminal") == {"timeout": 600}
    assert config.disabled_toolsets == ["web"]
    refused = run("config", "set", "limits.timeout", '"soon"')
    assert refused.exit_code == 1
    assert "not changed" in refused.stderr and "limits.timeout" in refused.stderr
    assert path.read_text() == text  # a refused edit leaves the file as it was


def test_update_config_is_atomic_and_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    config = update_config(path, lambda doc: doc.update({"plugins": {"blocked": ["x"]}}))
    assert config.blocked_plugins == ["x"] and config.path == path
    assert load_config(path).blocked_plugins == ["x"]
    with pytest.raises(ConfigError, match="not a known setting"):
        update_config(path, lambda doc: doc.update({"bogus": 1}))
    assert load_config(path).blocked_plugins == ["x"]
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    path.write_text("[broken\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        update_config(path, lambda doc: None)
    assert json.dumps(path.read_text()) == json.dumps("[broken\n")
