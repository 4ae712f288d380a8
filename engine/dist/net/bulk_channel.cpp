#include "dist/net/bulk_channel.h"

#include <sys/socket.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <atomic>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including it
#include <boost/asio.hpp>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace thresher::dist {

namespace {

using boost::asio::ip::tcp;
constexpr std::uint32_t kMagic = 0x42524854;  // "THRB" little-endian
constexpr std::size_t kHeader = 28;
constexpr std::size_t kMac = 32;
constexpr std::uint64_t kMaxPayload = std::uint64_t{1} << 30;

template <typename T>
void put(std::uint8_t*& p, T v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
}
template <typename T>
T get(const std::uint8_t*& p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
}

// HMAC-SHA256 over header and payload, fed in two parts so a large payload is never copied.
void mac(const Secret& key, std::span<const std::uint8_t> a, std::span<const std::uint8_t> b, std::uint8_t* out) {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* c = EVP_MAC_CTX_new(m);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>("SHA256"), 0), OSSL_PARAM_construct_end()};
    std::size_t out_len = 0;
    const bool ok = c && EVP_MAC_init(c, key.bytes().data(), key.size(), params) && EVP_MAC_update(c, a.data(), a.size()) &&
                    EVP_MAC_update(c, b.data(), b.size()) && EVP_MAC_final(c, out, &out_len, kMac);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    if (!ok || out_len != kMac) throw Error("bulk channel: HMAC-SHA256 failed in OpenSSL");
}

}  // namespace

struct BulkChannel::Impl {
    int rank;
    std::vector<UdpEndpoint> peers;
    std::uint64_t run_id;
    Secret secret;
    boost::asio::io_context io;
    std::unique_ptr<tcp::acceptor> acceptor;
    std::thread accept_thread;

    std::mutex mutex;  // guards everything below
    std::condition_variable arrived;
    std::deque<Message> inbox;
    std::map<int, std::shared_ptr<tcp::socket>> sockets;  // by peer rank, once identified
    std::vector<std::shared_ptr<tcp::socket>> all_sockets;
    std::map<int, std::unique_ptr<std::mutex>> write_locks;
    std::vector<std::thread> readers;
    std::atomic<bool> stopping{false};
    std::atomic<std::uint64_t> tx{0}, rx{0}, rejected{0};

    Impl(int r, std::vector<UdpEndpoint> p, std::uint64_t id, Secret s)
        : rank(r), peers(std::move(p)), run_id(id), secret(std::move(s)) {}

    void start_reader(std::shared_ptr<tcp::socket> socket, int known_peer) {
        std::lock_guard lock(mutex);
        all_sockets.push_back(socket);
        readers.emplace_back([this, socket, known_peer] { read_loop(socket, known_peer); });
    }

    void read_loop(std::shared_ptr<tcp::socket> socket, int peer) {
        boost::system::error_code ec;
        std::vector<std::uint8_t> header(kHeader), payload, tag(kMac), expect(kMac);
        for (;;) {
            boost::asio::read(*socket, boost::asio::buffer(header), ec);
            if (ec) return;
            const std::uint8_t* p = header.data();
            const auto magic = get<std::uint32_t>(p);
            const auto version = get<std::uint8_t>(p);
            const auto type = get<std::uint8_t>(p);
            const auto reserved = get<std::uint16_t>(p);
            const auto run = get<std::uint64_t>(p);
            const auto sender = get<std::uint32_t>(p);
            const auto length = get<std::uint64_t>(p);
            const bool sane = magic == kMagic && version == 1 && reserved == 0 && run == run_id &&
                              sender < peers.size() && static_cast<int>(sender) != rank && is_message_type(type) &&
                              length <= kMaxPayload && (peer < 0 || static_cast<int>(sender) == peer);
            if (!sane) return refuse(socket);
            payload.resize(length);
            boost::asio::read(*socket, boost::asio::buffer(payload), ec);
            if (!ec) boost::asio::read(*socket, boost::asio::buffer(tag), ec);
            if (ec) return;
            mac(secret, header, payload, expect.data());
            if (CRYPTO_memcmp(expect.data(), tag.data(), kMac) != 0) return refuse(socket);
            rx += kHeader + length + kMac;
            std::lock_guard lock(mutex);
            if (peer < 0) {  // the first authentic frame tells who is on the other end
                peer = static_cast<int>(sender);
                sockets[peer] = socket;
                write_locks.try_emplace(peer, std::make_unique<std::mutex>());
            }
            inbox.push_back(Message{peer, static_cast<MessageType>(type), 0, std::move(payload)});
            payload = {};
            arrived.notify_all();
        }
    }

    std::shared_ptr<tcp::socket> connect(int dest, std::chrono::milliseconds timeout);

    void refuse(const std::shared_ptr<tcp::socket>& socket) {
        ++rejected;
        boost::system::error_code ignored;
        socket->close(ignored);
    }

    void accept_loop() {
        for (;;) {
            auto socket = std::make_shared<tcp::socket>(io);
            boost::system::error_code ec;
            acceptor->accept(*socket, ec);
            if (stopping || ec == boost::asio::error::operation_aborted || ec == boost::asio::error::bad_descriptor) return;
            if (ec) continue;
            socket->set_option(tcp::no_delay(true), ec);
            start_reader(socket, -1);
        }
    }
};

