"""The platform toolsets, the hermes-webhook subset, and what ``hermes tools list --all`` says about the service
tools on a machine where none is configured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_core import ToolSystem
from hermes_core.cli import cli

SERVICE_TOOLS = {
    "image_generate",
    "video_generate",
    "text_to_speech",
    "send_message",
    "discord",
    "discord_admin",
    "ha_list_entities",
    "ha_get_state",
    "ha_list_services",
    "ha_call_service",
    "feishu_doc_read",
    "feishu_drive_list_comments",
    "feishu_drive_list_comment_replies",
    "feishu_drive_reply_comment",
    "feishu_drive_add_comment",
}
MEDIA = {"image_generate", "video_generate", "text_to_speech"}
FEISHU = {t for t in SERVICE_TOOLS if t.startswith("feishu_")}
HOMEASSISTANT = {t for t in SERVICE_TOOLS if t.startswith("ha_")}


def test_every_service_tool_is_registered_in_its_family(builtin_system: ToolSystem) -> None:
    toolsets = builtin_system.toolsets
    assert toolsets.expand("media") == MEDIA
    assert toolsets.expand("messaging") == {"send_message"}
    assert toolsets.expand("discord") == {"discord", "discord_admin"}
    assert toolsets.expand("homeassistant") == HOMEASSISTANT
    assert toolsets.expand("feishu") == FEISHU
    assert len(SERVICE_TOOLS) == 15 and set(builtin_system.registry.names()) >= SERVICE_TOOLS


def test_platform_toolsets_are_the_core_baseline_plus_the_platform(builtin_system: ToolSystem) -> None:
    toolsets = builtin_system.toolsets
    core = toolsets.expand("hermes-core")
    expected = {
        "hermes-telegram": {"send_message"} | MEDIA,
        "hermes-discord": {"send_message", "discord", "discord_admin"} | MEDIA,
        "hermes-slack": {"send_message"} | MEDIA,
        "hermes-feishu": FEISHU | MEDIA,
        "hermes-homeassistant": HOMEASSISTANT,
    }
    for name, platform in expected.items():
        assert toolsets.expand(name) == core | platform, name
    assert not toolsets.problems()


def test_webhook_subset_cannot_act_on_its_own(builtin_system: ToolSystem) -> None:
    webhook = builtin_system.toolsets.expand("hermes-webhook")
    registered = set(builtin_system.registry.names())
    assert webhook and webhook <= registered  # every name is a real tool
    runs_or_writes = {"terminal", "process", "execute_code", "write_file", "patch", "cronjob", "skill_manage"}
    sends_or_acts = {
        "send_message",
        "discord",
        "discord_admin",
        "ha_call_service",
        "feishu_drive_reply_comment",
    }
    sends_or_acts |= {"feishu_drive_add_comment", "kanban_create", "kanban_update", "memory"}
    reads_private = {"read_file", "search_files", "session_search", "feishu_doc_read", "ha_get_state"}
    reads_private |= {"ha_list_entities", "feishu_drive_list_comments", "feishu_drive_list_comment_replies"}
    assert not webhook & (runs_or_writes | sends_or_acts | reads_private | MEDIA)


def test_tools_list_all_explains_how_to_enable_each_service_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no espeak-ng either: every service tool is hidden
    for var in ("HASS_URL", "HASS_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(cli, ["tools", "list", "--all", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert len([r for r in rows.values() if r["plugin"] == "builtin"]) >= 33  # 18 before, 15 here
    for name in SERVICE_TOOLS:
        row = rows[name]
        assert row["available"] is False, name
        reason = row["reason"]
        assert "hermes config" in reason and "[plugins." in reason, (name, reason)
    assert "install espeak-ng" in rows["text_to_speech"]["reason"]
    assert "HASS_TOKEN" in rows["ha_call_service"]["reason"]


def test_configured_by_environment_references(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[plugins.telegram]\nbot_token = { env = "HERMES_TEST_TG_TOKEN" }\n'
        '[plugins.feishu]\napp_id = "cli_x"\napp_secret = { env = "HERMES_TEST_FEISHU_SECRET" }\n'
    )
    monkeypatch.delenv("HERMES_TEST_TG_TOKEN", raising=False)
    with ToolSystem.load(
        config=config, load_entry_points=False, plugins_dir=False, plugins=[_builtin()]
    ) as unset:
        assert not unset.availability_of("send_message")[0]  # the variable it names is not set
    monkeypatch.setenv("HERMES_TEST_TG_TOKEN", "123:abc")
    monkeypatch.setenv("HERMES_TEST_FEISHU_SECRET", "s3cret")
    with ToolSystem.load(
        config=config, load_entry_points=False, plugins_dir=False, plugins=[_builtin()]
    ) as ready:
        assert ready.availability_of("send_message") == (True, "")
        assert ready.availability_of("feishu_doc_read") == (True, "")


def _builtin() -> object:
    import hermes_builtin.plugin

    return hermes_builtin.plugin


def test_webhook_reads_only_the_bundled_skills(builtin_system: ToolSystem) -> None:
    secret = "private-skill-body-7f3a"
    made = builtin_system.call_outcome(
        "skill_manage",
        {
            "action": "create",
            "name": "my-notes",
            "content": f"---\nname: my-notes\ndescription: The user's private notes.\n---\n\n{secret}\n",
        },
    )
    assert made.ok, made.result
    shadow = builtin_system.call_outcome(  # a user skill overriding a bundled one must not show either
        "skill_manage",
        {
            "action": "create",
            "name": "git-workflow",
            "content": f"---\nname: git-workflow\ndescription: shadowed\n---\n\n{secret}\n",
        },
    )
    assert shadow.ok, shadow.result
    everything = builtin_system.call("skill_view", {"name": "my-notes"})
    assert secret in everything  # the full selection (with skill_manage) reads it
    webhook = ["hermes-webhook"]
    listed = builtin_system.call_outcome("skills_list", {}, enabled=webhook)
    assert listed.ok and "my-notes" not in listed.result and "shadowed" not in listed.result
    assert "git-workflow [bundled]" in listed.result
    view = builtin_system.call_outcome("skill_view", {"name": "my-notes"}, enabled=webhook)
    assert view.status == "error" and secret not in view.result and "no skill named" in view.result
    bundled = builtin_system.call_outcome("skill_view", {"name": "git-workflow"}, enabled=webhook)
    assert bundled.ok and secret not in bundled.result and "git" in bundled.result
