"""Start the page: bind the socket (loopback unless asked otherwise), print the address, run uvicorn."""

from __future__ import annotations

import ipaddress
import socket
import sys

from distcalc.errors import ConfigError

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or ``localhost``."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on exactly ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def serve(host: str, port: int) -> None:
    """Serve until interrupted. Binding to a non-loopback address prints a warning: the page and API are then
    reachable from other machines (no authentication)."""
    import uvicorn

    from distcalc.web.app import create_app

    if not is_loopback(host):
        print(f"warning: binding to {host}, not loopback: anyone who can reach this machine can use the "
              "calculator (there is no authentication)", file=sys.stderr, flush=True)
    try:
        sock = bind(host, port)
    except OSError as error:
        raise ConfigError(f"--host {host!r} --port {port}: cannot listen there: {error.strerror}") from None
    shown = sock.getsockname()
    url_host = f"[{shown[0]}]" if ":" in shown[0] else shown[0]
    print(f"distcalc serve: http://{url_host}:{shown[1]}/  (API docs: /docs; Ctrl-C stops)", flush=True)
    config = uvicorn.Config(create_app(), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
