#!/usr/bin/env python3
"""Half round-trip time of an 8-byte TCP ping-pong between two nodes of the emulated cluster.

  link_latency.py serve PORT            (run inside one namespace; answers one client, exits)
  link_latency.py ping HOST PORT [N]    (run inside another; prints JSON: median, p10, p90 in us)

Blocking sockets with TCP_NODELAY: what a message-passing library's small message costs on
these links without busy polling (the kernels here have no netem, so this is the links' own
latency, reported next to the benchmark results)."""
import json
import socket
import statistics
import sys
import time


def serve(port):
    with socket.create_server(("0.0.0.0", port)) as server:
        server.settimeout(30)
        conn, _ = server.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                data = conn.recv(8)
                if not data:
                    return
                conn.sendall(data)


def ping(host, port, rounds):
    deadline = time.monotonic() + 10
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        half_rtts = []
        for _ in range(rounds):
            start = time.perf_counter()
            sock.sendall(b"12345678")
            received = 0
            while received < 8:
                chunk = sock.recv(8 - received)
                if not chunk:
                    raise ConnectionError("peer closed")
                received += len(chunk)
            half_rtts.append((time.perf_counter() - start) * 1e6 / 2)
    half_rtts = half_rtts[rounds // 10:]  # the first round trips warm up the path
    q = statistics.quantiles(half_rtts, n=10)
    print(json.dumps({"half_rtt_us_median": round(statistics.median(half_rtts), 1),
                      "half_rtt_us_p10": round(q[0], 1), "half_rtt_us_p90": round(q[-1], 1),
                      "rounds": len(half_rtts)}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "ping":
        ping(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 2000)
    else:
        sys.exit(__doc__)
