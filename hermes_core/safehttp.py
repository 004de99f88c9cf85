"""httpx clients that only reach what a ``NetworkPolicy`` allows (the enforcing half of the SSRF guard).

Every new connection resolves its host once, vets every address with the policy, and connects to a vetted
address itself; the URL keeps its host name, so the ``Host`` header, TLS SNI and certificate checks are
unchanged. There is no second DNS lookup to rebind between the check and the connection, every redirect hop
is a new connection that is vetted again, and environment proxies are ignored (a proxy would resolve names
itself). A refused connection raises ``BlockedRequestError`` (an ``httpx.ConnectError``)::

    from hermes_core.safehttp import guarded_client
    from hermes_core.security import NetworkPolicy

    with guarded_client(NetworkPolicy(), timeout=20, follow_redirects=True) as client:
        client.get(url)

Importing this module imports httpx; import it where a request is made, not at plugin import time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from .security import BlockedURLError, NetworkPolicy

__all__ = [
    "AsyncGuardedBackend",
    "AsyncGuardedTransport",
    "BlockedRequestError",
    "GuardedBackend",
    "GuardedTransport",
    "guarded_async_client",
    "guarded_client",
]


class BlockedRequestError(httpx.ConnectError):
    """The network policy refused the connection; ``reason`` says which address and why."""

    def __init__(self, blocked: BlockedURLError) -> None:
        super().__init__(str(blocked))
        self.reason = str(blocked)
        self.host = blocked.host


def _resolve_error(host: str, err: OSError) -> httpcore.ConnectError:
    return httpcore.ConnectError(f"cannot resolve {host!r}: {err}")


class GuardedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects only to addresses the policy vetted."""

    def __init__(self, policy: NetworkPolicy, inner: httpcore.NetworkBackend | None = None) -> None:
        self.policy = policy
        self.inner = inner if inner is not None else httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = self.policy.vet(host, port)
        except OSError as err:
            raise _resolve_error(host, err) from None
        last: Exception | None = None
        for ip in addresses:
            try:
                return self.inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as err:
                last = err
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable through a guarded client")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """The async form of ``GuardedBackend`` (name resolution runs on a worker thread)."""

    def __init__(self, policy: NetworkPolicy, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self.inner = inner if inner is not None else httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        import anyio.to_thread

        try:
            addresses = await anyio.to_thread.run_sync(self.policy.vet, host, port)
        except OSError as err:
            raise _resolve_error(host, err) from None
        last: Exception | None = None
        for ip in addresses:
            try:
                return await self.inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as err:
                last = err
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable through a guarded client")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def _pool_options(limits: httpx.Limits, http2: bool) -> dict[str, Any]:
    return {
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
        "http1": True,
        "http2": http2,
    }


class GuardedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` whose connections go through a ``GuardedBackend``."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        verify: Any = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(),
    ) -> None:
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False, http2=http2, limits=limits)
        # httpx builds its pool in __init__ without a backend option: replace it with a guarded one.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, network_backend=GuardedBackend(policy), **_pool_options(limits, http2)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except BlockedURLError as err:
            raise BlockedRequestError(err) from None


class AsyncGuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose connections go through an ``AsyncGuardedBackend``."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        verify: Any = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(),
    ) -> None:
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False, http2=http2, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            network_backend=AsyncGuardedBackend(policy),
            **_pool_options(limits, http2),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except BlockedURLError as err:
            raise BlockedRequestError(err) from None


_FORBIDDEN = ("transport", "mounts", "proxy", "trust_env")


def _check_kwargs(kwargs: dict[str, Any]) -> None:
    bad = [k for k in _FORBIDDEN if k in kwargs]
    if bad:
        raise TypeError(f"a guarded client makes its own transport; do not pass {', '.join(bad)}")


def guarded_client(policy: NetworkPolicy | None = None, *, verify: Any = True, **kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` that reaches only what ``policy`` allows (default: public addresses only).

    ``kwargs`` go to ``httpx.Client`` (``timeout``, ``follow_redirects``, ``max_redirects``, ``headers``...);
    ``transport``, ``mounts``, ``proxy`` and ``trust_env`` are refused, since they would bypass the guard.
    """
    _check_kwargs(kwargs)
    transport = GuardedTransport(policy or NetworkPolicy(), verify=verify)
    return httpx.Client(transport=transport, trust_env=False, **kwargs)


def guarded_async_client(
    policy: NetworkPolicy | None = None, *, verify: Any = True, **kwargs: Any
) -> httpx.AsyncClient:
    """The ``httpx.AsyncClient`` form of ``guarded_client``."""
    _check_kwargs(kwargs)
    transport = AsyncGuardedTransport(policy or NetworkPolicy(), verify=verify)
    return httpx.AsyncClient(transport=transport, trust_env=False, **kwargs)
