#!/bin/bash
# systemctl for a simulated VM (test/simulated-vm): no systemd runs inside a namespace, so this stand-in starts a
# unit's ExecStart the way systemd would for the settings rmqbench's units use (User, Group, UMask,
# WorkingDirectory, EnvironmentFile, StandardOutput/StandardError append:, Type=notify), in its own session, and
# stops it by killing that session. Like systemd, start of a Type=notify unit returns once the service sent READY=1
# to $NOTIFY_SOCKET (RabbitMQ does when it has booted), within TimeoutStartSec. Timers are only recorded (the test runs `rmqbench-node-setup forget-departed` itself).
set -euo pipefail
RUN_DIR=/run/rmqbench-sim
mkdir -p "$RUN_DIR"

unit_file() {
  local name="$1"
  case "$name" in *.service | *.timer) ;; *) name="$name.service" ;; esac
  for dir in /etc/systemd/system /lib/systemd/system; do
    if [ -f "$dir/$name" ]; then echo "$dir/$name"; return 0; fi
  done
  echo "systemctl (simulated VM): unit $name not found" >&2
  return 5
}

setting() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

stop_unit() {
  local pid_file="$RUN_DIR/${1%.service}.pid" pid
  [ -f "$pid_file" ] || return 0
  pid="$(cat "$pid_file")"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$pid_file"
}

start_unit() {
  local file user group umask_value directory environment exec_start out err home
  file="$(unit_file "$1")"
  case "$file" in *.timer) touch "$RUN_DIR/$(basename "$file").enabled"; return 0 ;; esac
  user="$(setting "$file" User)"; group="$(setting "$file" Group)"
  umask_value="$(setting "$file" UMask)"; directory="$(setting "$file" WorkingDirectory)"
  environment="$(setting "$file" EnvironmentFile)"; exec_start="$(setting "$file" ExecStart)"
  out="$(setting "$file" StandardOutput)"; err="$(setting "$file" StandardError)"
  out="${out#append:}"; err="${err#append:}"
  [ -n "$out" ] && [ "$out" != journal ] || out="$RUN_DIR/${1%.service}.out"
  [ -n "$err" ] && [ "$err" != journal ] || err="$RUN_DIR/${1%.service}.err"
  # DynamicUser=yes: an unprivileged user, like the transient one systemd would allocate.
  if grep -q '^DynamicUser=yes' "$file"; then user=nobody; group=nogroup; fi
  home="$(getent passwd "${user:-root}" | cut -d: -f6)"
  local notify_env=() waiter=""
  if [ "$(setting "$file" Type)" = notify ]; then
    local socket="$RUN_DIR/${1%.service}.notify" timeout
    timeout="$(setting "$file" TimeoutStartSec)"
    rm -f "$socket"
    python3 -c '
import os, socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
server.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
server.settimeout(float(sys.argv[2]))
while "READY=1" not in server.recv(4096).decode().split("\n"):
    pass
' "$socket" "${timeout:-90}" &
    waiter=$!
    for _ in $(seq 1 100); do [ -S "$socket" ] && break; sleep 0.05; done
    notify_env=("NOTIFY_SOCKET=$socket")
  fi
  local command="cd ${directory:-/}; umask ${umask_value:-0022}; "
  [ -n "$environment" ] && command+="set -a; . ${environment#-}; set +a; "
  command+="exec ${exec_start#-}"
  local privileges=()
  [ -n "$user" ] && privileges=(setpriv --reuid "$user" --regid "${group:-$user}" --init-groups)
  setsid env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" LANG=C.UTF-8 "${notify_env[@]}" \
    "${privileges[@]}" bash -c "$command" >>"$out" 2>>"$err" </dev/null &
  echo "$!" >"$RUN_DIR/${1%.service}.pid"
  if [ -n "$waiter" ] && ! wait "$waiter"; then
    echo "systemctl (simulated VM): $1 did not report READY=1 within its start timeout" >&2
    return 1
  fi
}

now=false
args=()
for arg in "$@"; do
  case "$arg" in --now) now=true ;; --*) ;; *) args+=("$arg") ;; esac
done
verb="${args[0]:-}"
units=("${args[@]:1}")
case "$verb" in
  daemon-reload) ;;
  enable) if $now; then for unit in "${units[@]}"; do stop_unit "$unit"; start_unit "$unit"; done; fi ;;
  start | restart) for unit in "${units[@]}"; do stop_unit "$unit"; start_unit "$unit"; done ;;
  stop) for unit in "${units[@]}"; do stop_unit "$unit"; done ;;
  # `show --property=MainPID --value <unit>` (the fault step's kill): the unit's main process, 0 when it has none.
  show) for unit in "${units[@]}"; do
      pid_file="$RUN_DIR/${unit%.service}.pid"
      if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then cat "$pid_file"; else echo 0; fi
    done ;;
  *) echo "systemctl (simulated VM): '$verb' is not simulated" >&2; exit 1 ;;
esac
