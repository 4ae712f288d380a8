// BulkChannel (bulk_channel.h). Everything on a socket runs on the one Asio thread; callers of
// send() meet it through a connection's write queue (tx_mutex) and the channel's `mutex`.
#include "dist/net/bulk_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including it
#include <boost/asio.hpp>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "dist/net/bulk_wire.h"
#include "dist/net/link_delay_line.h"

namespace thresher::dist {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

using namespace bulk_wire;
constexpr std::size_t kReadPiece = 1 << 20;  // a payload grows by at most this per read
constexpr std::size_t kMaxLivePerPeer = 4;   // authenticated connections kept per peer (newest win)

asio::ip::address plain(const asio::ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return a;
}

void tune(tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(tcp::no_delay(true), ec);
    s.set_option(asio::socket_base::keep_alive(true), ec);
    // A peer that vanished (power loss, a firewall dropping the connection) is noticed within
    // about 25 s idle, and unacknowledged data is given up on after 60 s.
    const int idle = 10, interval = 5, count = 3;
    const unsigned user_timeout_ms = 60000;
    ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

std::string type_name(MessageType t) {
    switch (t) {
        case MessageType::Params: return "parameters (join answer)";
        case MessageType::ParamsRequest: return "join request";
        case MessageType::Average: return "averaging sums";
        case MessageType::AverageResult: return "averaging result";
        default: return "message type " + std::to_string(static_cast<int>(t));
    }
}

struct PendingWrite {
    FrameHead head{};
    std::span<const std::uint8_t> payload;
    std::array<std::uint8_t, kMac> tag{};
    std::promise<boost::system::error_code> done;
    // Asio thread only.
    std::size_t handed = 0;   // bytes handed to the emulated link so far
    std::size_t written = 0;  // bytes of the frame written to the socket
    bool finished = false;    // `done` is set

    std::size_t total() const { return head.size() + payload.size() + tag.size(); }
    // The buffers of bytes [offset, offset + length) of the frame (header, payload, tag).
    std::vector<asio::const_buffer> slice(std::size_t offset, std::size_t length) const {
        const std::array<asio::const_buffer, 3> parts{asio::buffer(head), asio::buffer(payload.data(), payload.size()),
                                                      asio::buffer(tag)};
        std::vector<asio::const_buffer> out;
        for (const auto& part : parts) {
            if (length == 0) break;
            if (offset >= part.size()) {
                offset -= part.size();
                continue;
            }
            const std::size_t n = std::min(part.size() - offset, length);
            out.push_back(asio::buffer(static_cast<const std::uint8_t*>(part.data()) + offset, n));
            length -= n;
            offset = 0;
        }
        return out;
    }
};

// A piece of a frame that has come through the emulated link, waiting to be written.
struct Piece {
    std::shared_ptr<PendingWrite> write;
    std::size_t offset = 0, length = 0;
};

// How much of the emulated link's queue a transfer may fill (LinkShaper::backlog): about what
// TCP keeps queued at a bottleneck. Datagrams wait at most this long behind a transfer.
constexpr auto kPaceAhead = std::chrono::milliseconds(4);

// Bytes per piece on an emulated link: about 1 ms of it, at least one TCP segment, at most
// 256 KiB (an unlimited rate: the delay alone shapes it).
std::size_t piece_bytes(const LinkSpec& link) {
    constexpr std::size_t kMin = 1448, kMax = std::size_t{256} << 10;
    if (link.rate_bits_per_s <= 0) return kMax;
    const auto per_ms = static_cast<std::size_t>(link.rate_bits_per_s / 8.0 / 1000.0);
    return std::clamp(per_ms, kMin, kMax);
}

struct Conn {
    explicit Conn(asio::io_context& io) : socket(io), timer(io), pace(io) {}
    tcp::socket socket;
    asio::steady_timer timer;
    asio::steady_timer pace;  // the next pieces of a frame for the emulated link
    bool outbound = false;
    bool open = false;  // through the handshake
    int peer = -1;
    std::uint64_t peer_inc = 0;
    Nonce nonce_c{}, nonce_a{};
    HelloBytes hello{};  // the handshake message being read or written
    Key rx_key{}, tx_key{};
    std::uint64_t rx_seq = 0;
    // The frame being read.
    FrameHead head{};
    MessageType type{};
    std::uint64_t length = 0;
    std::vector<std::uint8_t> body;
    std::array<std::uint8_t, kMac> tag{};
    // Writing: callers of send() queue under tx_mutex; the Asio thread writes them in order.
    std::mutex tx_mutex;
    bool closed = false;  // under tx_mutex
    std::uint64_t tx_seq = 0;
    std::deque<std::shared_ptr<PendingWrite>> queue;
    bool writing = false;
    // Asio thread only: pieces through the emulated link, in arrival order, and whether one is
    // being written.
    std::deque<Piece> arrived;
    bool piece_writing = false;
    // When a byte of this connection last went out (ns on the steady clock): send()'s deadline.
    std::atomic<std::int64_t> progressed{0};
    // Asio thread only: when a byte of the frame being read last arrived (its stall deadline).
    Clock::time_point read_moved{};
};
using ConnPtr = std::shared_ptr<Conn>;

struct Attempt {  // one outbound connect + handshake, watched by a caller of send()
    bool done = false;
    std::string error;
};

}  // namespace

struct BulkChannel::Impl {
    int rank;
    std::vector<UdpEndpoint> peers;
    std::vector<std::vector<tcp::endpoint>> endpoints;  // by rank, resolved once
    std::vector<std::set<asio::ip::address>> addresses;
    std::uint64_t run_id;
    Secret secret;
    BulkOptions options;
    asio::ip::address bind;  // unspecified: the kernel picks outbound source addresses
    asio::io_context io;
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_backoff{io};
    // The emulated link (link_emulator.h), when one is set: frames are written when they arrive.
    std::unique_ptr<LinkDelayLine> link_line{options.link ? std::make_unique<LinkDelayLine>(io, options.link) : nullptr};
    std::chrono::milliseconds backoff{0};
    std::thread thread;

