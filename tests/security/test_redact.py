"""The redactor: known secret shapes go, look-alikes stay, env values are noticed, big input stays linear."""

from __future__ import annotations

import time

import pytest

from hermes_core.security import redact

SECRETS = [
    ("OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789", "sk-proj-AbCdEf"),
    ("key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "sk-ant-api03"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv here", "AIzaSyA123"),
    ("token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "ghp_0123"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11"),
    ("glpat-abcdefghij0123456789", "glpat-abc"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-123"),
    ("stripe sk_live_abcdefghijklmnop1234", "sk_live_abc"),
    ("hf_abcdefghijklmnopqrstuvwxyz012345 model", "hf_abcdef"),
    ("aws AKIAIOSFODNN7EXAMPLE id", "AKIAIOSFODNN7"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtn"),
    ("AccountKey=abcdEFGH1234ijklMNOP5678qrstUVWX9012yzABCD==;", "abcdEFGH1234"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNry",
    ),
    ("Authorization: Bearer abcdef123456789xyz", "abcdef123456789"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpw"),
    ("postgres://admin:hunter2pass@db:5432/app", "hunter2pass"),
    ("mysql -u root -pS3cretPw app", "S3cretPw"),
    ("sshpass -p 'pw123456' ssh host", "pw123456"),
    ("deploy --password=abc12345 --verbose", "abc12345"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"),
    ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX", "XXXXXXXXXXXX"),
    ("https://discord.com/api/webhooks/123/abcDEF-ghi", "abcDEF-ghi"),
    ("https://x.blob.core.windows.net/c?sv=2020&sig=abcdEFGH1234%3D", "abcdEFGH1234"),
    ('{"password": "my pass phrase"}', "my pass phrase"),
    ("db_password: s3cr3tvalue", "s3cr3tvalue"),
    ("client_secret='abc123def456'", "abc123def456"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secrets_removed(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert "[REDACTED]" in out


LOOKALIKES = [
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "/usr/local/lib/python3.11/site-packages/requests/sessions.py",
    "arn:aws:iam::123456789012:role/Admin",
    "max_tokens=4096",
    '{"max_tokens": 1024, "num_tokens": 10}',
    "https://example.com/search?q=hello&page=2",
    "primary_key=id",
    "The quick brown fox jumps over the lazy dog.",
    "password=${DB_PASSWORD}",
    "PWD=/home/me/project",
    "3",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_kept(text: str) -> None:
    assert redact(text) == text


def test_env_values_noticed_when_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_SERVICE_TOKEN", "zq8Rk2LmPp0vXyT7")
    assert redact("leaked zq8Rk2LmPp0vXyT7 here") == "leaked [REDACTED] here"
    monkeypatch.setenv("HERMES_TEST_SERVICE_TOKEN", "Mm3nB4vC5xZ6lK7j")
    assert redact("now Mm3nB4vC5xZ6lK7j") == "now [REDACTED]"
    monkeypatch.delenv("HERMES_TEST_SERVICE_TOKEN")
    assert redact("now Mm3nB4vC5xZ6lK7j") == "now Mm3nB4vC5xZ6lK7j"


def test_non_secret_env_names_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_GREETING", "hellohellohello")
    assert redact("hellohellohello") == "hellohellohello"


def test_one_megabyte_is_linear() -> None:
    chunk = "lorem ipsum key=value password: x Bearer aaaaaaaa https://u:p@h sk-x " * 16
    small, big = chunk * 100, chunk * 1000
    t0 = time.perf_counter()
    redact(small)
    t1 = time.perf_counter()
    redact(big)
    t2 = time.perf_counter()
    assert len(big) > 1_000_000
    assert (t2 - t1) < max(40 * (t1 - t0), 0.5), (t1 - t0, t2 - t1)


def test_pathological_inputs_are_fast() -> None:
    for text in (
        "a" * 1_000_000,
        "=" * 1_000_000,
        "-p" * 500_000,
        "://" * 300_000 + "@",
        "-----BEGIN PRIVATE KEY-----" * 30000,
    ):
        t0 = time.perf_counter()
        redact(text)
        assert time.perf_counter() - t0 < 5.0
