# Shared by the walk-through scripts (readme-walkthrough.sh, docs-walkthrough.sh):
# source it after setting src (the repository) and work (a fresh temporary
# folder) and defining fail MESSAGE. Background processes started by the
# script go in pids; cleanup ends them and removes work on exit.

pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# free_port prints a loopback port nothing listens on.
# Ports come from below the kernel's ephemeral range, where parallel tests'
# listeners on port 0 and outgoing connections take theirs: a port found free
# here is not taken by one of them before the process that will bind it does.
ephemeral_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$ephemeral_low" -gt 21000 ] 2>/dev/null || ephemeral_low=32768
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % (ephemeral_low - 20000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  fail "no free port"
}

# fresh_copy DEST copies the repository as a new user would have it: every
# tracked and untracked-but-not-ignored file, none of the build outputs or
# caches (without git: what .gitignore ignores at the top is left out).
fresh_copy() {
  mkdir "$1"
  if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) |
      (cd "$1" && tar -xf -)
  else
    (cd "$src" && tar --exclude=./bin --exclude=./build --exclude=./.ora --exclude=./tools/node_modules \
      --exclude=./infra/cdk.out --exclude=./.cdk-home --exclude=./.jsii-cache --exclude=./.cache -cf - .) |
      (cd "$1" && tar -xf -)
  fi
}