    // Asio thread only.
    std::list<ConnPtr> unidentified_list;  // inbound, in the handshake, oldest first
    std::set<ConnPtr> all;
    std::vector<ConnPtr> parked;  // waiting for set_param_count

    mutable std::mutex mutex;  // guards everything below
    std::condition_variable changed;
    std::deque<Message> inbox;
    std::vector<std::vector<ConnPtr>> live;   // by rank: authenticated connections, newest last
    std::vector<std::uint64_t> known_inc;     // by rank: the newest process proven
    std::size_t params = 0;
    bool params_known = false;
    std::atomic<std::size_t> unidentified_count{0};
    std::atomic<std::uint64_t> tx{0}, rx{0}, rejected{0};
    // By rank: when bytes last moved on an authenticated connection with it, either way (ns on
    // the steady clock, 0: never), and how many of those connections have closed.
    std::unique_ptr<std::atomic<std::int64_t>[]> progress;
    std::unique_ptr<std::atomic<std::uint64_t>[]> losses;

    Impl(int r, std::vector<UdpEndpoint> p, std::uint64_t id, Secret s, BulkOptions o)
        : rank(r), peers(std::move(p)), run_id(id), secret(std::move(s)), options(o),
          live(peers.size()), known_inc(peers.size(), 0),
          progress(new std::atomic<std::int64_t>[peers.size()]()),
          losses(new std::atomic<std::uint64_t>[peers.size()]()) {}

    static std::int64_t now_ns() { return Clock::now().time_since_epoch().count(); }
    // Bytes moved on `c`: a sign of life of its peer (BulkChannel::last_progress).
    void moved(const Conn& c) {
        if (c.open && c.peer >= 0) progress[static_cast<std::size_t>(c.peer)].store(now_ns(), std::memory_order_relaxed);
    }

    std::string where(int node) const {
        const auto& e = peers[static_cast<std::size_t>(node)];
        return "node " + std::to_string(node) + " at " + e.host + ":" + std::to_string(e.port);
    }

    std::size_t limit(MessageType type) {
        std::lock_guard lock(mutex);
        if (type == MessageType::ParamsRequest) return payload_limit(type, 0, static_cast<int>(peers.size()));
        if (!params_known) return SIZE_MAX;  // unknown yet: the caller parks the connection
        return payload_limit(type, params, static_cast<int>(peers.size()));
    }

