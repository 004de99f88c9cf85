"""A real PostgreSQL server for the stores' tests: initdb + postgres in a temporary folder, on a Unix socket only.

PostgreSQL refuses to run as root, so as root (CI) the server runs as uid 65534 through ``setpriv``. The server
binaries come from Debian's ``postgresql`` package (``.ci/run`` installs it).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

NOBODY = 65534


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """``start()`` a private server; ``new_database()`` gives a fresh database's URL; ``stop()`` ends it all."""

    def __init__(self) -> None:
        self.bindir = server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        self.port = 5432
        self.proc: subprocess.Popen[bytes] | None = None

    def _as_owner(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]

    def start(self) -> PostgresServer:
        assert self.bindir is not None
        os.chmod(self.root, 0o755)
        data = self.root / "data"
        if os.geteuid() == 0:
            os.chown(self.root, NOBODY, NOBODY)
        env = {**os.environ, "HOME": str(self.root), "LC_ALL": "C"}
        subprocess.run(
            [
                *self._as_owner(),
                str(self.bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "hermes",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        log = open(self.root / "server.log", "wb")  # noqa: SIM115  (kept open for the server's life)
        self.proc = subprocess.Popen(
            [
                *self._as_owner(),
                str(self.bindir / "postgres"),
                "-D",
                str(data),
                "-k",
                str(self.root),
                "-c",
                "listen_addresses=",
                "-p",
                str(self.port),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
                "-c",
                "full_page_writes=off",
                "-c",
                "synchronous_commit=off",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        socket = self.root / f".s.PGSQL.{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if socket.exists() and self._ready():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError((self.root / "server.log").read_text())
            time.sleep(0.05)
        raise RuntimeError("PostgreSQL did not start: " + (self.root / "server.log").read_text())

    def _ready(self) -> bool:
        import psycopg

        try:
            psycopg.connect(f"host={self.root} port={self.port} user=hermes dbname=postgres").close()
        except psycopg.OperationalError:
            return False
        return True

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(
            f"host={self.root} port={self.port} user=hermes dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://hermes@/{name}?host={self.root}&port={self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown: open client connections are cut
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
