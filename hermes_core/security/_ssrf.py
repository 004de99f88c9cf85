"""The outbound network policy (SSRF guard): which addresses a tool may reach on the model's behalf.

A URL the model chose may point at this machine, the local network or a cloud metadata service. The policy
refuses those after DNS resolution, so a public-looking name that resolves to ``127.0.0.1`` is refused as
well as ``http://2130706433/`` (a decimal IPv4), ``0x7f.1``, ``[::1]`` or ``[::ffff:127.0.0.1]``. Each refusal
names the address and why. Config can allow networks explicitly (``allow_networks``); a cloud metadata
address is allowed only when listed as a single address.

``check_url`` judges a URL; ``NetworkPolicy.vet(host)`` returns the vetted addresses a connection must use
(``hermes_core.safehttp`` connects to exactly those, so DNS cannot change between check and connect).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "BlockedURLError",
    "IPAddress",
    "NetworkPolicy",
    "UrlVerdict",
    "check_url",
    "parse_ip_literal",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str], Iterable[str]]

# Instance metadata services (AWS, GCP, Azure, Oracle, DigitalOcean; AWS ECS tasks; Alibaba Cloud; AWS IPv6).
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
METADATA_HOSTS: frozenset[str] = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
SCHEMES = frozenset({"http", "https"})
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPAT = ipaddress.ip_network("::/96")
_PART = re.compile(r"^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$", re.IGNORECASE)


class BlockedURLError(ValueError):
    """A URL or host the policy refuses; ``reason`` says why (the address and its kind)."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