    // --- closing -------------------------------------------------------------------------------
    // By value: callers pass elements of the lists this removes them from.
    void close(ConnPtr c, bool refused) {
        if (refused) ++rejected;
        if (!all.erase(c)) return;
        boost::system::error_code ignored;
        c->timer.cancel();
        c->pace.cancel();
        c->socket.shutdown(tcp::socket::shutdown_both, ignored);
        c->socket.close(ignored);
        unidentified_list.remove(c);
        unidentified_count = unidentified_list.size();
        std::erase(parked, c);
        std::vector<std::shared_ptr<PendingWrite>> unstarted;
        {
            std::lock_guard lock(c->tx_mutex);
            c->closed = true;
            // The one being written ends through its handler (operation_aborted); the rest now.
            const std::size_t keep = c->writing ? 1 : 0;
            while (c->queue.size() > keep) {
                unstarted.push_back(c->queue.back());
                c->queue.pop_back();
            }
        }
        for (auto& w : unstarted) finish(w, asio::error::operation_aborted);
        // Pieces that came through the emulated link and were not written: their frame ends here
        // (a piece still in the link ends it when it arrives, on_piece).
        for (auto& p : std::exchange(c->arrived, {})) finish(p.write, asio::error::operation_aborted);
        if (c->peer >= 0 && c->open) {
            ++losses[static_cast<std::size_t>(c->peer)];
            std::lock_guard lock(mutex);
            std::erase(live[static_cast<std::size_t>(c->peer)], c);
            changed.notify_all();
        }
    }

    void arm(const ConnPtr& c, std::chrono::milliseconds after) {
        c->read_moved = Clock::now();
        wait_until(c, c->read_moved + after, after);
    }
    // On an open connection the deadline is `after` without a byte (read_moved), however long the
    // frame: a byte since moves it on. A handshake's is fixed.
    void wait_until(const ConnPtr& c, Clock::time_point deadline, std::chrono::milliseconds after) {
        c->timer.expires_at(deadline);
        c->timer.async_wait([this, c, after](boost::system::error_code ec) {
            if (ec) return;
            if (c->open && c->read_moved + after > Clock::now()) return wait_until(c, c->read_moved + after, after);
            close(c, !c->open);  // a handshake past its deadline is a refusal; a stall is not
        });
    }

    // --- accepting -----------------------------------------------------------------------------
    void accept() {
        acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
    }

    void on_accept(boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        if (ec) {
            // Out of descriptors (EMFILE/ENFILE) or memory: the pending connection stays queued and
            // accept would fail again at once, so wait, growing the pause up to a second, and free
            // a descriptor held by a connection that has not identified itself.
            if (!unidentified_list.empty()) close(unidentified_list.front(), true);
            backoff = std::min(std::chrono::milliseconds(1000), std::max(std::chrono::milliseconds(10), backoff * 2));
            accept_backoff.expires_after(backoff);
            accept_backoff.async_wait([this](boost::system::error_code e) {
                if (!e) accept();
            });
            return;
        }
        backoff = std::chrono::milliseconds(0);
        auto c = std::make_shared<Conn>(io);
        c->socket = std::move(socket);
        all.insert(c);
        boost::system::error_code e;
        const auto remote = c->socket.remote_endpoint(e);
        bool known = false;
        if (!e)
            for (const auto& set : addresses) known = known || set.count(plain(remote.address()));
        if (!known) {
            close(c, true);
            accept();
            return;
        }
        if (unidentified_list.size() >= options.max_unidentified) close(unidentified_list.front(), true);
        unidentified_list.push_back(c);
        unidentified_count = unidentified_list.size();
        tune(c->socket);
        arm(c, options.handshake_timeout);
        asio::async_read(c->socket, asio::buffer(c->hello), [this, c](boost::system::error_code ec2, std::size_t) {
            if (ec2) return close(c, true);
            on_hello1(c);
        });
        accept();
    }

    void on_hello1(const ConnPtr& c) {
        const auto h = parse_hello(c->hello, secret, 1, run_id);
        if (!h || h->to != static_cast<std::uint32_t>(rank) || h->from >= peers.size() ||
            h->from == static_cast<std::uint32_t>(rank) || h->from_inc == 0)
            return close(c, true);
        boost::system::error_code e;
        const auto remote = c->socket.remote_endpoint(e);
        if (e || !addresses[h->from].count(plain(remote.address()))) return close(c, true);
        {
            std::lock_guard lock(mutex);
            if (h->from_inc < known_inc[h->from]) return close(c, true);  // an older process of that node
        }
        c->peer = static_cast<int>(h->from);
        c->peer_inc = h->from_inc;
        c->nonce_c = h->nonce_c;
        c->nonce_a = fresh_nonce();
        Hello answer{2, run_id, static_cast<std::uint32_t>(rank), h->from, options.incarnation, h->from_inc, c->nonce_c, c->nonce_a};
        c->hello = pack_hello(answer, secret);
        asio::async_write(c->socket, asio::buffer(c->hello), [this, c](boost::system::error_code ec, std::size_t) {
            if (ec) return close(c, true);
            asio::async_read(c->socket, asio::buffer(c->hello), [this, c](boost::system::error_code ec2, std::size_t) {
                if (ec2) return close(c, true);
                on_hello3(c);
            });
        });
    }

