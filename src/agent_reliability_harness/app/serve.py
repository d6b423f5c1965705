"""``arh serve RUNS_DIR``: the local read-only dashboard (docs/dashboard.md)."""

from __future__ import annotations

import argparse
import sys

from agent_reliability_harness.app import Status, error, say
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.serve.server import DashboardServer, is_loopback

__all__ = ["serve"]


def serve(args: argparse.Namespace) -> Status:
    """Scan RUNS_DIR, then answer requests until interrupted (Ctrl-C: exit status 0)."""
    if not is_loopback(args.host):
        say(
            f"warning: arh serve is bound to {args.host}, not a loopback address: anyone who "
            "can reach this machine on that address can read every run and trace in the "
            "directory (there is no authentication; docs/dashboard.md)\n",
            sys.stderr,
        )
    try:
        server = DashboardServer(
            (args.host, args.port), args.runs_dir, log=None if args.quiet else sys.stderr
        )
    except InputError as exc:
        error(str(exc))
        return Status.INPUT
    except OSError as exc:
        error(f"cannot listen on {args.host} port {args.port}: {exc.strerror or exc}")
        return Status.USAGE
    host, port = str(server.server_address[0]), server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    runs = len(server.index.runs)
    say(
        f"arh serve: {runs:,} runs and reports; http://{shown}:{port}/ (Ctrl-C stops)\n", sys.stderr
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return Status.OK
