// read_secret_line: see stdin_control.h.
#include "cli/stdin_control.h"

#include <cerrno>
#include <cstring>  // explicit_bzero
#include <string>
#include <unistd.h>

#include "core/error.h"

namespace thresher::cli {

dist::Secret read_secret_line(int fd) {
    std::string line;
    // One byte at a time: a buffered reader would swallow whatever follows the line, and the
    // secret is short (64 hex digits), so the cost is nothing.
    for (;;) {
        char c = 0;
        const ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (!line.empty()) ::explicit_bzero(line.data(), line.size());
            throw ConfigError("--secret-stdin: stdin ended before the secret's line (the launcher writes the run "
                              "secret and a newline first)");
        }
        if (c == '\n') break;
        line.push_back(c);
        if (line.size() > 4096) {
            ::explicit_bzero(line.data(), line.size());
            throw ConfigError("--secret-stdin: the first line of stdin is over 4096 bytes; not a run secret");
        }
    }
    try {
        dist::Secret secret = dist::parse_secret(line, "--secret-stdin");
        ::explicit_bzero(line.data(), line.size());
        return secret;
    } catch (...) {
        ::explicit_bzero(line.data(), line.size());
        throw;
    }
}

}  // namespace thresher::cli
