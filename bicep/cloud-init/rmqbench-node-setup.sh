#!/usr/bin/env bash
# rmqbench RabbitMQ node setup on Azure (run once by cloud-init; `forget-departed` by a timer).
#   boot             install RabbitMQ, read the Erlang cookie (and the TLS certificate) from Key Vault, start, form or
#                    join the cluster, create the admin user, apply the policies, then mark the node formed (health 200).
#   forget-departed  remove cluster members whose VM no longer exists in the scale set (never one that is only stopped).
# Azure has no RabbitMQ peer-discovery plugin; the join design and its failure cases are in bicep/README.md.
# Sourced (not executed), the file only defines its functions: the unit tests call them with a temporary root.
set -euo pipefail
STATE_DIR=/var/lib/rmqbench
FORMED_FLAG="$STATE_DIR/formed"
# Written when boot fails: the health endpoint reports it, so that peers stop waiting for this node to seed.
FAILED_FLAG="$STATE_DIR/failed"
# Written right before this node joins through a formed peer: the health endpoint then reports "joining", and no
# other node starts a join until this one is formed (see form_or_join).
JOINING_FLAG="$STATE_DIR/joining"
# The one test seam (absent on Azure, nothing creates it): when this file exists it is sourced right before the
# package installation and may redefine `install_rabbitmq` (test/simulated-vm uses Debian's installed rabbitmq-server).
INSTALL_OVERRIDE_FILE=/etc/rmqbench/install-override.sh
TLS_DIR=/etc/rabbitmq/tls
IMDS=http://169.254.169.254/metadata

log() { echo "rmqbench-node-setup: $*" >&2; logger -t rmqbench-node-setup -- "$*" 2>/dev/null || true; }
fail() { log "FAILED: $*"; exit 1; }

# Erlang release each RabbitMQ series runs on, pinned exactly as RabbitMQ's Debian/Ubuntu guide does:
# - 3.13 requires Erlang 26 and does not run on 27; the guide installs "1:26.2.5.13-1" and shows the
#   /etc/apt/preferences.d/erlang pin (rabbitmq/rabbitmq-website versioned_docs/version-3.13/install-debian.md,
#   "Apt with Team RabbitMQ's Repositories" and "Debian Package Version and Repository Pinning";
#   https://www.rabbitmq.com/docs/3.13/install-debian#apt-pinning).
# - 4.0 and 4.1 support Erlang 26.2 to 27.x (https://www.rabbitmq.com/docs/which-erlang#compatibility-matrix,
#   versioned_docs/version-4.1/install-debian.md "27.x ... Supported starting with 4.0.0"); 27.3.4.2 is the 27.x build
#   Team RabbitMQ's apt repository publishes next to 4.1.4 (an exact version: only the first deployment proves it is
#   still served; apt then names the missing version instead of picking Erlang 28).
erlang_version_for() { # $1: RabbitMQ version (x.y.z)
  case "$1" in
    3.13.*) echo '1:26.2.5.13-1' ;;
    4.0.* | 4.1.*) echo '1:27.3.4.2-1' ;;
    *) fail "RabbitMQ $1 has no pinned Erlang release here (expected 3.13.x, 4.0.x or 4.1.x)" ;;
  esac
}

write_apt_sources() { # $1: root directory, $2: distribution code name
  # Both mirrors the guide lists for Team RabbitMQ's apt repositories (deb1 and deb2), amd64 only.
  local root="$1" codename="$2" repo host
  mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/apt.conf.d"
  {
    for repo in rabbitmq-erlang rabbitmq-server; do
      for host in deb1.rabbitmq.com deb2.rabbitmq.com; do
        echo "deb [arch=amd64 signed-by=/usr/share/keyrings/com.rabbitmq.team.gpg] https://$host/$repo/ubuntu/$codename $codename main"
      done
    done
  } >"$root/etc/apt/sources.list.d/rabbitmq.list"
  # A mirror that drops a connection is retried instead of failing the boot (apt.conf(5): Acquire::Retries).
  echo 'Acquire::Retries "5";' >"$root/etc/apt/apt.conf.d/80rmqbench-retries"
}

write_apt_pins() { # $1: root directory, $2: RabbitMQ version
  # The guide's preference files: every erlang* package and rabbitmq-server at one exact version. Priority 1001 (> 1000)
  # wins over any newer version in the repositories, so apt can never pull Erlang 27 under RabbitMQ 3.13.
  local root="$1" erlang
  erlang="$(erlang_version_for "$2")"
  mkdir -p "$root/etc/apt/preferences.d"
  printf 'Package: erlang*\nPin: version %s\nPin-Priority: 1001\n' "$erlang" >"$root/etc/apt/preferences.d/erlang"
  printf 'Package: rabbitmq-server\nPin: version %s-1\nPin-Priority: 1001\n' "$2" >"$root/etc/apt/preferences.d/rabbitmq"
}

