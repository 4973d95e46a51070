#!/usr/bin/env python3
"""Fake Azure endpoints for simulated VMs: IMDS (http://169.254.169.254), ARM (https://management.azure.com) and
Key Vault (https://<vault>.vault.azure.net), answering the requests rmqbench-node-setup.sh makes, in the shapes of:
- IMDS managed-identity token: https://learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token
- IMDS instance/compute: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
- Virtual Machines - List: https://learn.microsoft.com/rest/api/compute/virtual-machines/list
- Key Vault Get Secret: https://learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret

Runs inside the test's hub network namespace only. The test owns the state file (JSON, re-read on every request):
  {"subscriptionId", "resourceGroup", "scaleSetName", "identityClientId", "vaultName", "secrets": {name: value},
   "vms": [{"name", "computerName", "ip", "timeCreated", "power": "running"|"stopped", "deleted": bool}]}
A VM is told apart by its source address. Every request is appended to the log file (paths and callers, no secrets).
"""
import http.server
import os
import json
import ssl
import sys
import threading
import urllib.parse

STATE_FILE, LOG_FILE, HUB_ADDRESS, CERT_FILE, KEY_FILE = sys.argv[1:6]


def state():
    with open(STATE_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def log(line):
    with open(LOG_FILE, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def caller(self, current):
        return next((vm for vm in current["vms"] if vm["ip"] == self.client_address[0] and not vm.get("deleted")), None)

    def do_GET(self):  # noqa: N802 (http.server naming)
        current = state()
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        vm = self.caller(current)
        log(f"{self.client_address[0]} {host} {url.path}")
        if host == "169.254.169.254":
            return self.imds(current, vm, url.path, query)
        if "api-version" not in query:
            return self.reply(400, {"error": {"code": "MissingApiVersionParameter"}})
        authorization = self.headers.get("Authorization", "")
        if host == "management.azure.com":
            if authorization != "Bearer arm-token":
                return self.reply(401, {"error": {"code": "AuthenticationFailed"}})
            return self.arm(current, url.path)
        if host == f"{current['vaultName']}.vault.azure.net".lower():
            if authorization != "Bearer vault-token":
                return self.reply(401, {"error": {"code": "Unauthorized"}})
            name = url.path.removeprefix("/secrets/")
            if name not in current["secrets"]:
                return self.reply(404, {"error": {"code": "SecretNotFound", "message": f"A secret with (name/id) {name} was not found in this key vault."}})
            return self.reply(200, {"value": current["secrets"][name], "id": f"https://{host}/secrets/{name}/0", "attributes": {"enabled": True}})
        return self.reply(404, {"error": {"code": "UnknownHost", "message": host}})

    def do_PUT(self):  # noqa: N802 (http.server naming)
        # A pre-signed upload URL (an Azure Blob SAS or S3 pre-signed PUT): the body is kept under uploads/ beside the
        # state file, by the URL's path, for the test to read. The signature in the query is not checked.
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        url = urllib.parse.urlparse(self.path)
        if host != "rmqbenchsimuploads.blob.core.windows.net":
            return self.reply(404, {"error": {"code": "UnknownHost", "message": host}})
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length)
        target = os.path.join(os.path.dirname(STATE_FILE), "uploads", url.path.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
        log(f"{self.client_address[0]} PUT {host} {url.path} {len(data)} bytes")
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def imds(self, current, vm, path, query):
        if self.headers.get("Metadata") != "true":
            return self.reply(400, {"error": "bad_request", "error_description": "Required metadata header not specified"})
        if vm is None:
            return self.reply(404, {"error": "not_found", "error_description": "unknown caller"})
        if path == "/metadata/identity/oauth2/token":
            if query.get("client_id", [""])[0] != current["identityClientId"]:
                return self.reply(400, {"error": "invalid_request", "error_description": "Identity not found"})
            resource = query.get("resource", [""])[0]
            token = {"https://vault.azure.net": "vault-token", "https://management.azure.com/": "arm-token"}.get(resource)
            if token is None:
                return self.reply(400, {"error": "invalid_resource", "error_description": resource})
            return self.reply(200, {"access_token": token, "token_type": "Bearer", "resource": resource, "expires_in": "86399"})
        if path == "/metadata/instance/compute":
            return self.reply(200, {
                "name": vm["name"], "osProfile": {"computerName": vm["computerName"]},
                "subscriptionId": current["subscriptionId"], "resourceGroupName": current["resourceGroup"],
                "vmScaleSetName": current["scaleSetName"],
            })
        return self.reply(404, {"error": "not_found"})

    def arm(self, current, path):
        expected = f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachines"
        if path.lower() != expected.lower():
            return self.reply(404, {"error": {"code": "NotFound", "message": path}})
        scale_set_id = f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachineScaleSets/{current['scaleSetName']}"
        # A stopped VM still exists (provisioningState Succeeded, only its power state differs); a deleted one is absent.
        value = [{
            "name": vm["name"],
            "id": f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachines/{vm['name']}",
            "properties": {
                "virtualMachineScaleSet": {"id": scale_set_id},
                "osProfile": {"computerName": vm["computerName"]},
                "timeCreated": vm["timeCreated"],
                "provisioningState": "Succeeded",
            },
        } for vm in current["vms"] if not vm.get("deleted")]
        return self.reply(200, {"value": value})

    def log_message(self, *args):
        pass


def serve(server):
    server.serve_forever()


imds = http.server.ThreadingHTTPServer(("169.254.169.254", 80), Handler)
https = http.server.ThreadingHTTPServer((HUB_ADDRESS, 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT_FILE, KEY_FILE)
https.socket = context.wrap_socket(https.socket, server_side=True)
threading.Thread(target=serve, args=(imds,), daemon=True).start()
print("ready", flush=True)
serve(https)
