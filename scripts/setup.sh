#!/usr/bin/env bash
# Installs everything rmqbench needs on a fresh Debian machine, idempotently:
# Debian packages (RabbitMQ, HAProxy, Java, Maven), npm dependencies (including Node 22),
# the Python lint tools used by the tests (cfn-lint, checkov) and the AWS emulator moto in a venv of their own,
# the Maven jars (PerfTest, DynamoDB Local, Kafka broker and tools) into the rmqbench cache, the NATS binaries
# (nats-server, natscli and the NATS load client, built with Go) into the same cache, and the build.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need_apt+=(maven)
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || need_apt+=(rabbitmq-server)
command -v haproxy >/dev/null || need_apt+=(haproxy)
command -v python3 >/dev/null || need_apt+=(python3 python3-venv)
# Headless Chromium opens the HTML report in test/report (charts render, no console errors).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# The simulated-VM tests (test/simulated-vm): the node scripts' tools, mkfs.xfs for the EC2 data volume, the AWS CLI.
command -v jq >/dev/null || need_apt+=(jq)
command -v mkfs.xfs >/dev/null || need_apt+=(xfsprogs)
command -v aws >/dev/null || need_apt+=(awscli)
# nft: the partition fault's firewall rules, run on simulated nodes (test/simulated-vm/aws-node.integration.test.ts).
[ -x /usr/sbin/nft ] || need_apt+=(nftables)
# The cloud twin (test/twin) publishes zip assets as cdk-assets does and unpacks a function's bundle as Lambda does.
command -v zip >/dev/null || need_apt+=(zip)
command -v unzip >/dev/null || need_apt+=(unzip)
# socat relays a VPC-attached function's AWS API calls from its network namespace to the twin's gateway (test/twin/vpc-function.ts).
command -v socat >/dev/null || need_apt+=(socat)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The Debian package may start its own broker; rmqbench runs its own nodes on free ports, so it is
# left alone, but a system epmd/broker does not interfere with ours.

# The AWS CLI (v1 from PyPI; the load generator's AL2023 image has v2, whose `secretsmanager get-secret-value` and
# `s3 cp` behave alike) runs the controller's load-generator script in test/lambdas/perftest-script.integration.test.ts.
if [ ! -x .venv-tools/bin/cfn-lint ] || [ ! -x .venv-tools/bin/checkov ] || [ ! -x .venv-tools/bin/aws ]; then
  echo "setup: installing cfn-lint, checkov and the AWS CLI into .venv-tools"
  python3 -m venv .venv-tools
  .venv-tools/bin/pip install -q --disable-pip-version-check cfn-lint checkov awscli==1.46.3
fi
# A folder with the pinned AWS CLI alone, for the PATH of simulated VMs (test/simulated-vm/harness.ts awsCliDirectory):
# .venv-tools/bin would also put the venv's python first.
mkdir -p .venv-tools/cli && ln -sfn ../bin/aws .venv-tools/cli/aws

# moto in server mode: the AWS emulator the cloud CLI tests (test/cloud/) start and stop; pinned (PyPI moto 5.2.5),
# its [server] extra brings Flask. It adds packages to .venv-tools without changing the lint tools' pins.
if [ ! -x .venv-tools/bin/moto_server ] || ! .venv-tools/bin/pip show moto 2>/dev/null | grep -qx 'Version: 5.2.5'; then
  echo "setup: installing moto[server] 5.2.5 into .venv-tools"
  .venv-tools/bin/pip install -q --disable-pip-version-check 'moto[server]==5.2.5'
fi

if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  ci_log=$(mktemp)
  if ! npm ci --no-fund --no-audit --loglevel=error 2>"$ci_log"; then
    # Registries that do not serve every platform's optional binaries (e.g. unrs-resolver's) make npm
    # leave them out of the lock and then reject it in `npm ci`; `npm install` honours the same lock.
    echo "setup: npm ci refused the lockfile ($(grep -m1 -E 'Missing|ERR|error [a-z]' "$ci_log" | sed 's/^npm error //'));"
    echo "setup: installing with npm install from the same lockfile"
    npm install --no-fund --no-audit --loglevel=error
  fi
  rm -f "$ci_log"
fi

npm run --silent build
# doctor --fix fetches the jars and builds the NATS binaries with the machine's Go (local/nats-binaries.ts); it fails
# when Go is missing or older than the NATS modules need, naming what to install.
node_modules/.bin/node dist/bin/rmqbench.js doctor --fix
