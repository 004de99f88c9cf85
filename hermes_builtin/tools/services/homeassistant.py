"""Home Assistant over its REST API: ``ha_list_entities``, ``ha_get_state``, ``ha_list_services`` and
``ha_call_service``.

Calls that act on a lock, an alarm panel or a cover (doors, gates, garage doors) need a human's approval,
bound to the exact call (so do ``homeassistant.*`` calls aimed at areas, devices, floors or labels, which may
hold such entities); services that run commands or arbitrary requests on the Home Assistant host
(``shell_command``, ``command_line``, ``python_script``, ``pyscript``, ``rest_command``, ``hassio``) are refused.

Configuration (``[plugins.homeassistant]``, or the ``HASS_URL`` / ``HASS_TOKEN`` environment variables)::

    url = "http://homeassistant.local:8123"
    token = { env = "HASS_TOKEN" }           # a long-lived access token (profile page, Security tab)
    timeout = 15                             # seconds per request
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

from ._remote import Service
from ._settings import as_float, as_text, section

if TYPE_CHECKING:
    from hermes_core import ToolSystem

TOOLSET = "homeassistant"
SECTION = "homeassistant"
DEFAULT_URL = "http://homeassistant.local:8123"
ENABLE = (
    'set [plugins.homeassistant] token = {env = "HASS_TOKEN"} (and url = "http://<host>:8123") in the hermes '
    "config, or the HASS_TOKEN (and HASS_URL) environment variables"
)
SENSITIVE = {
    "lock": "a lock",
    "alarm_control_panel": "an alarm panel",
    "cover": "a cover (door, gate, garage)",
}
# selectors that name no entity: a generic service aimed at them may reach a lock, an alarm or a cover
INDIRECT_TARGETS = ("area_id", "device_id", "floor_id", "label_id")
REFUSED = frozenset({"shell_command", "command_line", "python_script", "pyscript", "rest_command", "hassio"})
MAX_ENTITIES = 300
_NAME = re.compile(r"^[a-z0-9_]+$")
_ENTITY = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")
_ENTITY_SCHEMA = {"type": "string", "pattern": _ENTITY.pattern, "description": "e.g. light.kitchen"}
_NAME_SCHEMA = {"type": "string", "pattern": _NAME.pattern}


def settings(source: Any) -> tuple[str, str | None]:
    """``(base URL, token)`` from ``[plugins.homeassistant]``, else ``HASS_URL`` / ``HASS_TOKEN``."""
    cfg = section(source, SECTION)
    url = as_text(cfg, "url") or os.environ.get("HASS_URL", "").strip() or DEFAULT_URL
    token = as_text(cfg, "token") or os.environ.get("HASS_TOKEN", "").strip() or None
    return url.rstrip("/"), token


def check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    _, token = settings(system)
    if token:
        return True, ""
    return Unavailable(f"no Home Assistant token: {ENABLE}", by_design=True)  # opt-in: not a problem


def _service(context: CallContext) -> Service:
    url, token = settings(context)
    if not token:
        raise ToolError(f"not configured: {ENABLE}", retryable=False)
    return Service(
        "Home Assistant",
        f"{url}/api",
        headers={"Authorization": f"Bearer {token}"},
        secrets=[token],
        auth_hint="Check the Home Assistant token ([plugins.homeassistant] token or HASS_TOKEN).",
        timeout=as_float(section(context, SECTION), "timeout", 15.0, 0.1, 300.0),
        detail=lambda body: (
            str(body.get("message")) if isinstance(body, dict) and body.get("message") else None
        ),
    )


def _malformed(what: str) -> ToolError:
    return ToolError(f"Home Assistant sent a malformed reply to {what}")


def _label(state: dict[str, Any]) -> str:
    attrs: dict[str, Any] = state["attributes"] if isinstance(state.get("attributes"), dict) else {}
    name = attrs.get("friendly_name")
    unit = attrs.get("unit_of_measurement")
    value = f"{state.get('state')}{' ' + str(unit) if unit else ''}"
    return f"{state.get('entity_id')}  {value}" + (f"  ({name})" if name else "")


# -- the tools ----------------------------------------------------------------------------------------------


def ha_list_entities(domain: str | None = None, search: str | None = None, *, context: CallContext) -> str:
    """Entities with their state, filtered by domain and/or a text that appears in the id or name."""
    states = _service(context).call(context, "GET", "states", what="listing entities")
    if not isinstance(states, list):
        raise _malformed("listing entities")
    needle = (search or "").strip().lower()
    rows = []
    for state in states:
        if not isinstance(state, dict) or not isinstance(state.get("entity_id"), str):
            raise _malformed("listing entities")
        entity = state["entity_id"]
        if domain and not entity.startswith(f"{domain}."):
            continue
        if needle and needle not in _label(state).lower():
            continue
        rows.append(_label(state))
    rows.sort()
    if not rows:
        return "No entity matches." if domain or needle else "Home Assistant has no entities."
    shown = rows[:MAX_ENTITIES]
    more = (
        f"\n... {len(rows) - MAX_ENTITIES} more; narrow with domain or search."
        if len(rows) > MAX_ENTITIES
        else ""
    )
    return f"{len(rows)} entities:\n" + "\n".join(shown) + more


def ha_get_state(entity_id: str, *, context: CallContext) -> str:
    """One entity's state and attributes."""
    if not _ENTITY.match(entity_id):
        raise ToolError(f"{entity_id!r} is not an entity id (domain.object_id, e.g. light.kitchen)")
    state = _service(context).call(context, "GET", f"states/{entity_id}", what=f"reading {entity_id}")
    if not isinstance(state, dict) or "state" not in state:
        raise _malformed(f"reading {entity_id}")
    keep = ("entity_id", "state", "attributes", "last_changed", "last_updated")
    return json.dumps({k: state.get(k) for k in keep}, ensure_ascii=False, indent=1)