BulkChannel::BulkChannel(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address, std::uint64_t run_id,
                         Secret secret)
    : impl_(std::make_unique<Impl>(rank, std::move(peers), run_id, std::move(secret))) {
    const auto port = impl_->peers.at(static_cast<std::size_t>(rank)).port;
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(bind_address.empty() ? "0.0.0.0" : bind_address, ec);
    if (ec) throw Error("bulk channel: --bind " + bind_address + " is not an IP address");
    impl_->acceptor = std::make_unique<tcp::acceptor>(impl_->io);
    const tcp::endpoint endpoint(address, port);
    impl_->acceptor->open(endpoint.protocol(), ec);
    if (!ec) impl_->acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) impl_->acceptor->bind(endpoint, ec);
    if (!ec) impl_->acceptor->listen(16, ec);
    if (ec)
        throw Error("TCP port " + std::to_string(port) + " on " + address.to_string() + " (node " +
                    std::to_string(rank) + "'s bulk channel) cannot be used: " + ec.message() +
                    "; stop what holds it, or give node " + std::to_string(rank) + " another port in --nodes");
    impl_->accept_thread = std::thread([this] { impl_->accept_loop(); });
}

BulkChannel::~BulkChannel() {
    impl_->stopping = true;
    boost::system::error_code ignored;
    if (impl_->acceptor) {
        // close() alone does not wake a thread blocked in accept(2) on Linux; shutdown does.
        ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
        impl_->acceptor->close(ignored);
    }
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& s : impl_->all_sockets) {
            s->shutdown(tcp::socket::shutdown_both, ignored);
            s->close(ignored);
        }
    }
    if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
    std::vector<std::thread> readers;
    {
        std::lock_guard lock(impl_->mutex);
        readers.swap(impl_->readers);
    }
    for (auto& t : readers) t.join();
}

std::shared_ptr<tcp::socket> BulkChannel::Impl::connect(int dest, std::chrono::milliseconds timeout) {
    const auto& where = peers.at(static_cast<std::size_t>(dest));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    std::shared_ptr<tcp::socket> socket;
    for (;;) {
        socket = std::make_shared<tcp::socket>(io);
        auto results = resolver.resolve(where.host, std::to_string(where.port), ec);
        if (!ec) boost::asio::connect(*socket, results, ec);
        if (!ec) break;
        if (std::chrono::steady_clock::now() > deadline)
            throw Error("bulk channel: cannot connect to node " + std::to_string(dest) + " at " + where.host + ":" +
                        std::to_string(where.port) + " over TCP: " + ec.message());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    socket->set_option(tcp::no_delay(true), ec);
    {
        std::lock_guard lock(mutex);
        sockets[dest] = socket;
        write_locks.try_emplace(dest, std::make_unique<std::mutex>());
    }
    start_reader(socket, dest);
    return socket;
}

void BulkChannel::send(int dest, MessageType type, std::span<const std::uint8_t> payload,
                       std::chrono::milliseconds connect_timeout) {
    Impl& d = *impl_;
    if (dest == d.rank || dest < 0 || dest >= static_cast<int>(d.peers.size()))
        throw Error("bulk channel: node " + std::to_string(d.rank) + " cannot send to node " + std::to_string(dest) +
                    " (the run has nodes 0.." + std::to_string(d.peers.size() - 1) + ")");
    std::vector<std::uint8_t> header(kHeader), tag(kMac);
    std::uint8_t* p = header.data();
    put(p, kMagic);
    put(p, std::uint8_t{1});
    put(p, static_cast<std::uint8_t>(type));
    put(p, std::uint16_t{0});
    put(p, d.run_id);
    put(p, static_cast<std::uint32_t>(d.rank));
    put(p, static_cast<std::uint64_t>(payload.size()));
    mac(d.secret, header, payload, tag.data());
    const std::array<boost::asio::const_buffer, 3> frame{boost::asio::buffer(header), boost::asio::buffer(payload.data(), payload.size()),
                                                         boost::asio::buffer(tag)};
    // A connection either side opened will do (whoever needed one first made it). One that broke
    // -- the peer's process was restarted -- is replaced by a new one, once.
    boost::system::error_code ec;
    for (int attempt = 0; attempt < 2; ++attempt) {
        std::shared_ptr<tcp::socket> socket;
        {
            std::lock_guard lock(d.mutex);
            if (auto it = d.sockets.find(dest); it != d.sockets.end()) socket = it->second;
        }
        if (!socket) socket = d.connect(dest, connect_timeout);
        std::mutex* write_lock = nullptr;
        {
            std::lock_guard lock(d.mutex);
            write_lock = d.write_locks.at(dest).get();
        }
        {
            std::lock_guard lock(*write_lock);
            boost::asio::write(*socket, frame, ec);
        }
        if (!ec) {
            d.tx += kHeader + payload.size() + kMac;
            return;
        }
        std::lock_guard lock(d.mutex);
        if (auto it = d.sockets.find(dest); it != d.sockets.end() && it->second == socket) d.sockets.erase(it);
    }
    throw Error("bulk channel: sending to node " + std::to_string(dest) + " failed: " + ec.message());
}

std::optional<Message> BulkChannel::receive(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mutex);
    if (!impl_->arrived.wait_for(lock, timeout, [&] { return !impl_->inbox.empty(); })) return std::nullopt;
    Message m = std::move(impl_->inbox.front());
    impl_->inbox.pop_front();
    return m;
}

std::uint64_t BulkChannel::bytes_tx() const { return impl_->tx; }
std::uint64_t BulkChannel::bytes_rx() const { return impl_->rx; }
std::uint64_t BulkChannel::rejected() const { return impl_->rejected; }
std::uint16_t BulkChannel::local_port() const {
    return impl_->acceptor ? impl_->acceptor->local_endpoint().port() : 0;
}

}  // namespace thresher::dist
