#!/usr/bin/env bash
# Installs Apache Kafka's performance tools on the rmqbench Azure load generator, as the AWS load generator's boot does
# (cdk/user-data/load-generator.ts kafkaToolsBootCommands): the same pinned jars, the same `kafka-tool <main class>`
# wrapper and JVM options (kafkaToolWrapper), the same log4j2 configuration (core/kafka/kafka-broker-log4j.ts KAFKA_TOOL_LOG4J),
# and the same READY file last, which the controller's scripts (lambdas/shared/kafka-load-generator.ts) wait for.
# Usage: rmqbench-kafka-tools-setup <kafka-version>
# The jars come from Maven Central; each must match the sha256 in the manifest (lines "<sha256>  <path under maven2/>",
# bicep/cloud-init/kafka-<version>.sha256, the pins of cdk/kafka-artifacts.ts), or they are removed and the setup fails.
# The download and the check are rmqbench-jars.sh's, shared with rmqbench-loadgen-setup.sh.
# RMQBENCH_KAFKA_TOOLS_ROOT (a prefix for every path written), RMQBENCH_MAVEN_REPOSITORY, RMQBENCH_KAFKA_MANIFEST and
# RMQBENCH_JARS_LIB exist for the tests, which run this script against a local copy of the repository.
set -euo pipefail
# shellcheck source=rmqbench-jars.sh
. "${RMQBENCH_JARS_LIB:-/usr/local/lib/rmqbench/rmqbench-jars.sh}"
version="${1:?kafka version}"
root="${RMQBENCH_KAFKA_TOOLS_ROOT:-}"
repository="${RMQBENCH_MAVEN_REPOSITORY:-https://repo1.maven.org/maven2}"
manifest="${RMQBENCH_KAFKA_MANIFEST:-/etc/rmqbench/kafka.sha256}"
log4j="${RMQBENCH_KAFKA_TOOL_LOG4J:-/etc/rmqbench/kafka-tool-log4j2.properties}"
home=/opt/kafka-tools
command=/usr/local/bin/kafka-tool

grep -q "/kafka-tools/$version/kafka-tools-$version.jar\$" "$manifest" ||
  { echo "rmqbench-kafka-tools-setup: $manifest does not pin kafka-tools $version" >&2; exit 1; }

mkdir -p "$root$home/lib" "$(dirname "$root$command")"
rm -f "$root$home/READY"
rmqbench_download_jars "$manifest" "$repository" "$root$home"
if ! rmqbench_check_jars "$root$home"; then
  rm -f "$root$home"/lib/*.jar
  echo "rmqbench-kafka-tools-setup: Kafka tools $version: checksum mismatch, jars removed" >&2
  exit 1
fi
install -m 0644 "$log4j" "$root$home/log4j2-tool.properties"
# The wrapper names the paths on the VM ($home), byte for byte kafkaToolWrapper(home) of the AWS load generator.
printf '#!/bin/sh\nexec java -Xmx1g -XX:+UseParallelGC -Duser.language=en -Duser.country=US -Duser.timezone=UTC -Dlog4j2.configurationFile=%s/log4j2-tool.properties -cp '"'"'%s/lib/*'"'"' "$@"\n' "$home" "$home" >"$root$command"
chmod 0755 "$root$command"
echo "$version" >"$root$home/READY"
echo "rmqbench-kafka-tools-setup: Kafka tools $version ready" >&2
