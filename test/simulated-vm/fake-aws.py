#!/usr/bin/env python3
"""Fake AWS endpoints for simulated EC2 instances: IMDSv2 (http://169.254.169.254) and, over HTTPS, the calls the node
boot script (cdk/user-data/rabbitmq-node.ts) makes with the AWS CLI, in these shapes:
- IMDSv2 session token and metadata, instance-profile credentials:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html,
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-metadata-security-credentials.html
- Secrets Manager GetSecretValue (JSON 1.1): https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html
- Auto Scaling DescribeAutoScalingInstances / DescribeAutoScalingGroups (query, XML):
  https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeAutoScalingInstances.html
- CloudWatch Logs CreateLogStream / PutLogEvents (JSON 1.1); CloudFormation SignalResource (query, XML):
  https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_SignalResource.html
- EC2 DescribeInstances (query, XML), which RabbitMQ's AWS peer-discovery plugin calls for the group's private IPs:
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html

State file (JSON, re-read on every request): {"region", "roleName", "autoScalingGroupName", "desiredCapacity",
"secrets": {arn: string}, "vms": [{"instanceId", "ip", "deleted"}]}, and "mavenDirectories", "goModuleProxy" for Maven
Central and the Go module proxy (fake_downloads.py). Requests are logged without bodies, except the
SignalResource status and the log stream name, which the tests read.

Twin mode (test/twin/cluster-stack.ts): with "gatewaySocket" in the state, every API request is sent as it came, with
its signature, to the twin's gateway over that Unix socket, which checks it against the caller's role and answers it
(moto behind it), or answers 200 with "x-twin-answer: local" for the calls about the simulated instances themselves
(Auto Scaling and EC2 describes, SignalResource), which this fake then answers from its state. A VM's "roleName" and
"credentials" (AccessKeyId, SecretAccessKey, Token) are then the ones the gateway issued for its instance profile.
"""
import http.client
import socket
import http.server
import json
import ssl
import sys
import threading
import urllib.parse
import uuid

from fake_downloads import serve_go_proxy, serve_maven

STATE_FILE, LOG_FILE, HUB_ADDRESS, CERT_FILE, KEY_FILE = sys.argv[1:6]
TOKENS = set()


