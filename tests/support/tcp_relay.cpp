#include "tcp_relay.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace test_support {

namespace {
int listen_on(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}


RecordingRelay::RecordingRelay(int listen_port, int target_port) : listener_(listen_on(listen_port)), target_(target_port) {
    thread_ = std::thread([this] { run(); });
}

RecordingRelay::~RecordingRelay() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
}

std::vector<std::uint8_t> RecordingRelay::recorded() {
    std::lock_guard lock(mutex_);
    return recorded_;
}

void RecordingRelay::run() {
    pollfd l{listener_, POLLIN, 0};
    while (!stop_ && ::poll(&l, 1, 50) <= 0) {}
    if (stop_) return;
    const int client = ::accept(listener_, nullptr, nullptr);
    const int server = connect_to(target_);
    std::vector<char> buf(1 << 16);
    pollfd f[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!stop_ && client >= 0 && server >= 0) {
        if (::poll(f, 2, 50) <= 0) continue;
        bool closed = false;
        for (int i = 0; i < 2 && !closed; ++i) {
            if (!(f[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const auto n = ::read(f[i].fd, buf.data(), buf.size());
            if (n <= 0) {
                closed = true;
                break;
            }
            if (i == 0) {
                std::lock_guard lock(mutex_);
                recorded_.insert(recorded_.end(), buf.data(), buf.data() + n);
            }
            if (::write(f[1 - i].fd, buf.data(), static_cast<std::size_t>(n)) != n) closed = true;
        }
        if (closed) break;
    }
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
}

}  // namespace test_support