    void on_hello3(const ConnPtr& c) {
        const auto h = parse_hello(c->hello, secret, 3, run_id);
        if (!h || h->from != static_cast<std::uint32_t>(c->peer) || h->to != static_cast<std::uint32_t>(rank) ||
            h->from_inc != c->peer_inc || h->to_inc != options.incarnation || h->nonce_c != c->nonce_c ||
            h->nonce_a != c->nonce_a)
            return close(c, true);
        c->rx_key = frame_key(secret, c->hello, 'c');  // frames from the connector
        c->tx_key = frame_key(secret, c->hello, 'a');
        unidentified_list.remove(c);
        unidentified_count = unidentified_list.size();
        establish(c);
    }

    // --- connecting ----------------------------------------------------------------------------
    void start_connect(int dest, std::shared_ptr<Attempt> attempt) {
        auto c = std::make_shared<Conn>(io);
        c->outbound = true;
        c->peer = dest;
        all.insert(c);
        auto fail = [this, c, attempt](const std::string& why) {
            close(c, false);
            std::lock_guard lock(mutex);
            if (!attempt->done) {
                attempt->done = true;
                attempt->error = why;
            }
            changed.notify_all();
        };
        boost::system::error_code e;
        const auto& targets = endpoints[static_cast<std::size_t>(dest)];
        if (!bind.is_unspecified()) {
            // From this node's own address: the peer accepts a node only from its --nodes address.
            c->socket.open(bind.is_v4() ? tcp::v4() : tcp::v6(), e);
            if (!e) c->socket.bind(tcp::endpoint(bind, 0), e);
            if (e) return fail("cannot bind a TCP socket to " + bind.to_string() + ": " + e.message());
        }
        c->timer.expires_after(options.handshake_timeout);
        c->timer.async_wait([c, fail](boost::system::error_code ec) {
            if (!ec && !c->open) fail("no connection and handshake within the deadline");
        });
        asio::async_connect(c->socket, targets, [this, c, fail](boost::system::error_code ec, const tcp::endpoint&) {
            if (ec) return fail(ec.message());
            tune(c->socket);
            c->nonce_c = fresh_nonce();
            Hello h{1, run_id, static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(c->peer), options.incarnation, 0, c->nonce_c, {}};
            c->hello = pack_hello(h, secret);
            asio::async_write(c->socket, asio::buffer(c->hello), [this, c, fail](boost::system::error_code ec2, std::size_t) {
                if (ec2) return fail(ec2.message());
                asio::async_read(c->socket, asio::buffer(c->hello), [this, c, fail](boost::system::error_code ec3, std::size_t) {
                    if (ec3) return fail("the peer closed the connection in the handshake (" + ec3.message() +
                                         "): another run, another secret, or it refused this process");
                    on_hello2(c, fail);
                });
            });
        });
    }

    template <typename Fail>
    void on_hello2(const ConnPtr& c, Fail fail) {
        const auto h = parse_hello(c->hello, secret, 2, run_id);
        if (!h || h->from != static_cast<std::uint32_t>(c->peer) || h->to != static_cast<std::uint32_t>(rank) ||
            h->to_inc != options.incarnation || h->nonce_c != c->nonce_c || h->from_inc == 0) {
            ++rejected;
            return fail("the peer's handshake answer did not verify (another run or another secret?)");
        }
        {
            std::lock_guard lock(mutex);
            if (h->from_inc < known_inc[h->from]) return fail("an older process of the node answered");
        }
        c->peer_inc = h->from_inc;
        c->nonce_a = h->nonce_a;
        Hello last{3, run_id, static_cast<std::uint32_t>(rank), h->from, options.incarnation, h->from_inc, c->nonce_c, c->nonce_a};
        c->hello = pack_hello(last, secret);
        c->tx_key = frame_key(secret, c->hello, 'c');
        c->rx_key = frame_key(secret, c->hello, 'a');
        asio::async_write(c->socket, asio::buffer(c->hello), [this, c, fail](boost::system::error_code ec, std::size_t) {
            if (ec) return fail(ec.message());
            establish(c);
        });
    }

