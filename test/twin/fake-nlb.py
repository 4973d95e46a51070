#!/usr/bin/env python3
"""A Network Load Balancer for the twin, run in a hub's network namespace: one TCP listener per AWS::ElasticLoadBalancingV2::
Listener of the stack, on the load balancer's address, forwarding each connection to the next target of the listener's
target group that accepts it (round robin; a target that refuses is skipped, as an unhealthy target is: Elastic Load
Balancing User Guide for Network Load Balancers, "Health checks for your target groups"). Connections to the
targets leave from the load balancer's address, a member of the load balancer's security groups (the twin's packet
filters then apply the nodes' rules that name those groups).

Usage: fake-nlb.py CONFIG LOG, CONFIG = {"address": "10.91.X.4", "listeners": [{"port": 5672, "targets":
["10.91.X.11", ...], "targetPort": 5672}]}. Prints "ready" once every listener is bound; logs one line per connection.

An Azure load balancer (test/twin/azure/resource-group.ts) adds, per listener:
- "probe": {"port": 8081, "path": "/healthz", "intervalSeconds": 5, "threshold": 2}: an HTTP probe sent every interval
  in the background; a target takes new connections only while its last `threshold` probes answered 200, and leaves
  after `threshold` failures; connections already forwarded go on when a target goes down (Standard SKU: "All probes
  down, all TCP flows continue", Azure Load Balancer health probes,
  https://learn.microsoft.com/azure/load-balancer/load-balancer-custom-probe-overview);
- "inbound": the inbound rules of the backends' network security group in priority order ({"name", "access",
  "sources", "destinations", "ports"}): an Azure load balancer keeps the client's address, so the backend's group
  judges the client; a connection the first matching rule denies is closed unanswered and logged with the rule's name.
"""
import ipaddress
import json
import socket
import urllib.request
import sys
import threading
import time

CONFIG_FILE, LOG_FILE = sys.argv[1:3]
CONFIG = json.load(open(CONFIG_FILE, encoding="utf-8"))
LOCK = threading.Lock()


def log(line):
    with LOCK, open(LOG_FILE, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def pipe(source, destination):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            destination.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((destination, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


HEALTHY = {}


def probe_once(target, probe):
    # A probe that has not answered within the interval counts as failed (the interval is "slightly less than half the
    # allocated timeout period": intervalInSeconds, https://learn.microsoft.com/javascript/api/@azure-rest/arm-network/
    # probepropertiesformatoutput).
    try:
        url = f"http://{target}:{probe['port']}{probe['path']}"
        with urllib.request.urlopen(url, timeout=probe.get("intervalSeconds", 5)) as response:
            return response.status == 200
    except OSError:
        return False


def prober(target, probe):
    """Marks (target, port) healthy after `threshold` answers of 200 in a row, unhealthy after as many failures."""
    key = (target, probe["port"])
    streak, last = 0, None
    while True:
        ok = probe_once(target, probe)
        streak = streak + 1 if ok == last else 1
        last = ok
        if streak >= probe.get("threshold", 2) and HEALTHY.get(key) != ok:
            HEALTHY[key] = ok
            log(f"probe {target}:{probe['port']}{probe['path']} {'up' if ok else 'down'}")
        time.sleep(probe.get("intervalSeconds", 5))


def probe_ok(target, probe):
    return not probe or HEALTHY.get((target, probe["port"]), False)


def nsg_decision(listener, client, target):
    for rule in listener.get("inbound") or []:
        inside = lambda address, cidrs: any(ipaddress.ip_address(address) in ipaddress.ip_network(cidr) for cidr in cidrs)
        port = listener["targetPort"]
        if inside(client, rule["sources"]) and inside(target, rule["destinations"]) and any(a <= port <= b for a, b in rule["ports"]):
            return rule
    return None


def choose_upstream(listener, client_address, first):
    """The upstream connection for one client: the first target from `first` on (round robin) that the NSG admits, whose
    probe is up and that accepts within 5 s; None when none does (or the NSG denies the client)."""
    targets = listener["targets"]
    for attempt in range(len(targets)):
        target = targets[(first + attempt) % len(targets)]
        rule = nsg_decision(listener, client_address, target)
        if rule is not None and rule["access"] != "Allow":
            log(f"{client_address} -> {listener['port']} -> {target}:{listener['targetPort']} denied by NSG rule {rule['name']}")
            return None
        if not probe_ok(target, listener.get("probe")):
            log(f"{client_address} -> {listener['port']} -> {target}:{listener['targetPort']} skipped (probe down)")
            continue
        candidate = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        candidate.bind((CONFIG["address"], 0))
        candidate.settimeout(5)
        started = time.monotonic()
        try:
            candidate.connect((target, listener["targetPort"]))
            candidate.settimeout(None)
            waited = time.monotonic() - started
            slow = f" (connected after {waited:.1f} s)" if waited > 1 else ""
            log(f"{client_address} -> {listener['port']} -> {target}:{listener['targetPort']}{slow}")
            return candidate
        except OSError as error:
            log(f"{client_address} -> {listener['port']} -> {target}:{listener['targetPort']} refused ({error})")
            candidate.close()
    return None


def serve(listener):
    """Accepts clients; each is forwarded on a thread of its own (a load balancer's flows are independent: a target
    that is slow to accept one client does not hold up the next), the round robin's turn taken under a lock."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((CONFIG["address"], listener["port"]))
    server.listen(128)
    ready.release()
    turn = [0]
    turn_lock = threading.Lock()

    def forward(client, peer):
        with turn_lock:
            first = turn[0]
            turn[0] = (first + 1) % len(listener["targets"])
        upstream = choose_upstream(listener, peer[0], first)
        if upstream is None:
            client.close()
            return
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    while True:
        client, peer = server.accept()
        threading.Thread(target=forward, args=(client, peer), daemon=True).start()


ready = threading.Semaphore(0)
for target, probe in {(t, json.dumps(l["probe"], sort_keys=True)) for l in CONFIG["listeners"] if l.get("probe") for t in l["targets"]}:
    threading.Thread(target=prober, args=(target, json.loads(probe)), daemon=True).start()
for entry in CONFIG["listeners"]:
    threading.Thread(target=serve, args=(entry,), daemon=True).start()
for _ in CONFIG["listeners"]:
    ready.acquire()
print("ready", flush=True)
threading.Event().wait()
