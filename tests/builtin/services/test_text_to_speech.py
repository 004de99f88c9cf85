"""``text_to_speech``: a real WAV file offline with espeak-ng (measured by its header and by sox), and the
OpenAI-compatible speech endpoint against a local server."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]
needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)"
)
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" + bytes(400)
KEY = "ttskey-9e8d7c6b5a4f3e2d"


def _saved(result: str) -> tuple[dict[str, Any], Path]:
    data = json.loads(result)
    (entry,) = data["files"]
    assert entry["path"] in data["message"]
    return data, Path(entry["path"])


@needs_espeak
def test_offline_speech_is_a_valid_wav_file(builtin_system: ToolSystem) -> None:
    assert builtin_system.availability_of("text_to_speech") == (True, "")
    text = "Hermes tools can speak without a network connection. This sentence takes a few seconds to say."
    outcome = builtin_system.call_outcome("text_to_speech", {"text": text})
    assert outcome.ok, outcome.result
    data, path = _saved(outcome.result)
    assert data["provider"] == "espeak" and path.suffix == ".wav"
    assert path.parent == builtin_system.data_dir / "media" / "audio"
    raw = path.read_bytes()
    assert raw[:4] == b"RIFF" and raw[8:12] == b"WAVE"
    assert struct.unpack_from("<I", raw, 4)[0] == len(raw) - 8  # the streamed placeholders were fixed
    data_at = raw.index(b"data")
    assert struct.unpack_from("<I", raw, data_at + 4)[0] == len(raw) - data_at - 8
    assert 2.0 < data["seconds"] < 15.0
    if shutil.which("soxi"):
        measured = float(
            subprocess.run(["soxi", "-D", str(path)], capture_output=True, text=True, check=True).stdout
        )
        assert abs(measured - data["seconds"]) < 0.05


@needs_espeak
def test_speed_and_voice_change_the_audio(builtin_system: ToolSystem) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    normal = json.loads(builtin_system.call("text_to_speech", {"text": text}))["seconds"]
    fast = json.loads(builtin_system.call("text_to_speech", {"text": text, "speed": 2.0}))["seconds"]
    assert fast < normal * 0.75
    german = builtin_system.call_outcome("text_to_speech", {"text": "Guten Tag", "voice": "de"})
    assert german.ok, german.result
    unknown = builtin_system.call_outcome("text_to_speech", {"text": "hi", "voice": "xx-nope"})
    assert unknown.status == "error" and "espeak-ng failed" in unknown.result and "--voices" in unknown.result
    sneaky = builtin_system.call_outcome("text_to_speech", {"text": "hi", "voice": "--stdout"})
    assert sneaky.status == "error" and "not an espeak-ng voice name" in sneaky.result


def test_speech_api(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(
        "/v1/audio/speech",
        method="POST",
        headers={"Authorization": f"Bearer {KEY}"},
        json={
            "model": "gpt-4o-mini-tts",
            "input": "Hello there",
            "voice": "nova",
            "response_format": "mp3",
            "speed": 1.25,
        },
    ).respond_with_data(MP3, content_type="audio/mpeg")
    system = configure(tts={"api_key": secret(KEY), "base_url": f"{base}/v1"})
    outcome = system.call_outcome("text_to_speech", {"text": "Hello there", "voice": "nova", "speed": 1.25})
    assert outcome.ok, outcome.result
    data, path = _saved(outcome.result)
    assert data["provider"] == "openai" and path.suffix == ".mp3" and path.read_bytes() == MP3
    assert data["files"][0]["mime_type"] == "audio/mpeg"


def test_speech_api_failures(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    system = configure(tts={"api_key": secret(KEY), "base_url": f"{base}/v1"})
    httpserver.expect_oneshot_request("/v1/audio/speech").respond_with_json({"id": "not audio"})
    malformed = system.call_outcome("text_to_speech", {"text": "x"})
    assert (
        malformed.status == "error"
        and "malformed reply (expected audio, got application/json)" in malformed.result
    )
    httpserver.expect_oneshot_request("/v1/audio/speech").respond_with_json(
        {"error": {"message": f"bad key {KEY}"}}, status=401
    )
    denied = system.call_outcome("text_to_speech", {"text": "x"})
    assert "rejected the credentials" in denied.result and KEY not in denied.result
    httpserver.expect_oneshot_request("/v1/audio/speech").respond_with_json(
        {"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "600"}
    )
    limited = system.call_outcome("text_to_speech", {"text": "x"})
    assert "retry after 600 s" in limited.result


def test_hidden_without_an_engine(
    configure: Configure, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ok, reason = configure().availability_of("text_to_speech")
    assert (
        not ok
        and "install espeak-ng" in reason
        and '[plugins.tts] api_key = {env = "OPENAI_API_KEY"}' in reason
    )
    no_key = configure(tts={"provider": "openai"})
    assert 'provider "openai" needs an api_key' in no_key.availability_of("text_to_speech")[1]


@needs_espeak
@pytest.mark.parametrize(
    ("fmt", "suffix", "mime", "magic"),
    [("mp3", ".mp3", "audio/mpeg", b"ID3"), ("opus", ".ogg", "audio/ogg", b"OggS")],
)
def test_offline_speech_is_converted_with_ffmpeg(
    builtin_system: ToolSystem, fmt: str, suffix: str, mime: str, magic: bytes
) -> None:
    assert shutil.which("ffmpeg"), "ffmpeg is installed by .ci/run"
    outcome = builtin_system.call_outcome("text_to_speech", {"text": "Converted offline.", "format": fmt})
    assert outcome.ok, outcome.result
    data, path = _saved(outcome.result)
    assert data["format"] == fmt and path.suffix == suffix and data["files"][0]["mime_type"] == mime
    raw = path.read_bytes()
    assert raw.startswith(magic) and b"RIFF" not in raw[:64]
    if fmt == "opus":
        assert b"OpusHead" in raw[:200]
    assert 0.5 < data["seconds"] < 10.0  # measured before the conversion
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == {"mp3": "mp3", "opus": "opus"}[fmt]


@needs_espeak
def test_configured_format_and_no_ffmpeg(
    configure: Configure, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    system = configure(tts={"format": "mp3"})
    data, path = _saved(system.call("text_to_speech", {"text": "The default format comes from config."}))
    assert data["format"] == "mp3" and path.suffix == ".mp3"
    only_espeak = tmp_path / "bin"
    only_espeak.mkdir()
    (only_espeak / "espeak-ng").symlink_to(shutil.which("espeak-ng") or "")
    monkeypatch.setenv("PATH", str(only_espeak))
    data, path = _saved(system.call("text_to_speech", {"text": "No converter here."}))
    assert data["format"] == "wav" and path.suffix == ".wav" and path.read_bytes()[:4] == b"RIFF"
    assert "converting to mp3 needs ffmpeg, which is not installed: apt install ffmpeg" in data["message"]
    bad = configure(tts={"format": "ogg"}).call_outcome("text_to_speech", {"text": "x"})
    assert bad.status == "error" and "format 'ogg' is not one of" in bad.result
