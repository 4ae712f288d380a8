# Sourced by the multi-node benchmarks: the engine binary, a work folder removed on exit (plus
# whatever cleanup the script registers in CLEANUP), a fresh run secret, and loopback nodes.
#   source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" NAME
# sets ROOT, E (thresher-engine; THRESHER_BIN overrides its folder), WORK (/tmp/thresher-NAME.*,
# holding WORK/secret, mode 0600).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
E="${THRESHER_BIN:-$ROOT/build/release/bin}/thresher-engine"
WORK="$(mktemp -d "/tmp/thresher-$1.XXXXXX")"
CLEANUP="${CLEANUP:-}"
trap 'eval "$CLEANUP"; rm -rf "$WORK"' EXIT
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/secret")

# loopback_nodes N: a --nodes list of N loopback UDP ports nobody holds right now (all held while
# picking, so they differ).
loopback_nodes() {
  python3 -c "
import socket
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range($1)]
for s in socks: s.bind(('127.0.0.1', 0))
print(','.join('127.0.0.1:%d' % s.getsockname()[1] for s in socks))"
}