    // --- authenticated connections -------------------------------------------------------------
    void establish(const ConnPtr& c) {
        if (!all.count(c)) return;
        c->timer.cancel();
        std::vector<ConnPtr> replaced;
        {
            std::lock_guard lock(mutex);
            auto& mine = live[static_cast<std::size_t>(c->peer)];
            auto& known = known_inc[static_cast<std::size_t>(c->peer)];
            if (c->peer_inc < known) {  // a newer process of that node got in meanwhile
                ++rejected;
                replaced.push_back(c);
            } else {
                if (c->peer_inc > known) {  // the node was restarted: its old connections are dead
                    replaced.assign(mine.begin(), mine.end());
                    mine.clear();
                    known = c->peer_inc;
                }
                c->open = true;
                mine.push_back(c);
                if (mine.size() > kMaxLivePerPeer) {
                    replaced.push_back(mine.front());
                    mine.erase(mine.begin());
                }
            }
            changed.notify_all();
        }
        for (auto& old : replaced) close(old, false);
        if (c->open) read_header(c);
    }

    void read_header(const ConnPtr& c) {
        asio::async_read(c->socket, asio::buffer(c->head), [this, c](boost::system::error_code ec, std::size_t) {
            if (ec) return close(c, false);
            moved(*c);
            on_header(c);
        });
    }

    void on_header(const ConnPtr& c) {
        const auto h = parse_frame_head(c->head, c->rx_key);
        if (!h || h->seq != c->rx_seq + 1) return close(c, true);  // forged, replayed or reordered
        c->type = h->type;
        c->length = h->length;
        resume(c);
    }

    // Checks the frame's length against its type's limit (parking the connection while that limit
    // is not known yet), then reads the payload.
    void resume(const ConnPtr& c) {
        const std::size_t max = limit(c->type);
        if (max == SIZE_MAX) {
            parked.push_back(c);
            return;
        }
        if (max == 0 || c->length > max) return close(c, true);  // a type this channel does not carry, or too long
        c->body.clear();
        read_body(c);
    }

    void read_body(const ConnPtr& c) {
        const std::size_t have = c->body.size();
        if (have == c->length) {
            asio::async_read(c->socket, asio::buffer(c->tag), [this, c](boost::system::error_code ec, std::size_t) {
                c->timer.cancel();
                if (ec) return close(c, false);
                moved(*c);
                on_frame(c);
            });
            arm(c, options.stall_timeout);
            return;
        }
        // Grown piece by piece as bytes come: a header alone never costs its length in memory.
        const std::size_t piece = std::min<std::size_t>(kReadPiece, c->length - have);
        c->body.resize(have + piece);
        arm(c, options.stall_timeout);
        // Bytes arriving inside a piece are progress too (a 1 MiB piece takes 8 s at 1 Mbit/s).
        auto arriving = [this, c, seen = std::size_t{0}](const boost::system::error_code& ec, std::size_t done) mutable -> std::size_t {
            if (done > seen) {
                seen = done;
                moved(*c);
                c->read_moved = Clock::now();  // a stall is time without a byte, not a slow piece
            }
            return ec ? 0 : std::size_t{64} << 10;
        };
        asio::async_read(c->socket, asio::buffer(c->body.data() + have, piece), arriving,
                         [this, c](boost::system::error_code ec, std::size_t) {
                             if (ec) return close(c, false);
                             moved(*c);
                             read_body(c);
                         });
    }

    void on_frame(const ConnPtr& c) {
        if (!mac_ok(c->rx_key, {std::span<const std::uint8_t>(c->head.data(), kFrameHeader), c->body}, c->tag.data()))
            return close(c, true);
        ++c->rx_seq;
        rx += kFrameHeader + 2 * kMac + c->length;
        {
            std::lock_guard lock(mutex);
            inbox.push_back(Message{c->peer, c->type, c->rx_seq, std::move(c->body), c->peer_inc});
            changed.notify_all();
        }
        c->body = {};
        read_header(c);
    }

