"""A served endpoint in its own process, for attacks that measure its memory and threads: prints
its base address, then serves until stdin closes; a line ``peak`` on stdin is answered with
``Server.outbound.peak``. Arguments: scheme, max_connections, and optionally a JSON object of
further ``Limits`` fields."""

from __future__ import annotations

import json
import sys

from rs_spark import net
from rs_spark import streams as rs


def main() -> None:
    scheme, max_connections = sys.argv[1], int(sys.argv[2])
    more = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    server = net.Server(
        f"{scheme}://127.0.0.1:0",
        token="victim-token",
        limits=net.Limits(**{"max_connections": max_connections, "setup_timeout": 30.0, **more}),
    )
    server.add_publisher("numbers", rs.range_(10))
    print(server.base_address, flush=True)
    for line in sys.stdin:
        if line.strip() == "peak":
            print(server.outbound.peak, flush=True)
    server.stop()


if __name__ == "__main__":
    main()
