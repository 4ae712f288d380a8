#include "free_ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <mutex>

namespace test_support {

namespace {

constexpr int kLowest = 10000;  // below: ports well-known services use

// The low end of the kernel's ephemeral range (32768 by default).
int ephemeral_low() {
    QFile f("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0;
    if (f.open(QIODevice::ReadOnly)) low = QString::fromLatin1(f.readAll()).simplified().section(' ', 0, 0).toInt();
    return low > kLowest + 1000 ? low : 32768;
}

// Without SO_REUSEADDR, so a port with connections still in TIME_WAIT counts as taken too.
bool bindable(int port, int type) {
    const int fd = ::socket(AF_INET, type, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

}  // namespace

int free_port_block(int count) {
    static std::mutex mutex;
    static int next = -1;  // the next port this process may hand out
    const std::lock_guard lock(mutex);
    const int high = ephemeral_low();  // exclusive
    const int span = high - kLowest;
    if (count < 1 || count > span) return -1;
    if (next < 0) next = kLowest + int((static_cast<long>(::getpid()) * 7919) % span);
    for (int walked = 0; walked < span; walked += count) {
        int base = next;
        if (base + count > high) base = kLowest;
        next = base + count;
        bool ok = true;
        for (int p = base; ok && p < base + count; ++p) ok = bindable(p, SOCK_DGRAM) && bindable(p, SOCK_STREAM);
        if (ok) return base;
    }
    return -1;
}

QList<int> free_node_ports(int n) {
    QList<int> ports;
    const int base = free_port_block(n);
    for (int i = 0; base > 0 && i < n; ++i) ports << base + i;
    return ports;
}

}  // namespace test_support