@dataclass(frozen=True, slots=True)
class UrlVerdict:
    """What the policy thinks of a URL: ``decision`` "allow" or "refuse", the ``reason`` and the addresses."""

    url: str
    host: str
    port: int
    decision: Literal["allow", "refuse"]
    reason: str = ""
    addresses: tuple[IPAddress, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


def _legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """IPv4 in the forms ``inet_aton`` and browsers accept: ``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_PART.match(p) for p in parts):
        return None
    values = []
    for p in parts:
        if p[:2].lower() == "0x":
            values.append(int(p[2:] or "0", 16))
        elif len(p) > 1 and p[0] == "0":
            values.append(int(p, 8))
        else:
            values.append(int(p))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a URL host names literally (any IPv4 spelling, ``[v6]`` with or without brackets), else None."""
    text = host.strip().rstrip(".").lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return _legacy_ipv4(text) if text else None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo client, NAT64, IPv4-compatible)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or (ip in _IPV4_COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _kind(ip: IPAddress) -> str | None:
    """Why an address is not public, or None for a public one."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private network address"
    if not ip.is_global:
        return "not a public address"
    return None


def _network(value: str) -> IPNetwork:
    try:
        return ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        raise ValueError(f"allow_networks: {value!r} is not an IP address or CIDR network") from None


@dataclass(frozen=True, eq=False)
class NetworkPolicy:
    """Which addresses outbound requests may reach.

    Public addresses are always allowed; any other (loopback, private, link-local, metadata, reserved) only
    when an ``allow`` network contains it (a metadata address only when listed on its own, e.g.
    ``169.254.169.254/32``). ``hosts`` pins names to addresses like curl's ``--resolve``; ``resolver`` replaces
    DNS (tests); both answers are judged like DNS answers.
    """

    allow: tuple[IPNetwork, ...] = ()
    hosts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    resolver: Resolver | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> NetworkPolicy:
        """Read ``allow_networks`` (list of CIDRs/addresses) and ``resolve`` (host -> address or list)."""
        allow = section.get("allow_networks") or []
        if isinstance(allow, str) or not isinstance(allow, Sequence):
            raise ValueError("allow_networks must be a list of IP networks, e.g. ['127.0.0.1/32']")
        hosts: dict[str, tuple[str, ...]] = {}
        pinned = section.get("resolve") or {}
        if not isinstance(pinned, Mapping):
            raise ValueError("resolve must be a table of host = address (or a list of addresses)")
        for name, value in pinned.items():
            addrs = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else ()
            if not addrs or not all(isinstance(a, str) and parse_ip_literal(a) for a in addrs):
                raise ValueError(f"resolve: {name!r} must map to an IP address or a list of them")
            hosts[str(name).lower().rstrip(".")] = addrs
        return cls(allow=tuple(_network(str(v)) for v in allow), hosts=hosts)

    def refusal(self, ip: IPAddress) -> str | None:
        """Why ``ip`` may not be reached (None when it may)."""
        effective: IPAddress = ip
        if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
            ip = effective = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address):
            inner = _embedded_ipv4(ip)
            if inner is not None:
                effective = inner
        kind = _kind(effective)
        if kind is None:
            return None
        metadata = effective in METADATA_ADDRESSES
        for net in self.allow:
            if (
                effective.version == net.version
                and effective in net
                and (not metadata or net.num_addresses == 1)
            ):
                return None
        shown = f"{effective} (inside {ip})" if effective is not ip else str(ip)
        return f"{shown} is {kind}"

    def addresses(self, host: str, port: int | None = None) -> list[IPAddress]:
        """What ``host`` resolves to (a literal is itself); ``OSError`` when it does not resolve."""
        literal = parse_ip_literal(host)
        if literal is not None:
            return [literal]
        name = host.strip().rstrip(".").lower()
        if name in self.hosts:
            answers: Iterable[str] = self.hosts[name]
        elif self.resolver is not None:
            answers = self.resolver(name)
        else:
            import socket  # at the first look-up, not at import: the settings checks only parse policies

            infos = socket.getaddrinfo(name, port or 0, type=socket.SOCK_STREAM)
            answers = [str(info[4][0]) for info in infos]
        out: list[IPAddress] = []
        for answer in answers:
            ip = parse_ip_literal(answer)
            if ip is None:
                raise OSError(f"resolver gave {answer!r} for {host!r}, which is not an IP address")
            if ip not in out:
                out.append(ip)
        if not out:
            raise OSError(f"{host!r} has no addresses")
        return out

    def vet(self, host: str, port: int | None = None) -> list[IPAddress]:
        """The addresses of ``host`` a connection may use; ``BlockedURLError`` if any of them is refused.

        Connect to what this returns (never resolve the name again): that is what makes the check hold.
        A name that does not resolve raises ``OSError``.
        """
        name = host.strip().rstrip(".").lower()
        if not name:
            raise BlockedURLError(host, "no host")
        if name in METADATA_HOSTS and name not in self.hosts:
            raise BlockedURLError(host, "a cloud metadata host name")
        addrs = self.addresses(name, port)
        for ip in addrs:
            why = self.refusal(ip)
            if why is not None:
                via = "" if parse_ip_literal(name) is not None else f"resolves to {ip}: "
                raise BlockedURLError(host, f"{via}{why}; refused by the network policy")
        return addrs


_DEFAULT = NetworkPolicy()


def check_url(url: str, policy: NetworkPolicy | None = None) -> UrlVerdict:
    """Judge ``url`` for an outbound request: scheme http(s), and every address its host resolves to allowed.

    Returns a verdict (``decision`` "allow" with the vetted ``addresses``, or "refuse" with the ``reason``;
    a name that does not resolve is refused too). A URL that cannot be parsed raises ``ValueError``.
    """
    policy = policy or _DEFAULT
    if not isinstance(url, str) or not url.strip():
        raise ValueError("empty URL")
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as err:
        raise ValueError(f"malformed URL {url!r}: {err}") from None
    if scheme not in SCHEMES:
        return UrlVerdict(url, host, port, "refuse", f"scheme {scheme or '(none)'!r} is not http or https")
    if not host:
        raise ValueError(f"malformed URL {url!r}: no host")
    try:
        addrs = policy.vet(host, port)
    except BlockedURLError as err:
        return UrlVerdict(url, host, port, "refuse", str(err))
    except (OSError, UnicodeError) as err:
        return UrlVerdict(url, host, port, "refuse", f"{host}: cannot resolve ({err})")
    return UrlVerdict(url, host, port, "allow", "", tuple(addrs))
