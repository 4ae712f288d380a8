// Asking the person at the terminal for a secret (an SSH key's passphrase, a password), for
// `check` and `run`: on /dev/tty with echo off, one prompt at a time (hosts connect in parallel
// threads and may all ask at once). No terminal (a script, a test): no answer, and the SSH
// session reports that none was given. Used as ssh::AskSecret.
#pragma once

#include <optional>
#include <string>

namespace thresher::launcher::cli {

std::optional<std::string> ask_on_terminal(const std::string& prompt);

}  // namespace thresher::launcher::cli
