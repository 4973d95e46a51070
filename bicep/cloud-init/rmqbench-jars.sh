# shellcheck shell=bash
# Pinned jars from Maven Central, for the load generator's setup scripts (rmqbench-loadgen-setup.sh installs PerfTest,
# rmqbench-kafka-tools-setup.sh Apache Kafka's tools), which source this file: cloud-init writes it to
# /usr/local/lib/rmqbench/rmqbench-jars.sh (cloud-init/loadgen.yaml). Functions only; sourcing it does nothing else.
# A manifest has one line "<sha256>  <path under maven2/>" per jar (cloud-init/perf-test-<version>.sha256,
# cloud-init/kafka-<version>.sha256).
# Each step checks its own status: a caller's `set -e` does not reach into a function it calls from a condition.

# rmqbench_download_jars MANIFEST REPOSITORY HOME
# Downloads every jar MANIFEST lists from REPOSITORY (a Maven repository's base URL) into HOME/lib, and writes
# HOME/SHA256SUMS with each jar's pinned sum for rmqbench_check_jars. Returns non-zero at the first download that fails.
rmqbench_download_jars() {
  local manifest="$1" repository="$2" home="$3" sum path jar
  mkdir -p "$home/lib" || return
  : >"$home/SHA256SUMS" || return
  while read -r sum path; do
    [ -n "$sum" ] || continue
    jar="$(basename "$path")"
    curl -sSf --retry 5 --retry-all-errors -o "$home/lib/$jar" "$repository/$path" || return
    echo "$sum  lib/$jar" >>"$home/SHA256SUMS" || return
  done <"$manifest"
}

# rmqbench_check_jars HOME
# Succeeds when every jar rmqbench_download_jars put into HOME/lib matches its pinned sha256; sha256sum names the others.
rmqbench_check_jars() {
  (cd "$1" && sha256sum --check --strict --quiet SHA256SUMS)
}