    // --- writing -------------------------------------------------------------------------------
    // Ends a frame's write once: the caller of send() is told, and the next frame may start.
    void finish(const std::shared_ptr<PendingWrite>& w, boost::system::error_code ec) {
        if (w->finished) return;
        w->finished = true;
        w->done.set_value(ec);
    }

    void wrote(const ConnPtr& c, const std::shared_ptr<PendingWrite>& w, boost::system::error_code ec) {
        if (!ec) went_out(c);
        {
            std::lock_guard lock(c->tx_mutex);
            c->writing = false;
            if (!c->queue.empty() && c->queue.front() == w) c->queue.pop_front();
        }
        finish(w, ec);
        if (ec) return close(c, false);
        pump(c);
    }

    void went_out(const ConnPtr& c) {
        c->progressed.store(now_ns(), std::memory_order_relaxed);
        moved(*c);
    }

    // Asio's completion condition, called between the pieces of a long write (not after the
    // last one: the handler marks that): every step forward is progress.
    auto progress_of(const ConnPtr& c) {
        return [this, c, seen = std::size_t{0}](const boost::system::error_code& ec, std::size_t done) mutable -> std::size_t {
            if (done > seen) {
                seen = done;
                went_out(c);
            }
            return ec ? 0 : std::size_t{1} << 20;
        };
    }

    void pump(const ConnPtr& c) {
        std::shared_ptr<PendingWrite> w;
        {
            std::lock_guard lock(c->tx_mutex);
            if (c->writing || c->queue.empty() || c->closed) return;
            c->writing = true;
            w = c->queue.front();
        }
        c->progressed.store(now_ns(), std::memory_order_relaxed);  // its deadline counts from here
        if (link_line) return feed(c, w);
        asio::async_write(c->socket, w->slice(0, w->total()), progress_of(c),
                          [this, c, w](boost::system::error_code ec, std::size_t) { wrote(c, w, ec); });
    }

    // The emulated link: hands the frame's next pieces over while the link's queue is short, and
    // comes back when it has drained to half of that.
    void feed(const ConnPtr& c, const std::shared_ptr<PendingWrite>& w) {
        LinkShaper& shaper = link_line->shaper();
        const std::size_t piece = piece_bytes(shaper.spec());
        auto backlog = shaper.backlog();
        while (w->handed < w->total() && backlog < kPaceAhead) {
            const std::size_t offset = w->handed, length = std::min(piece, w->total() - offset);
            w->handed += length;
            link_line->submit(length, false, [this, c, w, offset, length] { on_piece(c, {w, offset, length}); });
            backlog = shaper.backlog();
        }
        if (w->handed == w->total()) return;
        c->pace.expires_after(std::max<Clock::duration>(backlog - kPaceAhead / 2, std::chrono::microseconds(100)));
        c->pace.async_wait([this, c, w](boost::system::error_code ec) {
            if (ec) return finish(w, asio::error::operation_aborted);  // the connection closed
            feed(c, w);
        });
    }

    void on_piece(const ConnPtr& c, Piece piece) {
        {
            std::lock_guard lock(c->tx_mutex);
            if (c->closed) return finish(piece.write, asio::error::operation_aborted);
        }
        c->arrived.push_back(std::move(piece));
        write_arrived(c);
    }

    void write_arrived(const ConnPtr& c) {
        if (c->piece_writing || c->arrived.empty()) return;
        Piece p = c->arrived.front();
        c->arrived.pop_front();
        c->piece_writing = true;
        asio::async_write(c->socket, p.write->slice(p.offset, p.length), progress_of(c),
                          [this, c, p](boost::system::error_code ec, std::size_t) {
                              c->piece_writing = false;
                              if (ec) return wrote(c, p.write, ec);
                              went_out(c);
                              p.write->written += p.length;
                              if (p.write->written == p.write->total()) wrote(c, p.write, {});
                              write_arrived(c);
                          });
    }

    ConnPtr sending_conn(int dest) {
        std::lock_guard lock(mutex);
        const auto& mine = live[static_cast<std::size_t>(dest)];
        return mine.empty() ? nullptr : mine.back();
    }

