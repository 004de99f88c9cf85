"""``text_to_speech``: speak text into an audio file, with espeak-ng offline or an OpenAI-compatible speech API.

With no configuration the local engine is used when ``espeak-ng`` is installed: it speaks WAV, which ffmpeg
converts to the format asked for (MP3, Opus, AAC, FLAC); without ffmpeg the file stays WAV and the result says
why. Setting an API key switches to the speech endpoint (``POST {base_url}/audio/speech``).

Configuration (``[plugins.tts]``)::

    provider = "openai"                      # or "espeak"; default: openai when api_key is set, else espeak
    api_key = { env = "OPENAI_API_KEY" }
    base_url = "https://api.openai.com/v1"
    model = "gpt-4o-mini-tts"
    voice = "alloy"                          # espeak: a voice name such as "en-us" or "de"
    format = "mp3"                           # mp3, wav, opus, aac or flac (default: mp3 for the API, wav offline)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable
from hermes_core.fileio import which

from ._media import describe, save_media, sniff
from ._remote import Service
from ._settings import as_float, as_text, require, section

if TYPE_CHECKING:
    from hermes_core import ToolSystem

TOOLSET = "media"
SECTION = "tts"
MAX_CHARS = 4096  # the OpenAI speech endpoint's input limit; espeak gets the same bound
FORMATS = ("mp3", "wav", "opus", "aac", "flac")
_MIME = {
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
}
_EXT = {"opus": "ogg"}
_VOICE = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]{0,63}$")
ENABLE = (
    "install espeak-ng for offline speech (apt-get install espeak-ng), or set [plugins.tts] "
    'api_key = {env = "OPENAI_API_KEY"} in the hermes config to use an OpenAI-compatible speech endpoint'
)

SCHEMA: dict[str, Any] = {
    "name": "text_to_speech",
    "description": (
        "Speak text into an audio file (for voice replies or audio attachments). Returns JSON: 'message' (names "
        "the saved path), 'files' (path, mime_type, bytes) for the host to attach, and 'seconds' when known."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_CHARS, "description": "What to say."},
            "voice": {
                "type": "string",
                "description": "Voice name (provider-specific; default from config).",
            },
            "speed": {"type": "number", "minimum": 0.25, "maximum": 4.0, "description": "1.0 is normal."},
            "format": {
                "type": "string",
                "enum": list(FORMATS),
                "description": "Audio format (default from config).",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}


def _espeak_binary() -> str | None:
    return which("espeak-ng") or which("espeak")


def _provider(cfg: dict[str, Any]) -> str:
    chosen = as_text(cfg, "provider")
    if chosen:
        return chosen
    return "openai" if as_text(cfg, "api_key") else "espeak"


def check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    cfg = section(system, SECTION)
    provider = _provider(cfg)
    if provider == "espeak":
        if _espeak_binary():
            return True, ""
        return Unavailable(f"no speech engine: {ENABLE}", by_design=True)  # opt-in: not a problem
    if provider == "openai":
        ok = as_text(cfg, "api_key") is not None
        return (True, "") if ok else (False, f'[plugins.tts] provider "openai" needs an api_key: {ENABLE}')
    return False, f'[plugins.tts] provider {provider!r} is not supported; use "espeak" or "openai"'


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "little")


def fix_wav_header(data: bytes) -> bytes:
    """Set the RIFF and data chunk sizes of a streamed WAV (espeak-ng writes placeholders to a pipe)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ToolError("espeak-ng did not produce a WAV stream")
    out = bytearray(data)
    out[4:8] = _u32(len(out) - 8)
    pos = 12
    while pos + 8 <= len(out):
        chunk, size = out[pos : pos + 4], int.from_bytes(out[pos + 4 : pos + 8], "little")
        if chunk == b"data":
            out[pos + 4 : pos + 8] = _u32(len(out) - pos - 8)
            return bytes(out)
        pos += 8 + size + (size & 1)
    raise ToolError("espeak-ng produced a WAV stream without audio data")


def wav_seconds(data: bytes) -> float | None:
    """The duration of a PCM WAV file, from its fmt and data chunks."""
    pos, rate, size = 12, 0, None
    while pos + 8 <= len(data):
        chunk, length = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        if chunk == b"fmt " and length >= 16 and pos + 20 <= len(data):
            rate = int.from_bytes(data[pos + 16 : pos + 20], "little")  # bytes per second
        elif chunk == b"data":
            size = length
            break
        pos += 8 + length + (length & 1)
    return round(size / rate, 2) if rate and size is not None else None


# ffmpeg's encoder and container for each format the offline engine converts to
_FFMPEG_ARGS = {
    "mp3": ["-c:a", "libmp3lame", "-q:a", "4", "-f", "mp3"],
    "opus": ["-c:a", "libopus", "-b:a", "48k", "-f", "ogg"],
    "aac": ["-c:a", "aac", "-b:a", "96k", "-f", "adts"],
    "flac": ["-c:a", "flac", "-f", "flac"],
}