# nft for a partition fault (core/failover/cloud-fault.ts faultScript): Ubuntu packages nftables for 24.04, but the server image is
# not documented to ship it. Not fatal: a partition installs it itself when this failed.
install_nftables() {
  command -v nft >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables || log "nftables not installed; a partition fault installs it"
}

install_rabbitmq() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q curl gnupg jq python3
  # Team RabbitMQ's signing key, as the guide fetches it.
  curl -1sSfL --retry 5 "https://keys.openpgp.org/vks/v1/by-fingerprint/0A9AF2115F4687BD29803A206B73A36E6026DFCA" |
    gpg --dearmor --yes -o /usr/share/keyrings/com.rabbitmq.team.gpg
  write_apt_sources / "$(. /etc/os-release && echo "$VERSION_CODENAME")"
  write_apt_pins / "$RABBITMQ_VERSION"
  apt-get update -q
  # The package would start a broker with a random cookie; keep it stopped until ours is in place.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  apt-get install -y -q "rabbitmq-server=${RABBITMQ_VERSION}-1"
  rm -f /usr/sbin/policy-rc.d
  apt-mark hold rabbitmq-server
}

imds_token() { # $1: resource; role assignments can take minutes to propagate, hence the retries
  curl -sSf --retry 30 --retry-delay 10 --retry-all-errors -H Metadata:true \
    "$IMDS/identity/oauth2/token?api-version=2018-02-01&resource=$1&client_id=$IDENTITY_CLIENT_ID" | jq -r .access_token
}

bearer_get() { # $1: token, $2: URL. The token goes to curl through stdin (-K -), never onto its command line.
  printf 'header = "Authorization: Bearer %s"\n' "$1" | curl -sSf --retry 30 --retry-delay 10 --retry-all-errors -K - "$2"
}

key_vault_secret() { # $1: secret name; the value goes to stdout only, never to a file or the command line
  bearer_get "$(imds_token https://vault.azure.net)" "https://$KEY_VAULT_NAME.vault.azure.net/secrets/$1?api-version=7.4" | jq -j .value
}