def state():
    with open(STATE_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def log(line):
    with open(LOG_FILE, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, content_type="application/x-amz-json-1.1"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def caller(self, current):
        return next((vm for vm in current["vms"] if vm["ip"] == self.client_address[0] and not vm.get("deleted")), None)

    def raw_body(self):
        """The request body as bytes, also when sent with Transfer-Encoding: chunked (the AWS CLI's S3 uploads with a
        trailing checksum: Content-Encoding aws-chunked inside HTTP chunked transfer, no Content-Length)."""
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def body(self):
        """The request body as text; as bytes when compressed (botocore gzips PutMetricData: the operation's
        requestCompression trait), which only the gateway reads."""
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        return data if self.headers.get("Content-Encoding") == "gzip" else data.decode()

    # IMDSv2: a PUT opens a session, every GET must carry its token (IMDSv1 requests are refused, as HttpTokens=required).
    def do_PUT(self):  # noqa: N802
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        if host.endswith(".amazonaws.com"):
            return self.api(host, "", self.raw_body())
        self.body()
        if self.path != "/latest/api/token" or "X-aws-ec2-metadata-token-ttl-seconds" not in self.headers:
            return self.reply(400, "", "text/plain")
        token = uuid.uuid4().hex
        TOKENS.add(token)
        log(f"{self.client_address[0]} imds PUT token")
        return self.reply(200, token, "text/plain")

    def do_GET(self):  # noqa: N802
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        if host == "repo1.maven.org":
            return serve_maven(self, state(), log, lambda: self.reply(404, "", "text/plain"))
        if host == "proxy.golang.org":
            return serve_go_proxy(self, state(), log, lambda: self.reply(404, "not found", "text/plain"))
        if host.endswith(".amazonaws.com"):
            url = urllib.parse.urlparse(self.path)
            return self.api(host, url.query, "")
        current = state()
        vm = self.caller(current)
        if self.headers.get("X-aws-ec2-metadata-token") not in TOKENS:
            return self.reply(401, "", "text/plain")
        if vm is None:
            return self.reply(404, "", "text/plain")
        path = self.path.removeprefix("/latest/meta-data/").rstrip("/")
        log(f"{self.client_address[0]} imds GET {path}")
        role = vm.get("roleName", current.get("roleName"))
        credentials = vm.get("credentials", {"AccessKeyId": "ASIASIMULATEDVM00001", "SecretAccessKey": "simulated-secret-access-key", "Token": "simulated-session-token"})
        values = {
            "instance-id": vm["instanceId"],
            "local-ipv4": vm["ip"],
            "placement/region": current["region"],
            "placement/availability-zone": current["region"] + "a",
            "autoscaling/target-lifecycle-state": "InService",
            "iam/security-credentials": role,
            f"iam/security-credentials/{role}": json.dumps({
                "Code": "Success", "Type": "AWS-HMAC", **credentials,
                "Expiration": "2099-01-01T00:00:00Z", "LastUpdated": "2026-11-23T00:00:00Z",
            }),
        }
        if path not in values:
            return self.reply(404, "", "text/plain")
        return self.reply(200, values[path], "text/plain")

    def do_POST(self):  # noqa: N802
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        body = self.body()
        return self.api(host, body if "X-Amz-Target" not in self.headers else "", body)

    def forward(self, socket_path, body):
        """The request, as it came, to the twin's gateway; True if the gateway leaves the answer to this fake."""
        class UnixConnection(http.client.HTTPConnection):
            def connect(self):
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(socket_path)
        connection = UnixConnection("twin", timeout=900)
        # The body is read already: an Expect: 100-continue (the AWS CLI sends it with S3 uploads) is not passed on.
        headers = {key: value for key, value in self.headers.items() if key.lower() not in ("content-length", "connection", "expect", "transfer-encoding")}
        headers["x-twin-caller-ip"] = self.client_address[0]
        connection.request(self.command, self.path, body=body if isinstance(body, bytes) else body.encode(), headers=headers)
        response = connection.getresponse()
        data = response.read()
        if response.getheader("x-twin-answer") == "local":
            return True
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return False

    def api(self, host, query, body):
        current = state()
        if current.get("gatewaySocket"):
            if not self.forward(current["gatewaySocket"], body):
                return None
        elif not self.headers.get("Authorization", "").startswith("AWS4-HMAC-SHA256 Credential=ASIASIMULATEDVM00001/"):
            return self.reply(403, {"__type": "UnrecognizedClientException", "message": "not signed with the instance role"})
        service = host.split(".")[0]
        target = self.headers.get("X-Amz-Target", "")
        if service == "secretsmanager" and target == "secretsmanager.GetSecretValue":
            secret_id = json.loads(body)["SecretId"]
            log(f"{self.client_address[0]} secretsmanager GetSecretValue {secret_id}")
            if secret_id not in current["secrets"]:
                return self.reply(400, {"__type": "ResourceNotFoundException", "Message": "Secrets Manager can't find the specified secret."})
            return self.reply(200, {"ARN": secret_id, "Name": secret_id.split(":")[-1], "SecretString": current["secrets"][secret_id], "VersionId": "v1", "VersionStages": ["AWSCURRENT"], "CreatedDate": 1.7e9})
        if service == "logs":
            log(f"{self.client_address[0]} logs {target} {json.loads(body).get('logStreamName')}")
            return self.reply(200, {"nextSequenceToken": "1"} if target.endswith("PutLogEvents") else {})
        form = urllib.parse.parse_qs(query)
        action = form.get("Action", [""])[0]
        if service == "ec2" and action == "DescribeInstances":
            return self.describe_instances(current, form)
        if service == "autoscaling":
            return self.autoscaling(current, action, form)
        if service == "cloudformation" and action == "SignalResource":
            log(f"{self.client_address[0]} cloudformation SignalResource {form.get('UniqueId', [''])[0]} {form.get('Status', [''])[0]}")
            return self.reply(200, '<SignalResourceResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></SignalResourceResponse>', "text/xml")
        return self.reply(400, {"__type": "UnknownOperationException", "message": f"{service} {target or action}"})

    def describe_instances(self, current, form):
        ids = [value for key, values in form.items() if key.startswith("InstanceId.") for value in values]
        log(f"{self.client_address[0]} ec2 DescribeInstances {' '.join(sorted(ids))}")
        items = "".join(
            f"<item><reservationId>r-{vm['instanceId'][2:]}</reservationId><ownerId>111122223333</ownerId><instancesSet><item>"
            f"<instanceId>{vm['instanceId']}</instanceId><instanceState><code>16</code><name>running</name></instanceState>"
            f"<privateDnsName>ip-{vm['ip'].replace('.', '-')}.ec2.internal</privateDnsName><privateIpAddress>{vm['ip']}</privateIpAddress>"
            f"</item></instancesSet></item>"
            for vm in current["vms"] if not vm.get("deleted") and (not ids or vm["instanceId"] in ids))
        return self.reply(200, f'<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>1</requestId><reservationSet>{items}</reservationSet></DescribeInstancesResponse>', "text/xml")

    def autoscaling(self, current, action, form):
        log(f"{self.client_address[0]} autoscaling {action}")
        namespace = 'xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"'
        group = current["autoScalingGroupName"]
        if action == "DescribeAutoScalingInstances":
            ids = [value for key, values in form.items() if key.startswith("InstanceIds.member") for value in values]
            members = "".join(
                f"<member><InstanceId>{vm['instanceId']}</InstanceId><AutoScalingGroupName>{group}</AutoScalingGroupName>"
                f"<AvailabilityZone>{current['region']}a</AvailabilityZone><LifecycleState>InService</LifecycleState>"
                "<HealthStatus>HEALTHY</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>"
                for vm in current["vms"] if (not ids or vm["instanceId"] in ids) and not vm.get("deleted") and vm.get("inGroup", True))
            return self.reply(200, f"<DescribeAutoScalingInstancesResponse {namespace}><DescribeAutoScalingInstancesResult><AutoScalingInstances>{members}</AutoScalingInstances></DescribeAutoScalingInstancesResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeAutoScalingInstancesResponse>", "text/xml")
        if action == "DescribeAutoScalingGroups":
            instances = "".join(
                f"<member><InstanceId>{vm['instanceId']}</InstanceId><AvailabilityZone>{current['region']}a</AvailabilityZone>"
                "<LifecycleState>InService</LifecycleState><HealthStatus>Healthy</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>"
                for vm in current["vms"] if not vm.get("deleted") and vm.get("inGroup", True))
            return self.reply(200, f"<DescribeAutoScalingGroupsResponse {namespace}><DescribeAutoScalingGroupsResult><AutoScalingGroups><member><AutoScalingGroupName>{group}</AutoScalingGroupName><Instances>{instances}</Instances><MinSize>{current['desiredCapacity']}</MinSize><MaxSize>{current['desiredCapacity']}</MaxSize><DesiredCapacity>{current['desiredCapacity']}</DesiredCapacity><DefaultCooldown>300</DefaultCooldown><AvailabilityZones><member>{current['region']}a</member></AvailabilityZones><HealthCheckType>EC2</HealthCheckType><CreatedTime>2026-11-23T00:00:00Z</CreatedTime></member></AutoScalingGroups></DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>", "text/xml")
        return self.reply(400, f"<ErrorResponse><Error><Code>InvalidAction</Code><Message>{action}</Message></Error></ErrorResponse>", "text/xml")

    def log_message(self, *args):
        pass


imds = http.server.ThreadingHTTPServer(("169.254.169.254", 80), Handler)
https = http.server.ThreadingHTTPServer((HUB_ADDRESS, 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT_FILE, KEY_FILE)
https.socket = context.wrap_socket(https.socket, server_side=True)
threading.Thread(target=imds.serve_forever, daemon=True).start()
print("ready", flush=True)
https.serve_forever()
