// `--secret-stdin`: how the SSH launcher hands a remote engine its run secret and keeps a hold on
// it. The launcher writes the secret as the first line of the engine's stdin (never on a command
// line, where `ps` shows it; never in a file on a host it does not own) and then keeps stdin open
// for the whole run. stdin reaching EOF after that means the launcher is gone or wants the run to
// end: its stop() closes stdin, and a dropped SSH connection closes it too (sshd closes the
// pipes of a session it loses). Without a pty nothing else would end the remote engine, so EOF
// stops the run as SIGTERM does (StopRequests, stop_requests.h: run_finished "stopped", exit 143;
// StopDeadline, stop_deadline.h, for a run that does not end by itself).
//
// Only `--secret-stdin` watches stdin; an engine started from a shell or by the local launcher
// (stdin /dev/null, EOF at once) is unaffected.
#pragma once

#include "dist/net/secret.h"

namespace thresher::cli {

// Reads the first line of `fd` byte by byte (no buffering: nothing after the '\n' is consumed)
// and decodes it as a secret (hex or raw, see dist::parse_secret). Throws ConfigError when the
// stream ends before a newline or the secret is too short. The line is wiped after decoding.
dist::Secret read_secret_line(int fd);

}  // namespace thresher::cli
