"""Stand-in for the Amazon CloudWatch agent on the AWS twin's simulated instances.

The boot scripts install the agent with `dnf install -y amazon-cloudwatch-agent` (cdk/user-data/cloudwatch-agent.ts);
the twin's dnf (cluster-stack.ts) puts this script behind the agent's control script, so that the boot's own lines
write the configuration and start it:

    amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c file:/opt/aws/amazon-cloudwatch-agent/etc/...json

What it keeps of the agent (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch-Agent-Configuration-File-Details.html and the Telegraf inputs the agent wraps):
- the configuration file as written: namespace, metrics_collection_interval, force_flush_interval, the global
  append_dimensions (only ${aws:InstanceId}, from IMDSv2), each plugin's measurements and append_dimensions;
- metric names `<plugin>_<measurement>`, one series per cpu-total (dimension cpu), disk (name) and interface
  (interface); cpu usage_active = 100 - idle - iowait (Telegraf inputs.cpu), mem used = total - free - buffers -
  cached (gopsutil), diskio and net counters sent as deltas per sample (the agent's cumulativetodelta processor);
- high resolution (StorageResolution 1) below a 60 s interval, published every force_flush_interval seconds with
  PutMetricData, signed with the instance profile's credentials from IMDS (botocore's default chain, as the agent's
  ec2 mode does), to CloudWatch of the instance's region: the twin's gateway allows or denies it by the instance
  role's policy, cloudwatch:namespace condition included.
What differs: the values are this machine's (every simulated instance shares its CPUs, memory and disks; only the
network interfaces are the instance's own), loop, ram and zram devices are left out, and errors go to the agent's log
file (/opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log), never to the boot.
"""
import json
import os
import sys
import time
import urllib.request

LOG = "/opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log"
PLUGINS = {"cpu": {"usage_active"}, "mem": {"used"}, "diskio": {"write_bytes"}, "net": {"bytes_sent", "bytes_recv"}}
UNITS = {"cpu": "Percent", "mem": "Bytes", "diskio": "Bytes", "net": "Bytes"}
# PutMetricData takes at most 1,000 metrics per request (API_PutMetricData.html, MetricData).
MAX_DATUMS = 1000
# Samples kept while CloudWatch cannot be reached (the agent buffers too), so that memory stays bounded.
MAX_BUFFERED = 50_000


def log(line):
    with open(LOG, "a", encoding="utf-8") as out:
        out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n")


def fail(message):
    print(f"amazon-cloudwatch-agent-ctl (twin stand-in): {message}", file=sys.stderr)
    sys.exit(1)


def parse_arguments(argv):
    """The control script's options the boot uses; anything else is refused by name."""
    options, index = {"restart": False}, 0
    while index < len(argv):
        flag = argv[index]
        if flag == "-s":
            options["restart"] = True
            index += 1
            continue
        if flag not in ("-a", "-m", "-c") or index + 1 >= len(argv):
            fail(f"unsupported arguments: {' '.join(argv)}")
        options[flag] = argv[index + 1]
        index += 2
    if options.get("-a") != "fetch-config" or options.get("-m") != "ec2" or not options.get("-c", "").startswith("file:"):
        fail(f"the stand-in supports `-a fetch-config -m ec2 -c file:PATH [-s]` only, not: {' '.join(argv)}")
    return options


def read_configuration(path):
    """The configuration, checked as the agent's translator would refuse it (unknown plugin or measurement)."""
    try:
        with open(path, encoding="utf-8") as source:
            config = json.load(source)
    except (OSError, ValueError) as error:
        fail(f"cannot read the configuration {path}: {error}")
    metrics = config.get("metrics", {})
    if not isinstance(metrics.get("namespace"), str) or not metrics["namespace"]:
        fail("metrics.namespace is missing")
    for plugin, settings in metrics.get("metrics_collected", {}).items():
        if plugin not in PLUGINS:
            fail(f"the stand-in does not collect the {plugin} plugin")
        unknown = set(settings.get("measurement", [])) - PLUGINS[plugin]
        if unknown:
            fail(f"unknown {plugin} measurement(s): {', '.join(sorted(unknown))}")
    return config


def imds(path, token):
    request = urllib.request.Request(f"http://169.254.169.254/latest/{path}", headers={"X-aws-ec2-metadata-token": token})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.read().decode()


