// The CLI's stderr: progress redrawn in place on a terminal, plain lines elsewhere; see
// terminal_output.h.
#include "terminal_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace thresher::launcher::cli {

namespace {
constexpr int kRedrawMs = 100;
}

TerminalOutput::TerminalOutput(std::FILE* out) : out_(out), tty_(::isatty(::fileno(out)) == 1) {
    pending_.setSingleShot(true);
    QObject::connect(&pending_, &QTimer::timeout, [this] { redraw(); });
}

int TerminalOutput::width() const {
    winsize ws{};
    if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
    return 100;
}

void TerminalOutput::clear_line() {
    if (shown_) std::fputs("\r\x1b[K", out_);
    shown_ = false;
}

void TerminalOutput::message(const QString& line) {
    if (tty_) clear_line();
    std::fputs(qPrintable(line + '\n'), out_);
    if (tty_ && !line_.isEmpty()) redraw();
    std::fflush(out_);
}

void TerminalOutput::progress(const QString& line) {
    if (!tty_) return;
    line_ = line;
    if (last_draw_.isValid() && last_draw_.elapsed() < kRedrawMs) {
        if (!pending_.isActive()) pending_.start(kRedrawMs - int(last_draw_.elapsed()));
        return;
    }
    redraw();
}

void TerminalOutput::redraw() {
    if (!tty_ || line_.isEmpty()) return;
    clear_line();
    std::fputs(qPrintable(line_.left(width() - 1)), out_);
    std::fflush(out_);
    shown_ = true;
    last_draw_.start();
}

void TerminalOutput::done() {
    pending_.stop();
    if (tty_ && !line_.isEmpty()) {
        redraw();
        std::fputs("\n", out_);
        std::fflush(out_);
        shown_ = false;
        line_.clear();
    }
}

}  // namespace thresher::launcher::cli
