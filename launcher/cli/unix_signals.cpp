// Unix signals -> Qt signal through a socket pair; see unix_signals.h.
#include "unix_signals.h"

#include <cerrno>
#include <csignal>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace thresher::launcher::cli {

namespace {
int g_fds[2] = {-1, -1};  // [0] read in the event loop, [1] written by the handler

extern "C" void on_signal(int sig) {
    const int saved = errno;
    const unsigned char byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(g_fds[1], &byte, 1);
    errno = saved;
}
}  // namespace

UnixSignals::UnixSignals(std::initializer_list<int> which, QObject* parent) : QObject(parent), signals_(which) {
    if (g_fds[0] >= 0) throw std::logic_error("UnixSignals: only one instance at a time");
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_fds) != 0)
        throw std::runtime_error("UnixSignals: socketpair failed");
    notifier_ = std::make_unique<QSocketNotifier>(g_fds[0], QSocketNotifier::Read);
    connect(notifier_.get(), &QSocketNotifier::activated, this, [this] {
        unsigned char byte = 0;
        if (::read(g_fds[0], &byte, 1) == 1) Q_EMIT received(byte);
    });
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : signals_) ::sigaction(sig, &sa, nullptr);
}

UnixSignals::~UnixSignals() {
    for (int sig : signals_) ::signal(sig, SIG_DFL);
    notifier_.reset();
    ::close(g_fds[0]);
    ::close(g_fds[1]);
    g_fds[0] = g_fds[1] = -1;
}

}  // namespace thresher::launcher::cli