    ConnPtr connect(int dest, std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        std::string last_error = "no attempt finished";
        for (;;) {
            if (auto c = sending_conn(dest)) return c;
            auto attempt = std::make_shared<Attempt>();
            asio::post(io, [this, dest, attempt] { start_connect(dest, attempt); });
            std::unique_lock lock(mutex);
            changed.wait_until(lock, deadline, [&] { return attempt->done || !live[static_cast<std::size_t>(dest)].empty(); });
            if (!live[static_cast<std::size_t>(dest)].empty()) return live[static_cast<std::size_t>(dest)].back();
            if (attempt->done) last_error = attempt->error;
            if (Clock::now() >= deadline)
                throw Error("bulk channel: cannot connect to " + where(dest) + " over TCP within " +
                            std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s: " + last_error);
            changed.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)),
                               [&] { return !live[static_cast<std::size_t>(dest)].empty(); });
        }
    }
};

std::size_t BulkChannel::payload_limit(MessageType type, std::size_t params, int nodes) {
    // Parameters and updater state (at most 4 floats per parameter: Adam keeps 2, AMSGrad 3) as
    // floats, plus the fixed fields.
    const std::size_t floats = 5 * params;
    switch (type) {
        case MessageType::ParamsRequest: return 64;
        case MessageType::Average:
        case MessageType::AverageResult: return 64 + 4 * floats;
        case MessageType::Params: return 1024 + static_cast<std::size_t>(std::max(nodes, 0)) + 4 * floats;
        default: return 0;
    }
}

BulkChannel::BulkChannel(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address, std::uint64_t run_id,
                         Secret secret, BulkOptions options)
    : impl_(std::make_unique<Impl>(rank, std::move(peers), run_id, std::move(secret), options)) {
    Impl& d = *impl_;
    if (options.incarnation == 0) throw Error("bulk channel: the incarnation must be positive");
    const auto port = d.peers.at(static_cast<std::size_t>(rank)).port;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(bind_address.empty() ? "0.0.0.0" : bind_address, ec);
    if (ec) throw Error("bulk channel: --bind " + bind_address + " is not an IP address");
    d.bind = address;
    tcp::resolver resolver(d.io);
    for (std::size_t p = 0; p < d.peers.size(); ++p) {
        auto results = resolver.resolve(d.peers[p].host, std::to_string(d.peers[p].port), ec);
        std::vector<tcp::endpoint> list;
        std::set<asio::ip::address> set;
        if (!ec)
            for (const auto& r : results)
                if (address.is_unspecified() || r.endpoint().address().is_v4() == address.is_v4()) {
                    list.push_back(r.endpoint());
                    set.insert(plain(r.endpoint().address()));
                }
        if (list.empty())
            throw Error("bulk channel: node " + std::to_string(p) + " host '" + d.peers[p].host +
                        "' does not resolve to a usable address" + (ec ? ": " + ec.message() : std::string()));
        d.endpoints.push_back(std::move(list));
        d.addresses.push_back(std::move(set));
    }
    const tcp::endpoint endpoint(address, port);
    d.acceptor.open(endpoint.protocol(), ec);
    if (!ec) d.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) d.acceptor.bind(endpoint, ec);
    if (!ec) d.acceptor.listen(64, ec);
    if (ec)
        throw Error("TCP port " + std::to_string(port) + " on " + address.to_string() + " (node " +
                    std::to_string(rank) + "'s bulk channel) cannot be used: " + ec.message() +
                    "; stop what holds it, or give node " + std::to_string(rank) + " another port in --nodes");
    d.accept();
    d.thread = std::thread([impl = impl_.get()] {
        for (;;) {
            try {
                impl->io.run();
                return;
            } catch (const std::exception&) {
                // A handler threw (OpenSSL failed, out of memory): that connection is lost, the
                // channel goes on.
            }
        }
    });
}

BulkChannel::~BulkChannel() {
    Impl& d = *impl_;
    std::promise<void> closed;
    auto done = closed.get_future();
    asio::post(d.io, [&d, &closed] {
        boost::system::error_code ignored;
        d.acceptor.close(ignored);
        d.accept_backoff.cancel();
        for (auto c : std::vector<ConnPtr>(d.all.begin(), d.all.end())) d.close(c, false);
        closed.set_value();
    });
    // Handlers of what was just closed run out quickly; stop() then ends the thread regardless.
    done.wait_for(std::chrono::seconds(2));
    d.io.stop();
    if (d.thread.joinable()) d.thread.join();
}

