#!/usr/bin/env bash
# rmqbench RabbitMQ node setup on Azure (run once by cloud-init; `forget-departed` by a timer).
#   boot             install RabbitMQ, read the Erlang cookie from Key Vault, start, form or join the cluster,
#                    create the admin user, apply the policies, then mark the node formed (health turns 200).
#   forget-departed  remove cluster members whose scale-set instance no longer exists.
# Azure has no RabbitMQ peer-discovery plugin; the join design and its failure cases are in bicep/README.md.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/rmqbench/node.env
STATE_DIR=/var/lib/rmqbench
FORMED_FLAG="$STATE_DIR/formed"
JOIN_TIMEOUT_SECONDS="${JOIN_TIMEOUT_SECONDS:-900}"
IMDS=http://169.254.169.254/metadata

log() { echo "rmqbench-node-setup: $*" >&2; logger -t rmqbench-node-setup -- "$*" || true; }
fail() { log "FAILED: $*"; exit 1; }

imds_token() { # $1: resource; role assignments can take minutes to propagate, hence the retries
  curl -sSf --retry 30 --retry-delay 10 --retry-all-errors -H Metadata:true \
    "$IMDS/identity/oauth2/token?api-version=2018-02-01&resource=$1&client_id=$IDENTITY_CLIENT_ID" | jq -r .access_token
}

key_vault_secret() { # $1: secret name; the value goes to stdout only, never to a file or the command line
  local token
  token="$(imds_token https://vault.azure.net)"
  curl -sSf --retry 30 --retry-delay 10 --retry-all-errors -H "Authorization: Bearer $token" \
    "https://$KEY_VAULT_NAME.vault.azure.net/secrets/$1?api-version=7.4" | jq -r .value
}

scale_set_members() { # "timeCreated computerName" of the scale set's VMs, oldest first
  local compute subscription group token
  compute="$(curl -sSf --retry 10 --retry-all-errors -H Metadata:true "$IMDS/instance/compute?api-version=2021-02-01")"
  subscription="$(jq -r .subscriptionId <<<"$compute")"
  group="$(jq -r .resourceGroupName <<<"$compute")"
  token="$(imds_token https://management.azure.com/)"
  curl -sSf --retry 10 --retry-all-errors -H "Authorization: Bearer $token" \
    "https://management.azure.com/subscriptions/$subscription/resourceGroups/$group/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01" |
    jq -r --arg scaleSet "/virtualmachinescalesets/${SCALE_SET_NAME,,}" '.value[]
      | select((.properties.virtualMachineScaleSet.id // "" | ascii_downcase | endswith($scaleSet)))
      | select(.properties.provisioningState != "Deleting")
      | "\(.properties.timeCreated) \(.properties.osProfile.computerName | ascii_downcase)"' | sort
}

install_rabbitmq() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q curl gnupg jq python3
  # Team RabbitMQ's signing key and apt repositories (Erlang and RabbitMQ), pinned to RABBITMQ_VERSION.
  curl -1sSfL --retry 5 "https://keys.openpgp.org/vks/v1/by-fingerprint/0A9AF2115F4687BD29803A206B73A36E6026DFCA" |
    gpg --dearmor --yes -o /usr/share/keyrings/com.rabbitmq.team.gpg
  local codename
  codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  cat >/etc/apt/sources.list.d/rabbitmq.list <<SOURCES
deb [arch=amd64 signed-by=/usr/share/keyrings/com.rabbitmq.team.gpg] https://deb1.rabbitmq.com/rabbitmq-erlang/ubuntu/$codename $codename main
deb [arch=amd64 signed-by=/usr/share/keyrings/com.rabbitmq.team.gpg] https://deb1.rabbitmq.com/rabbitmq-server/ubuntu/$codename $codename main
SOURCES
  apt-get update -q
  # The package would start a broker with a random cookie; keep it stopped until ours is in place.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  apt-get install -y -q "rabbitmq-server=${RABBITMQ_VERSION}-1"
  rm -f /usr/sbin/policy-rc.d
  apt-mark hold rabbitmq-server
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

start_broker() {
  systemctl enable rabbitmq-server
  systemctl restart rabbitmq-server
  rabbitmqctl -q await_startup --timeout 300
}

form_or_join() {
  local self deadline peer members
  self="$(hostname -s | tr '[:upper:]' '[:lower:]')"
  deadline=$((SECONDS + JOIN_TIMEOUT_SECONDS))
  while :; do
    mapfile -t members < <(scale_set_members | awk '{print $2}')
    # A peer that answers its health endpoint has finished forming or joining: it is in the cluster.
    for peer in "${members[@]}"; do
      [ "$peer" = "$self" ] && continue
      if curl -sf --max-time 3 "http://$peer:$HEALTH_PORT/healthz" >/dev/null; then
        log "joining the cluster through rabbit@$peer"
        rabbitmqctl -q stop_app
        rabbitmqctl -q reset
        rabbitmqctl -q join_cluster "rabbit@$peer"
        rabbitmqctl -q start_app
        return 0
      fi
    done
    # Nobody has formed yet: only the oldest instance starts a cluster, so that the others agree on one seed.
    if [ "${members[0]:-}" = "$self" ]; then
      log "no formed peer and this is the oldest instance: starting the cluster"
      return 0
    fi
    [ "$SECONDS" -lt "$deadline" ] || fail "no formed peer answered within ${JOIN_TIMEOUT_SECONDS}s (members: ${members[*]:-none})"
    sleep 10
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
  # Each entry is a rabbitmqctl argument vector from core/broker-config.ts policyCommandArgs(); idempotent.
  local vector args
  while IFS= read -r vector; do
    mapfile -t args < <(jq -r '.[]' <<<"$vector")
    rabbitmqctl -q "${args[@]}"
  done < <(jq -c '.[]' /etc/rmqbench/policy-commands.json)
}

boot() {
  mkdir -p "$STATE_DIR"
  chmod 0755 "$STATE_DIR"
  if [ -f "$FORMED_FLAG" ]; then
    log "already formed; nothing to do"
    return 0
  fi
  install_rabbitmq
  install_configuration
  start_broker
  form_or_join
  configure_users_and_policies
  touch "$FORMED_FLAG"
  log "node ready: $(rabbitmqctl -q cluster_status --formatter json | jq -c .running_nodes)"
}

forget_departed() {
  [ -f "$FORMED_FLAG" ] || return 0
  local members status node
  members="$(scale_set_members | awk '{print "rabbit@" $2}')"
  # Never act on an empty (failed) listing: that would forget the whole cluster.
  [ -n "$members" ] || return 0
  status="$(rabbitmqctl -q cluster_status --formatter json)"
  for node in $(jq -r '(.disk_nodes + .ram_nodes) - .running_nodes | .[]' <<<"$status"); do
    if ! grep -qxF "$node" <<<"$members"; then
      log "forgetting $node: its scale-set instance is gone"
      rabbitmqctl -q forget_cluster_node "$node" || log "could not forget $node"
    fi
  done
}

case "${1:-boot}" in
  boot) boot ;;
  forget-departed) forget_departed ;;
  *) fail "unknown command $1 (expected boot or forget-departed)" ;;
esac
