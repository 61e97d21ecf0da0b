"""A served endpoint in its own process, for attacks that measure its memory and threads: prints
its base address, then serves until stdin closes."""

from __future__ import annotations

import sys

from rs_spark import net
from rs_spark import streams as rs


def main() -> None:
    scheme, max_connections = sys.argv[1], int(sys.argv[2])
    server = net.Server(
        f"{scheme}://127.0.0.1:0",
        token="victim-token",
        limits=net.Limits(max_connections=max_connections, setup_timeout=30.0),
    )
    server.add_publisher("numbers", rs.range_(10))
    print(server.base_address, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
