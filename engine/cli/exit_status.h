// Exit statuses of thresher-engine beyond 0 (ok) and 1 (failed): DESIGN.md "The event contract".
#pragma once

namespace thresher::cli {

// The engine's exit code after a stop (as a shell reports a SIGTERM'd process: 128 + 15), whether
// the run ended at its next iteration, a stop deadline ended it, or a second signal did.
constexpr int kExitStopped = 143;

}  // namespace thresher::cli
