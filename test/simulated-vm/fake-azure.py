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

The twin's resource groups (test/twin/azure/resource-group.ts) add what a deployment makes, and the fake then enforces it:
- "identities": [{"clientId", "principalId", "vms": [name]}]: user-assigned identities and the VMs they are attached to.
  IMDS issues a token only for an identity of the calling VM, and the token names its principal.
- "roleAssignments": [{"principalId", "roleDefinitionId", "scope"}]: Azure RBAC. ARM's Virtual Machines - List needs
  Microsoft.Compute/virtualMachines/read at the resource group (Reader, Contributor, Owner, Virtual Machine
  Contributor), Key Vault's Get Secret needs the data action Microsoft.KeyVault/vaults/secrets/getSecret/action at the
  vault (Key Vault Secrets User, Secrets Officer, Administrator): built-in role ids of
  https://learn.microsoft.com/azure/role-based-access-control/built-in-roles. A scope covers itself and what is below it
  (https://learn.microsoft.com/azure/role-based-access-control/scope-overview). Refusals in the services' formats:
  403 AuthorizationFailed (https://learn.microsoft.com/azure/role-based-access-control/troubleshooting) and Key Vault's
  403 Forbidden / ForbiddenByRbac (https://learn.microsoft.com/azure/key-vault/general/rbac-guide).
- "vaultResourceId", "vaultAllowedPrefixes": the vault's firewall (networkAcls defaultAction Deny with the subnets of
  its virtualNetworkRules): a caller outside those prefixes gets 403 ForbiddenByFirewall
  (https://learn.microsoft.com/azure/key-vault/general/network-security).
- "mavenDirectories", "goModuleProxy": Maven Central and the Go module proxy (fake_downloads.py).
- "uploadHosts": host names whose pre-signed PUTs are kept (default the one below).
"""
import http.server
import ipaddress
import os
import json
import ssl
import sys
import threading
import urllib.parse

from fake_downloads import serve_go_proxy, serve_maven

STATE_FILE, LOG_FILE, HUB_ADDRESS, CERT_FILE, KEY_FILE = sys.argv[1:6]


def state():
    with open(STATE_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def log(line):
    with open(LOG_FILE, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


ARM_READERS = {
    "acdd72a7-3385-48ef-bd42-f606fba81ae7",  # Reader
    "b24988ac-6180-42a0-ab88-20f7382dd24c",  # Contributor
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",  # Owner
    "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",  # Virtual Machine Contributor
}
SECRET_READERS = {
    "4633458b-17de-408a-b874-0445c86b69e6",  # Key Vault Secrets User
    "b86a8fe4-44ce-4948-aee5-eccb2c155cd7",  # Key Vault Secrets Officer
    "00482a5a-887f-4fb3-b363-3b7fe8e74483",  # Key Vault Administrator
}


def allowed(current, principal, roles, resource_id):
    """Whether an assignment of one of `roles` to `principal` covers `resource_id` (no assignments listed: no RBAC)."""
    if "roleAssignments" not in current:
        return True
    target = resource_id.lower().rstrip("/")
    for assignment in current["roleAssignments"]:
        scope = assignment["scope"].lower().rstrip("/")
        role = assignment["roleDefinitionId"].rstrip("/").rsplit("/", 1)[-1].lower()
        if assignment["principalId"] == principal and role in roles and (target == scope or target.startswith(scope + "/")):
            return True
    return False


def token_principal(authorization, kind):
    """The principal of a bearer token IMDS issued for `kind` (arm or vault), "" for the single-identity tokens."""
    prefix = f"Bearer {kind}-token"
    if authorization == prefix:
        return ""
    if authorization.startswith(prefix + "."):
        return authorization[len(prefix) + 1:]
    return None


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
        if host == "repo1.maven.org":
            return serve_maven(self, current, log, lambda: self.reply(404, {"error": "not in the twin's Maven cache"}))
        if host == "proxy.golang.org":
            return serve_go_proxy(self, current, log, lambda: self.reply(404, {"error": "not in the twin's module cache"}))
        if "api-version" not in query:
            return self.reply(400, {"error": {"code": "MissingApiVersionParameter"}})
        authorization = self.headers.get("Authorization", "")
        if host == "management.azure.com":
            principal = token_principal(authorization, "arm")
            if principal is None:
                return self.reply(401, {"error": {"code": "AuthenticationFailed"}})
            scope = f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}"
            if not allowed(current, principal, ARM_READERS, scope):
                log(f"{self.client_address[0]} denied: {principal} Microsoft.Compute/virtualMachines/read {scope}")
                return self.reply(403, {"error": {"code": "AuthorizationFailed", "message": f"The client '{principal}' with object id '{principal}' does not have authorization to perform action 'Microsoft.Compute/virtualMachines/read' over scope '{scope}' or the scope is invalid. If access was recently granted, please refresh your credentials."}})
            return self.arm(current, url.path)
        if host == f"{current['vaultName']}.vault.azure.net".lower():
            principal = token_principal(authorization, "vault")
            if principal is None:
                return self.reply(401, {"error": {"code": "Unauthorized"}})
            prefixes = current.get("vaultAllowedPrefixes")
            if prefixes is not None and not any(ipaddress.ip_address(self.client_address[0]) in ipaddress.ip_network(prefix) for prefix in prefixes):
                log(f"{self.client_address[0]} denied by the vault firewall")
                return self.reply(403, {"error": {"code": "Forbidden", "message": f"Client address is not authorized and caller is not a trusted service.\r\nClient address: {self.client_address[0]}", "innererror": {"code": "ForbiddenByFirewall"}}})
            name = url.path.removeprefix("/secrets/")
            action = "Microsoft.KeyVault/vaults/secrets/getSecret/action"
            if not allowed(current, principal, SECRET_READERS, f"{current.get('vaultResourceId', '')}/secrets/{name}"):
                log(f"{self.client_address[0]} denied: {principal} {action} {name}")
                return self.reply(403, {"error": {"code": "Forbidden", "message": f"Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments or role definitions were changed recently, please observe propagation time.\r\nCaller: oid={principal}\r\nAction: '{action}'\r\nResource: '{current.get('vaultResourceId', '').lower()}/secrets/{name}'", "innererror": {"code": "ForbiddenByRbac"}}})
            if name not in current["secrets"]:
                return self.reply(404, {"error": {"code": "SecretNotFound", "message": f"A secret with (name/id) {name} was not found in this key vault."}})
            return self.reply(200, {"value": current["secrets"][name], "id": f"https://{host}/secrets/{name}/0", "attributes": {"enabled": True}})
        return self.reply(404, {"error": {"code": "UnknownHost", "message": host}})

    def do_PUT(self):  # noqa: N802 (http.server naming)
        # A pre-signed upload URL (an Azure Blob SAS or S3 pre-signed PUT): the body is kept under uploads/ beside the
        # state file, by the URL's path, for the test to read. The signature in the query is not checked.
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        url = urllib.parse.urlparse(self.path)
        if host not in current_upload_hosts():
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
            client_id = query.get("client_id", [""])[0]
            if "identities" in current:
                identity = next((i for i in current["identities"] if i["clientId"] == client_id and vm["name"] in i["vms"]), None)
                if identity is None:
                    return self.reply(400, {"error": "invalid_request", "error_description": "Identity not found"})
                suffix = "." + identity["principalId"]
            elif client_id != current["identityClientId"]:
                return self.reply(400, {"error": "invalid_request", "error_description": "Identity not found"})
            else:
                suffix = ""
            resource = query.get("resource", [""])[0]
            token = {"https://vault.azure.net": "vault-token", "https://management.azure.com/": "arm-token"}.get(resource)
            if token is None:
                return self.reply(400, {"error": "invalid_resource", "error_description": resource})
            token += suffix
            return self.reply(200, {"access_token": token, "token_type": "Bearer", "resource": resource, "expires_in": "86399"})
        if path == "/metadata/instance/compute":
            return self.reply(200, {
                "name": vm["name"], "osProfile": {"computerName": vm["computerName"]},
                "subscriptionId": current["subscriptionId"], "resourceGroupName": current["resourceGroup"],
                "vmScaleSetName": vm.get("scaleSetName", current.get("scaleSetName", "")),
            })
        return self.reply(404, {"error": "not_found"})

    def arm(self, current, path):
        expected = f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachines"
        if path.lower() != expected.lower():
            return self.reply(404, {"error": {"code": "NotFound", "message": path}})
        scale_set_id = f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachineScaleSets/{current.get('scaleSetName', '')}"
        # A stopped VM still exists (provisioningState Succeeded, only its power state differs); a deleted one is absent.
        value = [{
            "name": vm["name"],
            "id": f"/subscriptions/{current['subscriptionId']}/resourceGroups/{current['resourceGroup']}/providers/Microsoft.Compute/virtualMachines/{vm['name']}",
            "properties": {
                **({"virtualMachineScaleSet": {"id": scale_set_id.rsplit("/", 1)[0] + "/" + vm.get("scaleSetName", current.get("scaleSetName", ""))}} if vm.get("scaleSetName", current.get("scaleSetName")) else {}),
                "osProfile": {"computerName": vm["computerName"]},
                "timeCreated": vm["timeCreated"],
                "provisioningState": "Succeeded",
            },
        } for vm in current["vms"] if not vm.get("deleted")]
        return self.reply(200, {"value": value})

    def log_message(self, *args):
        pass


def current_upload_hosts():
    return state().get("uploadHosts") or ["rmqbenchsimuploads.blob.core.windows.net"]


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
