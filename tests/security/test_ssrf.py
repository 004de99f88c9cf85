"""The SSRF guard: ``check_url``/``NetworkPolicy`` judge addresses after resolution; ``hermes_core.safehttp``
clients connect only to what was vetted, on every redirect hop, with no second lookup to rebind."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from pytest_httpserver import HTTPServer

from hermes_core.safehttp import BlockedRequestError, guarded_async_client, guarded_client
from hermes_core.security import NetworkPolicy, check_url, parse_ip_literal


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://2130706433/", "127.0.0.1 is a loopback address"),  # decimal
        ("http://0x7f000001/", "127.0.0.1 is a loopback address"),  # hex
        ("http://0177.0.0.1/", "127.0.0.1 is a loopback address"),  # octal
        ("http://0x7f.1/", "127.0.0.1 is a loopback address"),  # mixed, short form
        ("http://127.1:8080/", "127.0.0.1 is a loopback address"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1 (inside ::ffff:7f00:1) is a loopback address"),
        ("http://[::ffff:a9fe:a9fe]/", "169.254.169.254 (inside ::ffff:a9fe:a9fe) is a cloud metadata"),
        ("http://[64:ff9b::7f00:1]/", "127.0.0.1 (inside 64:ff9b::7f00:1) is a loopback"),
        ("http://[2002:7f00:1::]/", "127.0.0.1 (inside 2002:7f00:1::) is a loopback"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
        ("http://[fd00:ec2::254]/", "is a cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1/", "a cloud metadata host name"),
        ("http://169.254.1.1/", "is a link-local address"),
        ("http://[fe80::1]/", "is a link-local address"),
        ("http://10.1.2.3/", "is a private network address"),
        ("http://192.168.0.1/", "is a private network address"),
        ("http://[fc00::1]/", "is a private network address"),
        ("http://100.64.0.1/", "is not a public address"),
        ("http://0.0.0.0/", "the unspecified address"),
        ("http://0/", "the unspecified address"),
        ("http://localhost/", "resolves to 127.0.0.1: 127.0.0.1 is a loopback address"),
        ("file:///etc/passwd", "scheme 'file' is not http or https"),
        ("gopher://127.0.0.1/", "scheme 'gopher'"),
    ],
)
def test_non_public_addresses_are_refused_in_every_spelling(url: str, needle: str) -> None:
    verdict = check_url(url)
    assert verdict.decision == "refuse" and not verdict.allowed
    assert needle in verdict.reason


def test_public_addresses_pass_and_carry_their_addresses() -> None:
    verdict = check_url("https://93.184.215.14:8443/x")
    assert verdict.allowed and verdict.port == 8443
    assert [str(a) for a in verdict.addresses] == ["93.184.215.14"]
    assert check_url("http://[2606:4700::1111]/").allowed
    assert check_url("http://[::ffff:8.8.8.8]/").allowed  # an IPv4-mapped public address is public


def test_names_are_judged_by_what_they_resolve_to() -> None:
    policy = NetworkPolicy(resolver=lambda host: {"meta.test": ["169.254.169.254"]}.get(host, ["1.1.1.1"]))
    assert "resolves to 169.254.169.254" in check_url("http://meta.test/", policy).reason
    assert check_url("http://fine.test/", policy).allowed
    mixed = NetworkPolicy(resolver=lambda host: ["1.1.1.1", "10.0.0.7"])
    assert "resolves to 10.0.0.7" in check_url("http://mixed.test/", mixed).reason  # one bad answer is enough
    unresolvable = check_url("http://no-such-host.invalid/")
    assert unresolvable.decision == "refuse" and "cannot resolve" in unresolvable.reason


def test_config_allows_networks_but_metadata_only_by_exact_address() -> None:
    policy = NetworkPolicy.from_config({"allow_networks": ["127.0.0.0/8", "::1", "169.254.0.0/16"]})
    assert check_url("http://127.0.0.1:9/", policy).allowed
    assert check_url("http://2130706433/", policy).allowed
    assert check_url("http://[::1]/", policy).allowed
    assert check_url("http://[::ffff:127.0.0.1]/", policy).allowed
    assert check_url("http://169.254.10.10/", policy).allowed
    assert not check_url(
        "http://169.254.169.254/", policy
    ).allowed  # a /16 does not open the metadata service
    assert not check_url("http://10.0.0.1/", policy).allowed
    exact = NetworkPolicy.from_config({"allow_networks": ["169.254.169.254/32"]})
    assert check_url("http://169.254.169.254/", exact).allowed


@pytest.mark.parametrize(
    "section",
    [
        {"allow_networks": "127.0.0.1"},
        {"allow_networks": ["not-a-network"]},
        {"resolve": {"a.test": "not-an-ip"}},
        {"resolve": ["a.test"]},
    ],
)
def test_malformed_policy_config_is_an_error(section: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        NetworkPolicy.from_config(section)


def test_malformed_urls_raise_and_literals_parse() -> None:
    for bad in ("", "http://", "http://host:notaport/"):
        with pytest.raises(ValueError):
            check_url(bad)
    assert str(parse_ip_literal("0x7F.0.0.1")) == "127.0.0.1"
    assert str(parse_ip_literal("[::1]")) == "::1"
    assert parse_ip_literal("example.com") is None
    assert parse_ip_literal("1.2.3.4.5") is None
    assert parse_ip_literal("256.1.1.1") is None


# -- the enforcing client ----------------------------------------------------------------------------------


@pytest.fixture
def second_loopback() -> Iterator[HTTPServer]:
    """A server on 127.0.0.2: "allowed" in these tests, while 127.0.0.1 stays refused."""
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


ONLY_127_0_0_2 = NetworkPolicy.from_config({"allow_networks": ["127.0.0.2/32"]})


def test_guarded_client_refuses_by_default_and_reaches_allowed_addresses(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/ok").respond_with_data("hello")
    with guarded_client() as client, pytest.raises(BlockedRequestError, match="loopback"):
        client.get(httpserver.url_for("/ok"))
    allow = NetworkPolicy.from_config({"allow_networks": ["127.0.0.1/32"]})
    with guarded_client(allow) as client:
        assert client.get(httpserver.url_for("/ok")).text == "hello"


def test_a_redirect_to_loopback_is_refused_at_the_hop(
    httpserver: HTTPServer, second_loopback: HTTPServer
) -> None:
    httpserver.expect_request("/secret").respond_with_data("internal data")
    second_loopback.expect_request("/go").respond_with_data(
        "", status=302, headers={"Location": httpserver.url_for("/secret")}
    )
    with (
        guarded_client(ONLY_127_0_0_2, follow_redirects=True) as client,
        pytest.raises(BlockedRequestError) as caught,
    ):
        client.get(second_loopback.url_for("/go"))
    assert "127.0.0.1 is a loopback address" in caught.value.reason
    assert not httpserver.log  # the internal server was never reached


def test_hostname_is_kept_for_the_host_header_while_the_vetted_address_is_dialled(
    second_loopback: HTTPServer,
) -> None:
    second_loopback.expect_request("/").respond_with_data("reached")
    calls: list[str] = []

    def resolver(host: str) -> list[str]:  # answers 127.0.0.2 once, then a forbidden address (rebinding)
        calls.append(host)
        return ["127.0.0.2"] if len(calls) == 1 else ["127.0.0.1"]

    policy = NetworkPolicy(allow=ONLY_127_0_0_2.allow, resolver=resolver)
    url = f"http://rebind.test:{second_loopback.port}/"
    with guarded_client(policy) as client:
        response = client.get(url)
        assert response.text == "reached"
        assert calls == ["rebind.test"]  # one lookup for the connection: nothing to rebind in between
        request, _ = second_loopback.log[0]
        assert request.headers["Host"] == f"rebind.test:{second_loopback.port}"
        with pytest.raises(BlockedRequestError, match=r"resolves to 127\.0\.0\.1"):
            client.get(url)  # the next connection asks again and the rebound answer is refused


def test_pinned_hosts_and_metadata_names_through_the_client(second_loopback: HTTPServer) -> None:
    second_loopback.expect_request("/").respond_with_data("pinned")
    policy = NetworkPolicy.from_config(
        {
            "allow_networks": ["127.0.0.2/32"],
            "resolve": {"intranet.test": "127.0.0.2", "meta.test": "169.254.169.254"},
        }
    )
    with guarded_client(policy) as client:
        assert client.get(f"http://intranet.test:{second_loopback.port}/").text == "pinned"
        with pytest.raises(BlockedRequestError, match="cloud metadata"):
            client.get("http://meta.test/latest/")
        with pytest.raises(BlockedRequestError, match="loopback"):
            client.get(f"http://[::ffff:127.0.0.1]:{second_loopback.port}/")


def test_async_client_enforces_the_same_policy(httpserver: HTTPServer, second_loopback: HTTPServer) -> None:
    second_loopback.expect_request("/a").respond_with_data("async ok")
    second_loopback.expect_request("/jump").respond_with_data(
        "", status=307, headers={"Location": httpserver.url_for("/")}
    )

    async def run() -> None:
        async with guarded_async_client(ONLY_127_0_0_2, follow_redirects=True) as client:
            assert (await client.get(second_loopback.url_for("/a"))).text == "async ok"
            with pytest.raises(BlockedRequestError, match="loopback"):
                await client.get(second_loopback.url_for("/jump"))

    asyncio.run(run())


def test_bypassing_options_are_refused() -> None:
    for option in ("transport", "mounts", "proxy", "trust_env"):
        with pytest.raises(TypeError, match=option):
            guarded_client(**{option: None})
    assert issubclass(BlockedRequestError, httpx.ConnectError)
