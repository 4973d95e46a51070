#!/usr/bin/env python3
"""rmqbench node health endpoint for the Azure load balancer probe.

GET /healthz answers 200 only when this node (1) has formed or joined the cluster (the setup script's
flag), (2) answers an AMQP 0-9-1 protocol header with connection.start, and (3) serves the management
listener. Anything else is 503, so the load balancer sends no client to a node that is not ready.

GET /state answers 200 with one word for the peers' join logic (rmqbench-node-setup.sh form_or_join): "formed",
"failed" (the boot script ended in error: this node will never seed the cluster), "joining" (it is joining through a
formed peer: no other node starts a join meanwhile) or "booting".
"""
import http.server
import os
import socket
import time
import urllib.request

AMQP_PORT = int(os.environ.get("AMQP_PORT", "5672"))
MANAGEMENT_PORT = int(os.environ.get("MANAGEMENT_PORT", "15672"))
HEALTH_PORT = int(os.environ.get("HEALTH_PORT", "8081"))
FORMED_FLAG = "/var/lib/rmqbench/formed"
FAILED_FLAG = "/var/lib/rmqbench/failed"
JOINING_FLAG = "/var/lib/rmqbench/joining"
CACHE_SECONDS = 5.0
_cache = {"at": 0.0, "healthy": False, "reason": "not checked yet"}


def serves_amqp():
    with socket.create_connection(("127.0.0.1", AMQP_PORT), timeout=2) as connection:
        connection.sendall(b"AMQP\x00\x00\x09\x01")
        frame = connection.recv(11)
    # A method frame (type 1) on channel 0 whose class/method is connection.start (10, 10).
    return len(frame) >= 11 and frame[0] == 1 and frame[1:3] == b"\x00\x00" and frame[7:11] == b"\x00\x0a\x00\x0a"


def serves_management():
    with urllib.request.urlopen(f"http://127.0.0.1:{MANAGEMENT_PORT}/", timeout=2) as response:
        return response.status == 200


def check():
    if not os.path.exists(FORMED_FLAG):
        return False, "node has not formed or joined the cluster yet"
    try:
        if not serves_amqp():
            return False, "AMQP listener did not answer connection.start"
        if not serves_management():
            return False, "management listener did not answer 200"
    except OSError as error:
        return False, f"listener check failed: {error}"
    return True, "ok"


def cached_check():
    now = time.monotonic()
    if now - _cache["at"] > CACHE_SECONDS:
        _cache["healthy"], _cache["reason"] = check()
        _cache["at"] = now
    return _cache["healthy"], _cache["reason"]


def boot_state():
    if os.path.exists(FORMED_FLAG):
        return "formed"
    if os.path.exists(FAILED_FLAG):
        return "failed"
    if os.path.exists(JOINING_FLAG):
        return "joining"
    return "booting"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server naming)
        if self.path == "/state":
            status, text = 200, boot_state()
        elif self.path == "/healthz":
            healthy, text = cached_check()
            status = 200 if healthy else 503
        else:
            self.send_error(404)
            return
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # the probe calls every few seconds; keep the journal quiet
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("0.0.0.0", HEALTH_PORT), Handler).serve_forever()