void BulkChannel::set_param_count(std::size_t params) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->params = params;
        impl_->params_known = true;
    }
    asio::post(impl_->io, [d = impl_.get()] {
        auto waiting = std::move(d->parked);
        d->parked.clear();
        for (auto& c : waiting) d->resume(c);
    });
}

void BulkChannel::send(int dest, MessageType type, std::span<const std::uint8_t> payload,
                       std::chrono::milliseconds connect_timeout) {
    Impl& d = *impl_;
    if (dest == d.rank || dest < 0 || dest >= static_cast<int>(d.peers.size()))
        throw Error("bulk channel: node " + std::to_string(d.rank) + " cannot send to node " + std::to_string(dest) +
                    " (the run has nodes 0.." + std::to_string(d.peers.size() - 1) + ")");
    // A connection either side opened will do (whoever needed one first made it). One that broke
    // -- the peer's process was restarted, a firewall dropped it -- is replaced by a new one, once.
    std::string why;
    for (int attempt = 0; attempt < 2; ++attempt) {
        ConnPtr c = d.connect(dest, connect_timeout);
        auto w = std::make_shared<PendingWrite>();
        w->payload = payload;
        auto result = w->done.get_future();
        {
            std::lock_guard lock(c->tx_mutex);
            if (c->closed) {
                why = "the connection closed";
                continue;
            }
            w->head = pack_frame_head(c->tx_key, type, ++c->tx_seq, payload.size());
            const std::uint8_t* p = w->head.data();
            hmac(c->tx_key, {std::span<const std::uint8_t>(p, kFrameHeader), payload}, w->tag.data());
            c->queue.push_back(w);
        }
        const auto queued = Clock::now();
        asio::post(d.io, [&d, c] { d.pump(c); });
        // The deadline follows the work: the write fails only when no byte of this connection has
        // gone out for write_timeout (a 7 MB frame takes 58 s at 1 Mbit/s and is fine; a peer
        // that stopped reading fills the socket's buffers and then nothing moves).
        while (result.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
            const auto moved = std::max(queued, Clock::time_point(Clock::duration(c->progressed.load(std::memory_order_relaxed))));
            if (Clock::now() - moved < d.options.write_timeout) continue;
            asio::post(d.io, [&d, c] { d.close(c, false); });
            result.wait();  // closing ends the write at once; the payload must outlive it
            throw Error("bulk channel: writing " + std::to_string(payload.size()) + " bytes of " + type_name(type) +
                        " to " + d.where(dest) + ": nothing went out for " +
                        std::to_string(std::chrono::duration<double>(d.options.write_timeout).count()).substr(0, 5) +
                        " s: the peer is not reading; its connection was closed");
        }
        const auto ec = result.get();
        if (!ec) {
            d.tx += kFrameHeader + 2 * kMac + payload.size();
            return;
        }
        why = ec.message();
    }
    throw Error("bulk channel: sending " + type_name(type) + " to " + d.where(dest) + " failed: " + why);
}

std::optional<Message> BulkChannel::receive(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mutex);
    if (!impl_->changed.wait_for(lock, timeout, [&] { return !impl_->inbox.empty(); })) return std::nullopt;
    Message m = std::move(impl_->inbox.front());
    impl_->inbox.pop_front();
    return m;
}

std::optional<std::chrono::steady_clock::time_point> BulkChannel::last_progress(int rank) const {
    if (rank < 0 || rank >= static_cast<int>(impl_->peers.size())) return std::nullopt;
    const std::int64_t ns = impl_->progress[static_cast<std::size_t>(rank)].load(std::memory_order_relaxed);
    if (ns == 0) return std::nullopt;
    return Clock::time_point(Clock::duration(ns));
}

std::uint64_t BulkChannel::connections_lost(int rank) const {
    if (rank < 0 || rank >= static_cast<int>(impl_->peers.size())) return 0;
    return impl_->losses[static_cast<std::size_t>(rank)].load();
}

std::uint64_t BulkChannel::bytes_tx() const { return impl_->tx; }
std::uint64_t BulkChannel::bytes_rx() const { return impl_->rx; }
std::uint64_t BulkChannel::rejected() const { return impl_->rejected; }
std::size_t BulkChannel::unidentified() const { return impl_->unidentified_count; }
std::uint16_t BulkChannel::local_port() const {
    boost::system::error_code ec;
    const auto e = impl_->acceptor.local_endpoint(ec);
    return ec ? 0 : e.port();
}

}  // namespace thresher::dist