scale_set_members() { # "timeCreated computerName" of the scale set's VMs, oldest first; $1=all also lists VMs being deleted
  local compute subscription group token
  compute="$(curl -sSf --retry 10 --retry-all-errors -H Metadata:true "$IMDS/instance/compute?api-version=2021-02-01")"
  subscription="$(jq -r .subscriptionId <<<"$compute")"
  group="$(jq -r .resourceGroupName <<<"$compute")"
  token="$(imds_token https://management.azure.com/)"
  # Virtual Machines - List (https://learn.microsoft.com/rest/api/compute/virtual-machines/list): every VM of the
  # group that exists, stopped or deallocated ones included; a deleted VM is absent. computerName is kept exactly:
  # RabbitMQ names a node rabbit@<hostname -s> and Erlang node names are case-sensitive atoms.
  bearer_get "$token" \
    "https://management.azure.com/subscriptions/$subscription/resourceGroups/$group/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01" |
    jq -r --arg scaleSet "/virtualmachinescalesets/${SCALE_SET_NAME,,}" --arg all "${1:-}" '.value[]
      | select((.properties.virtualMachineScaleSet.id // "" | ascii_downcase | endswith($scaleSet)))
      | select($all == "all" or .properties.provisioningState != "Deleting")
      | "\(.properties.timeCreated) \(.properties.osProfile.computerName)"' | sort
}

install_configuration() {
  install -m 0644 -o rabbitmq -g rabbitmq /etc/rmqbench/rabbitmq.conf /etc/rabbitmq/rabbitmq.conf
  install -m 0644 -o rabbitmq -g rabbitmq /etc/rmqbench/enabled_plugins /etc/rabbitmq/enabled_plugins
  local cookie=/var/lib/rabbitmq/.erlang.cookie
  (umask 077 && key_vault_secret "$ERLANG_COOKIE_SECRET_NAME" >"$cookie.new")
  [ -s "$cookie.new" ] || fail "Key Vault secret $ERLANG_COOKIE_SECRET_NAME is empty or unreadable"
  chown rabbitmq:rabbitmq "$cookie.new"
  chmod 0400 "$cookie.new"
  mv -f "$cookie.new" "$cookie"
}

install_tls() {
  # Public load balancer only: cluster.bicep leaves both names empty when the load balancer is internal.
  [ -n "${TLS_CERTIFICATE_SECRET_NAME:-}" ] || return 0
  [ -n "${TLS_PRIVATE_KEY_SECRET_NAME:-}" ] || fail "TLS_CERTIFICATE_SECRET_NAME is set but TLS_PRIVATE_KEY_SECRET_NAME is empty (both or neither)"
  install -d -m 0750 -o root -g rabbitmq "$TLS_DIR"
  (umask 077 && key_vault_secret "$TLS_CERTIFICATE_SECRET_NAME" >"$TLS_DIR/cert.pem")
  (umask 077 && key_vault_secret "$TLS_PRIVATE_KEY_SECRET_NAME" >"$TLS_DIR/key.pem")
  grep -q 'BEGIN CERTIFICATE' "$TLS_DIR/cert.pem" || fail "Key Vault secret $TLS_CERTIFICATE_SECRET_NAME is not a PEM certificate"
  grep -q 'PRIVATE KEY' "$TLS_DIR/key.pem" || fail "Key Vault secret $TLS_PRIVATE_KEY_SECRET_NAME is not a PEM private key"
  chown rabbitmq:rabbitmq "$TLS_DIR/cert.pem" "$TLS_DIR/key.pem"
  chmod 0640 "$TLS_DIR/cert.pem"
  chmod 0600 "$TLS_DIR/key.pem"
  # AMQPS and HTTPS next to the plain listeners (kept for in-VNet traffic). Keys from RabbitMQ's TLS guide
  # (https://www.rabbitmq.com/docs/ssl#enabling-tls: listeners.ssl.default, ssl_options.*) and management guide
  # (https://www.rabbitmq.com/docs/management#single-listener-https: management.ssl.port/certfile/keyfile).
  # Clients are not asked for certificates: they authenticate with the admin password, now inside TLS.
  cat >>/etc/rabbitmq/rabbitmq.conf <<CONF
listeners.ssl.default = ${AMQPS_PORT:-5671}
ssl_options.certfile = $TLS_DIR/cert.pem
ssl_options.keyfile = $TLS_DIR/key.pem
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
management.ssl.port = ${MANAGEMENT_TLS_PORT:-15671}
management.ssl.certfile = $TLS_DIR/cert.pem
management.ssl.keyfile = $TLS_DIR/key.pem
CONF
}

start_broker() {
  systemctl enable rabbitmq-server
  systemctl restart rabbitmq-server
  rabbitmqctl -q await_startup --timeout 300
}

peer_state() { # formed | failed | joining | booting | unreachable, from the peer's health endpoint
  curl -sf --max-time 3 --retry 1 "http://$1:$HEALTH_PORT/state" 2>/dev/null || echo unreachable
}

join_through() { # $1: a formed peer's host name
  log "joining the cluster through rabbit@$1"
  touch "$JOINING_FLAG"
  rabbitmqctl -q stop_app
  rabbitmqctl -q reset
  rabbitmqctl -q join_cluster "rabbit@$1"
  rabbitmqctl -q start_app
}

form_or_join() {
  local self deadline peer seed members formed busy older
  # Exactly `hostname -s`, the host part RabbitMQ puts in its node name (https://www.rabbitmq.com/docs/clustering#node-names).
  self="$(hostname -s)"
  deadline=$((SECONDS + JOIN_TIMEOUT_SECONDS))
  while :; do
    mapfile -t members < <(scale_set_members | awk '{print $2}')
    declare -A states=()
    formed="" busy="" older=1
    for peer in "${members[@]}"; do
      if [ "$peer" = "$self" ]; then
        older=0
        continue
      fi
      states[$peer]="$(peer_state "$peer")"
      # A formed peer has finished forming or joining: it is in the cluster.
      if [ "${states[$peer]}" = formed ]; then formed="${formed:-$peer}"; fi
      # One node joins at a time, oldest first: RabbitMQ's own peer discovery joins under a cluster-wide lock so that
      # nodes booting in parallel never form or join concurrently (rabbitmq/rabbitmq-server#3075, "Remove randomized
      # startup delays"); two joins at once can leave a node whose Mnesia stops during start_app.
      if [ "${states[$peer]}" = joining ]; then busy="${busy:-$peer is joining}"; fi
      if [ "$older" = 1 ] && [ "${states[$peer]}" = booting ]; then busy="${busy:-$peer (older) is booting}"; fi
    done
    if [ -n "$formed" ] && [ -z "$busy" ]; then
      join_through "$formed"
      return 0
    fi
    if [ -z "$formed" ]; then
      # Nobody has formed: the seed is the oldest instance that has not reported a failed boot. Every node reads the
      # same listing and the same states, and a failed node never seeds (its boot has ended), so there is one seed.
      seed=""
      for peer in "${members[@]}"; do
        if [ "$peer" != "$self" ] && [ "${states[$peer]}" = failed ]; then continue; fi
        seed="$peer"
        break
      done
      if [ "$seed" = "$self" ]; then
        log "no formed peer and this is the oldest instance that has not failed: starting the cluster"
        return 0
      fi
    fi
    [ "$SECONDS" -lt "$deadline" ] ||
      fail "could not form or join within ${JOIN_TIMEOUT_SECONDS}s (formed peer: ${formed:-none}; waiting for: ${busy:-seed ${seed:-none}}; members: ${members[*]:-none})"
    sleep "${JOIN_POLL_SECONDS:-10}"
  done
}

configure_users_and_policies() {
  local password
  password="$(key_vault_secret "$ADMIN_PASSWORD_SECRET_NAME")"
  [ -n "$password" ] || fail "Key Vault secret $ADMIN_PASSWORD_SECRET_NAME is empty or unreadable"
  # Users are cluster-wide: a joining node finds the user already there. The password goes through stdin.
  if rabbitmqctl -q list_users --formatter json | jq -e --arg user "$RABBITMQ_ADMIN_USERNAME" 'any(.[]; .user == $user)' >/dev/null; then
    printf '%s\n' "$password" | rabbitmqctl -q change_password "$RABBITMQ_ADMIN_USERNAME"
  else
    printf '%s\n' "$password" | rabbitmqctl -q add_user "$RABBITMQ_ADMIN_USERNAME"
  fi
  rabbitmqctl -q set_user_tags "$RABBITMQ_ADMIN_USERNAME" administrator
  rabbitmqctl -q set_permissions -p / "$RABBITMQ_ADMIN_USERNAME" '.*' '.*' '.*'
  rabbitmqctl -q delete_user guest 2>/dev/null || true
  # Each entry is a rabbitmqctl argument vector from core/broker/broker-config.ts policyCommandArgs(); idempotent.
  local vector args
  while IFS= read -r vector; do
    mapfile -t args < <(jq -r '.[]' <<<"$vector")
    rabbitmqctl -q "${args[@]}"
  done < <(jq -c '.[]' /etc/rmqbench/policy-commands.json)
}

record_boot_result() { # EXIT trap of boot: a failed boot is recorded for the peers (see form_or_join)
  local status=$?
  if [ "$status" -ne 0 ] && [ ! -f "$FORMED_FLAG" ]; then
    echo "boot exited with status $status" >"$FAILED_FLAG"
  fi
}

boot() {
  mkdir -p "$STATE_DIR"
  chmod 0755 "$STATE_DIR"
  if [ -f "$FORMED_FLAG" ]; then
    log "already formed; nothing to do"
    return 0
  fi
  # A boot run again (by hand, after a failure) starts from neither flag: a stale "joining" would hold the peers back.
  rm -f "$FAILED_FLAG" "$JOINING_FLAG"
  trap record_boot_result EXIT
  # shellcheck source=/dev/null
  if [ -f "$INSTALL_OVERRIDE_FILE" ]; then . "$INSTALL_OVERRIDE_FILE"; fi
  install_rabbitmq
  install_nftables
  install_configuration
  install_tls
  start_broker
  form_or_join
  configure_users_and_policies
  touch "$FORMED_FLAG"
  log "node ready: $(rabbitmqctl -q cluster_status --formatter json | jq -c .running_nodes)"
}

forget_departed() {
  [ -f "$FORMED_FLAG" ] || return 0
  local members status node
  # Every VM that still exists, whatever its power or provisioning state: a stopped member comes back.
  members="$(scale_set_members all | awk '{print "rabbit@" $2}')"
  # Never act on an empty (failed) listing: that would forget the whole cluster.
  [ -n "$members" ] || return 0
  status="$(rabbitmqctl -q cluster_status --formatter json)"
  for node in $(jq -r '(.disk_nodes + .ram_nodes) - .running_nodes | .[]' <<<"$status"); do
    if ! grep -qxF "$node" <<<"$members"; then
      log "forgetting $node: its VM no longer exists in the scale set"
      rabbitmqctl -q forget_cluster_node "$node" || log "could not forget $node"
    fi
  done
}

main() {
  # shellcheck source=/dev/null
  . /etc/rmqbench/node.env
  JOIN_TIMEOUT_SECONDS="${JOIN_TIMEOUT_SECONDS:-900}"
  case "${1:-boot}" in
    boot) boot ;;
    forget-departed) forget_departed ;;
    *) fail "unknown command $1 (expected boot or forget-departed)" ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
