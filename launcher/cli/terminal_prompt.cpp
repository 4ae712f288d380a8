// ask_on_terminal: see terminal_prompt.h.
#include "terminal_prompt.h"

#include <fcntl.h>
#include <mutex>
#include <termios.h>
#include <unistd.h>

namespace thresher::launcher::cli {

std::optional<std::string> ask_on_terminal(const std::string& prompt) {
    static std::mutex one_at_a_time;
    const std::lock_guard lock(one_at_a_time);
    const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    termios saved{};
    const bool is_tty = ::tcgetattr(fd, &saved) == 0;
    if (is_tty) {
        termios quiet = saved;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        ::tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    (void)!::write(fd, prompt.data(), prompt.size());
    std::string answer;
    char c = 0;
    bool got_line = false;
    while (::read(fd, &c, 1) == 1) {
        if (c == '\n') {
            got_line = true;
            break;
        }
        answer.push_back(c);
    }
    if (is_tty) ::tcsetattr(fd, TCSAFLUSH, &saved);
    (void)!::write(fd, "\n", 1);
    ::close(fd);
    if (!got_line) return std::nullopt;
    return answer;
}

}  // namespace thresher::launcher::cli
