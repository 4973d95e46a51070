"""The download hosts a simulated VM's boot reaches, shared by fake-aws.py and fake-azure.py (imported from the
script's own folder): Maven Central and the Go module proxy, served from this machine's caches as the state file
names them. No request leaves this machine.
- Maven Central (repo1.maven.org, /maven2/<group path>/<artifact>/<version>/<file>): the file by its name from the
  first of "mavenDirectories" that has it.
- The Go module proxy (proxy.golang.org; the GOPROXY protocol, https://go.dev/ref/mod#goproxy-protocol:
  /<module>/@v/<version>.info|.mod|.zip, /<module>/@v/list) as far as "goModuleProxy" holds it: a module cache's
  cache/download folder has that very layout (https://go.dev/ref/mod#module-cache).
"""
import os
import urllib.parse


def send_file(handler, data, content_type):
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def read_first(paths):
    for path in paths:
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except OSError:
            continue
    return None


def serve_maven(handler, current, log, not_found):
    """Answers a GET on repo1.maven.org; not_found() answers a file no cache holds (in the fake's own format)."""
    name = urllib.parse.urlparse(handler.path).path.rsplit("/", 1)[-1]
    log(f"{handler.client_address[0]} maven GET {handler.path}")
    data = read_first(os.path.join(directory, name) for directory in current.get("mavenDirectories") or [])
    if data is None:
        return not_found()
    return send_file(handler, data, "application/java-archive")


def serve_go_proxy(handler, current, log, not_found):
    """Answers a GET on proxy.golang.org from the module cache the state names."""
    directory = current.get("goModuleProxy")
    path = urllib.parse.unquote(urllib.parse.urlparse(handler.path).path)
    log(f"{handler.client_address[0]} goproxy GET {path}")
    data = read_first([f"{directory}{path}"]) if directory and ".." not in path else None
    if data is None:
        return not_found()
    return send_file(handler, data, "application/octet-stream")
