#!/usr/bin/env bash
# Installs Java and PerfTest on the rmqbench load generator.
# Usage: rmqbench-loadgen-setup <perf-test-version> <java-apt-package>
# PerfTest and its dependencies come from Maven Central; each jar must match the sha256 in
# /etc/rmqbench/perf-test.sha256 (lines "<sha256>  <path under maven2/>"), or the setup fails. The download and the
# check are rmqbench-jars.sh's, shared with rmqbench-kafka-tools-setup.sh (RMQBENCH_JARS_LIB names it elsewhere).
set -euo pipefail
# shellcheck source=rmqbench-jars.sh
. "${RMQBENCH_JARS_LIB:-/usr/local/lib/rmqbench/rmqbench-jars.sh}"
version="${1:?perf-test version}"
java_package="${2:?java package}"
manifest=/etc/rmqbench/perf-test.sha256
repository=https://repo1.maven.org/maven2
home="/opt/perf-test/$version"

grep -q "/perf-test/$version/perf-test-$version.jar\$" "$manifest" ||
  { echo "rmqbench-loadgen-setup: $manifest does not pin perf-test $version" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "$java_package" curl jq

rmqbench_download_jars "$manifest" "$repository" "$home"
rmqbench_check_jars "$home"

cat >/usr/local/bin/perf-test <<WRAPPER
#!/bin/sh
exec java \${PERF_TEST_JAVA_OPTS:-} -cp '$home/lib/*' com.rabbitmq.perf.PerfTest "\$@"
WRAPPER
chmod 0755 /usr/local/bin/perf-test
# PerfTest takes credentials only in its --uri arguments: with hidepid=2 no other user can read another's /proc/<pid>
# (cmdline included), https://man7.org/linux/man-pages/man5/proc.5.html ("hidepid=2"). Persisted for reboots.
mount -o remount,hidepid=2 /proc
grep -q '^proc /proc proc' /etc/fstab || echo 'proc /proc proc defaults,hidepid=2 0 0' >>/etc/fstab
perf-test --version
echo "rmqbench-loadgen-setup: PerfTest $version ready" >&2