def instance_identity():
    request = urllib.request.Request(
        "http://169.254.169.254/latest/api/token", method="PUT", headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        token = response.read().decode()
    return imds("meta-data/instance-id", token), imds("meta-data/placement/region", token)


def counters():
    """This moment's counters: cpu jiffies, memory, sectors written per disk, bytes per interface."""
    with open("/proc/stat", encoding="utf-8") as source:
        cpu = [int(value) for value in source.readline().split()[1:]]
    memory = {}
    with open("/proc/meminfo", encoding="utf-8") as source:
        for line in source:
            name, value = line.split(":", 1)
            memory[name] = int(value.split()[0]) * 1024
    disks = {}
    with open("/proc/diskstats", encoding="utf-8") as source:
        for line in source:
            fields = line.split()
            if not fields[2].startswith(("loop", "ram", "zram")):
                disks[fields[2]] = int(fields[9]) * 512
    interfaces = {}
    with open("/proc/net/dev", encoding="utf-8") as source:
        for line in source.readlines()[2:]:
            name, values = line.split(":", 1)
            fields = values.split()
            interfaces[name.strip()] = (int(fields[8]), int(fields[0]))
    return {"cpu": cpu, "memory": memory, "disks": disks, "interfaces": interfaces}


def samples(previous, current):
    """(plugin, measurement, tag dimensions, value) of one interval."""
    deltas = [now - before for now, before in zip(current["cpu"], previous["cpu"])]
    total = sum(deltas[:8]) or 1
    idle = deltas[3] + deltas[4]
    memory = current["memory"]
    used = memory["MemTotal"] - memory["MemFree"] - memory.get("Buffers", 0) - memory.get("Cached", 0)
    used -= memory.get("SReclaimable", 0)
    rows = [("cpu", "usage_active", {"cpu": "cpu-total"}, 100.0 * (total - idle) / total), ("mem", "used", {}, used)]
    for disk, written in current["disks"].items():
        rows.append(("diskio", "write_bytes", {"name": disk}, max(0, written - previous["disks"].get(disk, written))))
    for interface, (sent, received) in current["interfaces"].items():
        before = previous["interfaces"].get(interface, (sent, received))
        rows.append(("net", "bytes_sent", {"interface": interface}, max(0, sent - before[0])))
        rows.append(("net", "bytes_recv", {"interface": interface}, max(0, received - before[1])))
    return rows


def run(config):
    import botocore.session  # the instance's AWS CLI's botocore (the AMI's CLI in the cloud)

    metrics = config["metrics"]
    interval = int(config.get("agent", {}).get("metrics_collection_interval", 60))
    flush = int(metrics.get("force_flush_interval", 60))
    instance_id, region = instance_identity()
    resolve = lambda value: value.replace("${aws:InstanceId}", instance_id)  # noqa: E731
    shared = {key: resolve(value) for key, value in metrics.get("append_dimensions", {}).items()}
    collected = metrics.get("metrics_collected", {})
    client = botocore.session.get_session().create_client("cloudwatch", region_name=region)
    log(f"started: namespace {metrics['namespace']}, every {interval} s, flushed every {flush} s, instance {instance_id}")
    buffered, previous, last_flush = [], counters(), time.time()
    while True:
        time.sleep(interval - time.time() % interval)
        current, timestamp = counters(), int(time.time())
        for plugin, measurement, tags, value in samples(previous, current):
            settings = collected.get(plugin)
            if settings is None or measurement not in settings.get("measurement", []):
                continue
            dimensions = {**shared, **settings.get("append_dimensions", {}), **tags}
            buffered.append({
                "MetricName": f"{plugin}_{measurement}",
                "Dimensions": [{"Name": key, "Value": value} for key, value in dimensions.items()],
                "Timestamp": timestamp,
                "Value": float(value),
                "Unit": UNITS[plugin],
                "StorageResolution": 1 if interval < 60 else 60,
            })
        previous = current
        if time.time() - last_flush >= flush:
            last_flush = time.time()
            buffered = publish(client, metrics["namespace"], buffered)[-MAX_BUFFERED:]


def publish(client, namespace, buffered):
    """Sends the buffered samples; returns what could not be sent (kept for the next flush)."""
    for start in range(0, len(buffered), MAX_DATUMS):
        try:
            client.put_metric_data(Namespace=namespace, MetricData=buffered[start:start + MAX_DATUMS])
        except Exception as error:  # noqa: BLE001 - the agent logs and retries every failure
            log(f"E! PutMetricData failed: {error}")
            return buffered[start:]
    return []


def main():
    options = parse_arguments(sys.argv[1:])
    config = read_configuration(options["-c"].removeprefix("file:"))
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    if not options["restart"]:
        return
    # Detached as systemd would start the agent: no tie to the boot's output, its own session.
    if os.fork() > 0:
        return
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    output = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(null, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    try:
        run(config)
    except Exception as error:  # noqa: BLE001
        log(f"E! the agent stopped: {error}")
        os._exit(1)


if __name__ == "__main__":
    main()
