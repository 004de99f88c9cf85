"""Passing execute_code's tool bridge (a descriptor) to a command where descriptors cannot go (an SSH host, a
Docker container).

``RELAY`` runs there in front of the command (``python -I -c RELAY PATH N ARGV...``): the command gets a datagram
socket at descriptor ``N``, as if it had been passed; each descriptor the command sends over it (one end of a
stream socket pair, as the bridge's protocol does) is joined to a new connection to the Unix socket ``PATH``,
which leads back to this host (a socket forwarded over SSH, or one in a folder bind-mounted into the container).
``serve`` is this host's end: each connection to its listening socket becomes a fresh socket pair whose other end
is sent over the bridge's channel, exactly as the command would have sent it, and the two are joined.
"""

from __future__ import annotations

import socket
import threading

__all__ = ["RELAY", "join", "serve"]

# The relay of a passed descriptor (execute_code's tool bridge): the command gets a datagram socket at the same
# number; each descriptor it sends over it is joined to a new connection to the forwarded socket.
RELAY = r"""
import os, socket, sys, threading
path, number, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
os.dup2(theirs.fileno(), number)
theirs.close()
pid = os.fork()
if pid == 0:
    ours.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"{argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
os.close(number)
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve():
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(ours, 16, 4)
        except OSError:
            return
        for fd in fds:
            local = socket.socket(fileno=fd)
            remote = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                remote.connect(path)
            except OSError:
                local.close()
                continue
            threading.Thread(target=pump, args=(local, remote), daemon=True).start()
            threading.Thread(target=pump, args=(remote, local), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        return


def join(conn: socket.socket, chan: socket.socket) -> None:
    """One connection of the relay: a new socket pair for the bridge (its end sent over ``chan``), joined to
    ``conn`` both ways on threads; both close when done."""
    ours, theirs = socket.socketpair()
    try:
        socket.send_fds(chan, [b"call"], [theirs.fileno()])
    except OSError:
        ours.close()
        conn.close()
        return
    finally:
        theirs.close()

    def both() -> None:
        up = threading.Thread(target=_pump, args=(conn, ours), daemon=True)
        up.start()
        _pump(ours, conn)
        up.join()
        ours.close()
        conn.close()

    threading.Thread(target=both, name="hermes-relay", daemon=True).start()


def serve(listener: socket.socket, chan: socket.socket) -> threading.Thread:
    """Accept the relay's connections on ``listener`` until it is closed."""

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            join(conn, chan)

    thread = threading.Thread(target=loop, name="hermes-relay-accept", daemon=True)
    thread.start()
    return thread
