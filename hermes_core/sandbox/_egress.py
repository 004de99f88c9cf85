"""What the sandbox's proxy lets a command reach: the domain allow-list, approval, then the SSRF policy.

A name is admitted when it is on the allow-list (``[sandbox.network] allow``, plus the package registries
unless ``registries = false``; ``*.example.com`` covers every name below ``example.com``), or when a human
approves it (``kind = "network"``, subject the name; "always" is remembered like any approval; headless,
nobody approves). Names are judged before anything resolves them, so an unlisted name never reaches DNS.
Then the same SSRF policy as ``web_extract`` applies (``hermes_core.security.NetworkPolicy``): loopback,
private, link-local and metadata addresses are refused unless ``allow_networks`` lists them, whatever
the allow-list or a human said; the connection goes to the addresses that were checked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..security import BlockedURLError, NetworkPolicy, parse_ip_literal
from ._settings import EgressSettings

__all__ = ["EgressPolicy", "EgressRefused", "NetworkApproval", "name_allowed"]

NetworkApproval = Callable[[str, str], bool]  # (host, reason) -> approved
_REMEMBER_SECONDS = 60.0  # one answer serves a burst of connections (a package install makes dozens)


class EgressRefused(Exception):
    """The proxy refuses a destination; ``str()`` says why (it is what the command sees)."""


def name_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` matches one of ``patterns`` (exact names, ``*.domain`` for the names below it)."""
    name = host.strip().lower().rstrip(".")
    for pattern in patterns:
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]) and len(name) > len(pattern) - 1:
                return True
        elif name == pattern or name.strip("[]") == pattern.strip("[]"):
            return True
    return False


class EgressPolicy:
    """Decides each destination of the proxy (see the module docstring)."""

    def __init__(self, settings: EgressSettings, approval: NetworkApproval | None = None) -> None:
        self.settings = settings
        self.patterns = settings.names()
        self.ssrf = NetworkPolicy.from_config(settings.policy)
        self.approval = approval
        self._answers: dict[str, tuple[float, bool]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def _approved(self, name: str) -> bool:
        if not self.settings.ask or self.approval is None:
            return False
        with self._lock:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:  # parallel connections to one name ask once
            now = time.monotonic()
            known = self._answers.get(name)
            if known is not None and now - known[0] < _REMEMBER_SECONDS:
                return known[1]
            reason = (
                f"a sandboxed command wants to connect to {name}, which is not on the allow-list "
                "([sandbox.network] allow)"
            )
            try:
                granted = bool(self.approval(name, reason))
            except Exception:
                granted = False
            self._answers[name] = (time.monotonic(), granted)
            return granted

    def admit(self, host: str, port: int) -> list[Any]:
        """The addresses a connection to ``host:port`` may use; ``EgressRefused`` when it may not go ahead."""
        name = host.strip().lower().rstrip(".")
        if not name or len(name) > 253:
            raise EgressRefused("no valid host name")
        if not 0 < port < 65536:
            raise EgressRefused(f"port {port} is not valid")
        literal = parse_ip_literal(name)
        if literal is not None:
            why = self.ssrf.refusal(literal)
            if why is not None:
                raise EgressRefused(f"{name}: {why}; refused by the sandbox's network policy")
        if not name_allowed(name, self.patterns) and not self._approved(name):
            if not self.settings.ask:
                hint = "add it to [sandbox.network] allow"
            elif self.approval is None:
                hint = "add it to [sandbox.network] allow (nobody is there to approve it)"
            else:
                hint = "it was not approved; add it to [sandbox.network] allow to allow it for good"
            raise EgressRefused(f"{name} is not on the sandbox's network allow-list: {hint}")
        try:
            return list(self.ssrf.vet(name, port))
        except BlockedURLError as err:
            raise EgressRefused(f"{err}") from None
        except (OSError, UnicodeError) as err:
            raise EgressRefused(f"{name}: cannot resolve ({err})") from None