def _convert(wav: bytes, fmt: str) -> tuple[bytes, str, str]:
    """``(audio, format, note)``: ``wav`` converted to ``fmt`` with ffmpeg, or left as WAV with the reason."""
    if fmt == "wav":
        return wav, "wav", ""
    ffmpeg = which("ffmpeg")
    if ffmpeg is None:
        return (
            wav,
            "wav",
            f" (as wav: converting to {fmt} needs ffmpeg, which is not installed: apt install ffmpeg)",
        )
    import subprocess

    argv = [
        ffmpeg,
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "wav",
        "-i",
        "pipe:0",
        *_FFMPEG_ARGS[fmt],
        "pipe:1",
    ]
    try:
        done = subprocess.run(argv, input=wav, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return wav, "wav", f" (as wav: ffmpeg could not convert it to {fmt}: {err})"
    if done.returncode != 0 or not done.stdout:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1] if said else f"exit status {done.returncode}"
        return wav, "wav", f" (as wav: ffmpeg could not convert it to {fmt}: {reason})"
    return done.stdout, fmt, ""


def _espeak(text: str, voice: str, speed: float) -> bytes:
    binary = _espeak_binary()
    if binary is None:
        raise ToolError(f"espeak-ng is not installed: {ENABLE}", retryable=False)
    import subprocess

    wpm = min(max(round(175 * speed), 80), 450)
    try:
        proc = subprocess.run(
            [binary, "-v", voice, "-s", str(wpm), "-b", "1", "--stdout", "--stdin"],
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError("espeak-ng took over 120 s; try a shorter text") from None
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1] if said else f"exit status {proc.returncode}"
        raise ToolError(f"espeak-ng failed: {reason} (voice {voice!r}; `espeak-ng --voices` lists them)")
    return fix_wav_header(proc.stdout)


def _openai_detail(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    return str(error) if error else None


def _speech_api(
    context: CallContext, cfg: dict[str, Any], text: str, voice: str | None, speed: float, fmt: str
) -> bytes:
    key = require(cfg, "api_key", ENABLE)
    api = Service(
        "the speech API",
        as_text(cfg, "base_url", "https://api.openai.com/v1") or "https://api.openai.com/v1",
        headers={"Authorization": f"Bearer {key}"},
        secrets=[key],
        auth_hint="Check [plugins.tts] api_key.",
        timeout=as_float(cfg, "timeout", 120.0, 5.0, 600.0),
        detail=_openai_detail,
    )
    body = {
        "model": as_text(cfg, "model", "gpt-4o-mini-tts"),
        "input": text,
        "voice": voice or as_text(cfg, "voice", "alloy"),
        "response_format": fmt,
        "speed": speed,
    }
    response = api.send(context, "POST", "audio/speech", what="synthesising speech", json=body)
    if response.status_code >= 400:
        api.fail(response, "synthesising speech")
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind in ("application/json", "text/html", "text/plain") or not response.content:
        raise ToolError(f"{api.name} sent a malformed reply (expected audio, got {kind or 'an empty body'})")
    return response.content


def text_to_speech(
    text: str,
    voice: str | None = None,
    speed: float = 1.0,
    format: str | None = None,
    *,
    context: CallContext,
) -> str:
    """Synthesise ``text`` and save it under ``<data dir>/media/audio``."""
    cfg = section(context, SECTION)
    provider = _provider(cfg)
    if not text.strip():
        raise ToolError("'text' is empty; give the words to speak")
    note = ""
    seconds: float | None = None
    if provider == "espeak":
        chosen = voice or as_text(cfg, "voice", "en-us") or "en-us"
        if not _VOICE.match(chosen):
            raise ToolError(f"{chosen!r} is not an espeak-ng voice name (e.g. en-us, en-gb, de, fr)")
        wanted = format or as_text(cfg, "format", "wav") or "wav"
        if wanted not in FORMATS:
            raise ToolError(
                f"[plugins.tts] format {wanted!r} is not one of {', '.join(FORMATS)}", retryable=False
            )
        wav = _espeak(text, chosen, speed)
        seconds = wav_seconds(wav)
        data, fmt, note = _convert(wav, wanted)
    elif provider == "openai":
        fmt = format or as_text(cfg, "format", "mp3") or "mp3"
        if fmt not in FORMATS:
            raise ToolError(
                f"[plugins.tts] format {fmt!r} is not one of {', '.join(FORMATS)}", retryable=False
            )
        data = _speech_api(context, cfg, text, voice, speed, fmt)
    else:
        raise ToolError(f"[plugins.tts] provider {provider!r} is not supported", retryable=False)
    sniffed = sniff(data)
    mime = sniffed[0] if sniffed else _MIME[fmt]
    path = save_media(context, "audio", data, _EXT.get(fmt, fmt), "speech")
    extra: dict[str, Any] = {"provider": provider, "format": fmt}
    if seconds is None and fmt == "wav":
        seconds = wav_seconds(data)
    if seconds is not None:
        extra["seconds"] = seconds
    return describe(f"Saved speech to {path}{note}", [(path, mime)], **extra)


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="text_to_speech",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=text_to_speech,
        check_fn=check,
        emoji="🔊",
        timeout=300.0,
    )
