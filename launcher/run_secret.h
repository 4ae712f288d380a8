// The run secret: a fresh 256-bit key per run that the engines sign every datagram with
// (HMAC-SHA256, DESIGN.md "Network"). It reaches an engine only as a mode-0600 file (local
// nodes) or on stdin (SSH nodes), never on a command line, where `ps` would show it.
#pragma once

#include <QByteArray>
#include <QString>

namespace thresher::launcher {

// 32 bytes from the operating system's CSPRNG (QRandomGenerator::system()), as 64 hex digits.
QByteArray make_run_secret();

// A fresh per-run nonce (engine --run-nonce, engine/dist/net/run_key.h): 16 bytes from the same
// CSPRNG as 32 hex digits. Not secret; it keeps runs that share a secret apart, so every engine
// of one run gets the same nonce and every run a new one.
QByteArray make_run_nonce();

// Creates `path` with mode 0600 from the start (no moment where others could read it) and
// writes `secret` and a newline. Throws std::runtime_error naming the path on failure.
void write_secret_file(const QString& path, const QByteArray& secret);

}  // namespace thresher::launcher