def ha_list_services(domain: str | None = None, *, context: CallContext) -> str:
    """The services Home Assistant offers (one domain, or all), with their fields."""
    catalog = _service(context).call(context, "GET", "services", what="listing services")
    if not isinstance(catalog, list):
        raise _malformed("listing services")
    lines = []
    for item in catalog:
        if not isinstance(item, dict) or not isinstance(item.get("services"), dict):
            raise _malformed("listing services")
        name = str(item.get("domain"))
        if domain and name != domain:
            continue
        parts = []
        for service, spec in sorted(item["services"].items()):
            fields = (
                spec.get("fields") if isinstance(spec, dict) and isinstance(spec.get("fields"), dict) else {}
            )
            parts.append(f"{service}({', '.join(sorted(fields))})" if fields else service)
        lines.append(f"{name}: {', '.join(parts)}")
    if not lines:
        return f"No services in domain {domain!r}." if domain else "No services."
    return "\n".join(sorted(lines))


def _targets(entity_id: str | None, data: dict[str, Any]) -> list[str]:
    found: list[str] = [entity_id] if entity_id else []
    extra = data.get("entity_id")
    if isinstance(extra, str):
        found += [e.strip() for e in extra.split(",") if e.strip()]
    elif isinstance(extra, list):
        found += [e for e in extra if isinstance(e, str)]
    return found


def ha_call_service(
    domain: str,
    service: str,
    entity_id: str | None = None,
    data: dict[str, Any] | None = None,
    *,
    context: CallContext,
) -> str:
    """Call ``domain.service`` on ``entity_id`` with ``data``; locks, alarms and covers ask for approval."""
    if not _NAME.match(domain) or not _NAME.match(service):
        raise ToolError("domain and service are lower-case names such as 'light' and 'turn_on'")
    if domain in REFUSED:
        raise ToolError(
            f"{domain} services run commands or requests on the Home Assistant host; this tool does not call them",
            retryable=False,
        )
    body = dict(data or {})
    targets = _targets(entity_id, body)
    for target in targets:
        if not _ENTITY.match(target):
            raise ToolError(f"{target!r} is not an entity id (domain.object_id, e.g. light.kitchen)")
    if entity_id:
        body["entity_id"] = targets if len(targets) > 1 else entity_id
    touched = sorted({SENSITIVE[d] for d in [domain, *(t.split(".")[0] for t in targets)] if d in SENSITIVE})
    if domain == "homeassistant" and any(body.get(key) for key in INDIRECT_TARGETS):
        touched.append("whatever devices those areas, devices, floors or labels hold")
    if touched:
        context.request_approval(
            f"ha_call_service {domain}.{service} {json.dumps(body, sort_keys=True, ensure_ascii=False)}",
            f"controls {' and '.join(touched)}: physical access or security",
        )
    what = f"calling {domain}.{service}"
    changed = _service(context).call(context, "POST", f"services/{domain}/{service}", what=what, json=body)
    if isinstance(changed, dict) and isinstance(changed.get("changed_states"), list):
        changed = changed["changed_states"]  # the shape when a service also returns a response
    if not isinstance(changed, list):
        raise _malformed(what)
    states = [f"{s.get('entity_id')} -> {s.get('state')}" for s in changed if isinstance(s, dict)]
    return f"Called {domain}.{service}." + (
        f" Changed: {'; '.join(states)}." if states else " No state changed."
    )


_SCHEMAS: dict[str, dict[str, Any]] = {
    "ha_list_entities": {
        "description": "List Home Assistant entities with their current state; filter by domain and/or search.",
        "properties": {
            "domain": {**_NAME_SCHEMA, "description": "e.g. light, switch, sensor, climate"},
            "search": {"type": "string", "maxLength": 100, "description": "Text in the entity id or name."},
        },
    },
    "ha_get_state": {
        "description": "Read one Home Assistant entity: state, attributes and when it last changed.",
        "properties": {"entity_id": _ENTITY_SCHEMA},
        "required": ["entity_id"],
    },
    "ha_list_services": {
        "description": "List the services Home Assistant can call (per domain, with their data fields).",
        "properties": {"domain": _NAME_SCHEMA},
    },
    "ha_call_service": {
        "description": (
            "Call a Home Assistant service, e.g. domain 'light', service 'turn_on', entity_id 'light.kitchen', "
            "data {'brightness_pct': 40}. Locks, alarm panels and covers need the user's approval."
        ),
        "properties": {
            "domain": _NAME_SCHEMA,
            "service": _NAME_SCHEMA,
            "entity_id": _ENTITY_SCHEMA,
            "data": {"type": "object", "description": "Service data (see ha_list_services)."},
        },
        "required": ["domain", "service"],
    },
}
_HANDLERS: dict[str, tuple[Callable[..., str], str]] = {
    "ha_list_entities": (ha_list_entities, "🏠"),
    "ha_get_state": (ha_get_state, "🏠"),
    "ha_list_services": (ha_list_services, "🏠"),
    "ha_call_service": (ha_call_service, "🔌"),
}


def register(registry: ToolRegistry) -> None:
    for name, (handler, emoji) in _HANDLERS.items():
        spec = _SCHEMAS[name]
        schema = {
            "name": name,
            "description": spec["description"],
            "parameters": {
                "type": "object",
                "properties": spec["properties"],
                **({"required": spec["required"]} if spec.get("required") else {}),
                "additionalProperties": False,
            },
        }
        registry.register(
            name=name,
            toolset=TOOLSET,
            schema=schema,
            handler=handler,
            check_fn=check,
            emoji=emoji,
            parallel_safe=name != "ha_call_service",
        )
