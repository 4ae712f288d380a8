#include "free_ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

namespace test_support {

namespace {

// A socket of `type` bound to 127.0.0.1:port (0: any), with SO_REUSEADDR as the engine's
// acceptor has it; {-1, 0} when the port is taken.
std::pair<int, int> bound(int type, int port) {
    const int fd = ::socket(AF_INET, type, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return {-1, 0};
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return {fd, ntohs(a.sin_port)};
}

}  // namespace

QList<int> free_node_ports(int n) {
    QList<int> fds, ports;
    for (int tries = 0; ports.size() < n && tries < 100 * n; ++tries) {
        const auto [udp, port] = bound(SOCK_DGRAM, 0);
        if (udp < 0) continue;
        fds << udp;  // held even when its TCP side is taken, so it is not offered again
        const int tcp = bound(SOCK_STREAM, port).first;
        if (tcp < 0) continue;
        fds << tcp;
        ports << port;
    }
    for (int fd : fds) ::close(fd);
    return ports;
}

}  // namespace test_support
