// UdpTransport (see udp_transport.h for what it promises). The protocol, per pair of ranks:
//
//   sender                                   receiver
//   message id n, chunks 0..k-1  --data-->   checks (datagram.h), then the sender's address;
//                                            stores the chunk, acks (n, i) in a batched Ack
//   drops (n, i) from in-flight  <--ack---   delivers message n once all k chunks are in and
//   resends what stays unacked                remembers n in the sender's IdWindow
//
// Incarnations (datagram.h): a peer's data is accepted only once both sides know each other's
// incarnation, learnt from hellos (an internal datagram type, greeting with backoff until an
// answer comes) or from any authentic datagram. A newer incarnation of a peer resets all we
// knew about it (adopt()); an older one is a replay.
//
// Flow control: at most `cwnd` chunks per peer are in flight. cwnd grows by one per chunk acked
// on its first try and halves (at most once per retransmit_after) when a retransmission timer
// fires: a receiver whose socket buffer overflows (2 of 3 ranks sending it 5 MB at once) makes
// the senders back off instead of losing most of what they send.
//
// Everything below the public methods runs on the network thread and needs no lock; the public
// methods meet it at `shared` (one mutex: inbox, published stats, unacked count, failure).
#include "dist/net/udp_transport.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <ifaddrs.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "dist/net/incarnation.h"
#include "dist/net/link_delay_line.h"
#include "dist/net/wire.h"

namespace thresher::dist {

namespace asio = boost::asio;
using asio::ip::udp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint8_t kAckType = 0x80;      // outside MessageType: acks never reach the caller
constexpr std::uint8_t kHelloType = 0x81;    // "this is my incarnation"; payload: u8 1 = please answer
constexpr auto kMaxHelloInterval = std::chrono::seconds(1);
constexpr std::size_t kAckEntryBytes = 10;   // message_id u64 + chunk_index u16
constexpr std::size_t kMaxChunks = 65535;    // chunk_count is a u16
constexpr double kInitialWindow = 32;
constexpr double kMinWindow = 4;
constexpr auto kTick = std::chrono::milliseconds(10);  // retransmission / give-up scan
constexpr std::size_t kDrainBudget = 256;    // datagrams read per wake-up before acking

using ChunkKey = std::pair<std::uint64_t, std::uint16_t>;  // (message id, chunk index)

struct Outgoing {
    MessageType type;
    std::shared_ptr<const std::vector<std::uint8_t>> payload;  // shared by a broadcast's copies
    std::uint16_t chunk_count;
    std::uint16_t next_unsent = 0;
    std::uint16_t unacked;
};

struct InFlight {
    Clock::time_point sent_at;
    Clock::duration timeout;
    bool retransmitted = false;
};

// What we send to one peer.
struct PeerOut {
    std::uint64_t last_id = 0;
    std::map<std::uint64_t, Outgoing> pending;  // not yet fully acknowledged
    std::deque<std::uint64_t> unsent;           // ids with chunks never sent yet, in id order
    std::map<ChunkKey, InFlight> in_flight;     // sent, not acknowledged
    double cwnd = kInitialWindow;
    double ssthresh = 1e9;
    Clock::time_point last_cut{};
    Clock::time_point last_ack{};
    Clock::time_point pending_since{};
    bool unreachable = false;
};

// Greeting a peer whose incarnation we do not know yet.
struct Greeting {
    Clock::time_point next{};      // next hello asking for an answer
    Clock::duration every{};       // doubles up to kMaxHelloInterval
    Clock::time_point last_answer{};  // answers are rate-limited: a replay must not make a flood
};


struct Partial {
    MessageType type;
    std::uint16_t chunk_count;
    std::uint16_t received = 0;
    std::size_t reserved;  // counted against max_partial_bytes from the first chunk on
    std::vector<std::vector<std::uint8_t>> chunks;
    std::vector<bool> got;
    Clock::time_point touched{};  // its last chunk: one whose sender went silent expires
};

// What we receive from one peer.
struct PeerIn {
    IdWindow window;
    std::map<std::uint64_t, Partial> partial;
    std::vector<ChunkKey> acks;  // to send at the end of this batch
};


// "thresher-engine, pid 4242" for the process holding local UDP `port`, or "" when /proc does not
// tell (another user's process, or no /proc). Reads /proc/net/udp{,6} for the socket inode, then
// looks for that inode among the processes' open descriptors.
std::string udp_port_owner(std::uint16_t port) {
    std::vector<std::string> inodes;
    for (const char* table : {"/proc/net/udp", "/proc/net/udp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // column titles
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
                continue;
            const auto colon = local.rfind(':');
            if (colon == std::string::npos) continue;
            if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) == port) inodes.push_back("socket:[" + inode + "]");
        }
    }
    if (inodes.empty()) return "";
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::directory_iterator proc("/proc", ec), end; !ec && proc != end; proc.increment(ec)) {
        const std::string pid = proc->path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::error_code fd_ec;
        for (fs::directory_iterator fd(proc->path() / "fd", fd_ec), fd_end; !fd_ec && fd != fd_end; fd.increment(fd_ec)) {
            std::error_code link_ec;
            const auto target = fs::read_symlink(fd->path(), link_ec);
            if (link_ec || std::find(inodes.begin(), inodes.end(), target.string()) == inodes.end()) continue;
            std::string name;
            std::ifstream(proc->path() / "comm") >> name;
            return (name.empty() ? "pid " : name + ", pid ") + pid;
        }
    }
    return "";
}

}  // namespace

struct UdpTransport::Impl {
    Impl(int rank, std::vector<UdpEndpoint> peer_list, const std::string& bind_address, std::uint64_t run,
         Secret key, UdpOptions opts);
    ~Impl();

    // Network thread.
    void start_receive();
    void on_receive(const boost::system::error_code& ec, std::size_t size);
    void handle_datagram(std::size_t size);
    void on_ack(int sender, const std::vector<std::uint8_t>& payload);
    void adopt(int peer, std::uint64_t incarnation);
    // `dest`: the incarnation the hello is addressed to (0: the one we know of that peer).
    void greet(int peer, bool want_answer, std::uint64_t dest = 0);
    void on_chunk(int sender, Datagram& datagram);
    void queue_ack(int sender, std::uint64_t id, std::uint16_t chunk);
    void send_acks(int sender);
    void enqueue(int dest, MessageType type, std::shared_ptr<const std::vector<std::uint8_t>> payload);
    void pump(int dest);
    void send_chunk(int dest, std::uint64_t id, const Outgoing& message, std::uint16_t chunk);
    void transmit(int dest, const std::vector<std::uint8_t>& datagram);
    void transmit_now(int dest, const std::vector<std::uint8_t>& datagram);
    void start_tick();
    void on_tick(const boost::system::error_code& ec);
    void deliver(Message message);
    void drop(DropReason why) { ++local_stats.dropped[why]; }
    void publish();

    // Any thread.
    void check_running() const;  // caller holds shared_mutex

    const int rank;
    const int world;
    const std::uint64_t run_id;
    const std::uint64_t own_incarnation;
    const Secret secret;
    const UdpOptions options;
    const std::size_t chunk_bytes;  // payload bytes per chunk

    // Declared first, destroyed last: the socket and timer below belong to it.
    asio::io_context io;
    udp::socket socket{io};
    asio::steady_timer tick{io};
    std::unique_ptr<LinkDelayLine> link_line;  // the emulated link (link_emulator.h), when one is set
    std::vector<udp::endpoint> peers;
    std::vector<std::uint8_t> rx_buffer = std::vector<std::uint8_t>(65536);  // any UDP datagram fits, so Oversize is seen
    udp::endpoint rx_from;
    std::uint16_t bound_port = 0;

    // Network thread only.
    std::vector<PeerOut> out;
    std::vector<PeerIn> in;
    std::vector<std::uint64_t> peer_inc;  // 0: not known yet
    std::vector<Greeting> greeting;
    std::size_t partial_bytes = 0;
    TransportStats local_stats;

    // Shared with the caller's threads.
    mutable std::mutex shared_mutex;
    std::condition_variable inbox_ready;
    std::condition_variable all_acked;
    std::deque<Message> inbox;
    std::uint64_t unacked_messages = 0;
    std::uint64_t self_id = 0;
    TransportStats stats;
    std::vector<bool> unreachable;
    std::vector<std::uint64_t> incarnations;  // peer_inc as last published
    // By rank: when an authentic datagram of its current process last arrived (acks and hellos
    // included), ns on the steady clock; 0: never. Liveness from progress (Transport::last_heard).
    std::unique_ptr<std::atomic<std::int64_t>[]> heard;
    std::string failure;  // why the network thread stopped, if it did

    std::thread thread;  // last: started when everything above is ready
};

UdpTransport::Impl::Impl(int r, std::vector<UdpEndpoint> peer_list, const std::string& bind_address,
                         std::uint64_t run, Secret key, UdpOptions opts)
    : rank(r),
      world(static_cast<int>(peer_list.size())),
      run_id(run),
      own_incarnation(opts.incarnation ? *opts.incarnation : new_incarnation()),
      secret(std::move(key)),
      options(opts),
      chunk_bytes(opts.max_datagram > kHeaderBytes + kMacBytes ? opts.max_datagram - kHeaderBytes - kMacBytes : 0),
      out(peer_list.size()),
      in(peer_list.size()),
      peer_inc(peer_list.size(), 0),
      greeting(peer_list.size()),
      unreachable(peer_list.size(), false),
      incarnations(peer_list.size(), 0),
      heard(new std::atomic<std::int64_t>[peer_list.size()]()) {
    if (world < 1 || rank < 0 || rank >= world)
        throw Error("udp transport: rank " + std::to_string(rank) + " is not among " + std::to_string(world) + " nodes");
    if (options.max_datagram > kMaxDatagramBytes || chunk_bytes < kAckEntryBytes * 4)
        throw Error("udp transport: max_datagram " + std::to_string(options.max_datagram) + " must lie in [" +
                    std::to_string(kHeaderBytes + kMacBytes + kAckEntryBytes * 4) + ", " +
                    std::to_string(kMaxDatagramBytes) + "]");
    if (options.retransmit_after.count() <= 0 || options.max_retransmit_after < options.retransmit_after ||
        options.give_up_after.count() <= 0 || options.max_window < kMinWindow)
        throw Error("udp transport: retransmission options must be positive, with max_retransmit_after >= "
                    "retransmit_after and max_window >= 4");
    if (own_incarnation == 0 || options.hello_after.count() <= 0)
        throw Error("udp transport: the incarnation and hello_after must be positive");
    for (auto& g : greeting) g.every = options.hello_after;
    if (options.link) link_line = std::make_unique<LinkDelayLine>(io, options.link);

    boost::system::error_code ec;
    const auto address = asio::ip::make_address(bind_address, ec);
    if (ec) throw Error("udp transport: bind address '" + bind_address + "' is not an IP address (see --bind)");
    const auto protocol = address.is_v4() ? udp::v4() : udp::v6();

    udp::resolver resolver(io);
    for (int p = 0; p < world; ++p) {
        const auto& peer = peer_list[p];
        auto results = resolver.resolve(protocol, peer.host, std::to_string(peer.port), ec);
        if (ec || results.empty())
            throw Error("udp transport: node " + std::to_string(p) + " host '" + peer.host + "' does not resolve to an " +
                        (address.is_v4() ? "IPv4" : "IPv6") + " address: " + (ec ? ec.message() : "no results"));
        peers.push_back(results.begin()->endpoint());
    }

    const std::uint16_t port = options.bind_port.value_or(peer_list[rank].port);
    const std::string where = "port " + std::to_string(port) + " on " + bind_address;
    socket.open(protocol, ec);
    if (ec) throw Error("udp transport: cannot open a UDP socket: " + ec.message());
    socket.bind(udp::endpoint(address, port), ec);
    if (ec == asio::error::address_in_use) {
        const std::string owner = udp_port_owner(port);
        throw Error(where + " is in use by another process" + (owner.empty() ? "" : " (" + owner + ")") +
                    "; stop it, or give node " + std::to_string(rank) + " another port in its --nodes entry (the " +
                    "same list on every node), or another interface with --bind");
    }
    if (ec == boost::system::errc::address_not_available)
        throw Error("cannot bind " + where + ": " + bind_address +
                    " is not an address of this host (see --bind, --network-mask, THRESHER_IP)");
    if (ec) throw Error("cannot bind " + where + ": " + ec.message());
    bound_port = socket.local_endpoint().port();
    // Best effort: bigger kernel buffers absorb bursts; the kernel caps them at net.core.*mem_max.
    socket.set_option(asio::socket_base::receive_buffer_size(4 << 20), ec);
    socket.set_option(asio::socket_base::send_buffer_size(4 << 20), ec);
    // Sends never block the network thread: a full buffer is a lost datagram, and lost datagrams
    // are what retransmission is for.
    socket.non_blocking(true, ec);
    if (ec) throw Error("udp transport: cannot make the socket non-blocking: " + ec.message());

    start_receive();
    start_tick();
    thread = std::thread([this] {
        try {
            io.run();
        } catch (const std::exception& e) {
            std::lock_guard lock(shared_mutex);
            failure = e.what();
            inbox_ready.notify_all();
            all_acked.notify_all();
        }
    });
}

UdpTransport::Impl::~Impl() {
    io.stop();
    if (thread.joinable()) thread.join();
}

void UdpTransport::Impl::check_running() const {
    if (!failure.empty())
        throw Error("udp transport of rank " + std::to_string(rank) + ": the network thread stopped: " + failure);
}

// ---- receiving ----

void UdpTransport::Impl::start_receive() {
    socket.async_receive_from(asio::buffer(rx_buffer), rx_from,
                              [this](const boost::system::error_code& ec, std::size_t size) { on_receive(ec, size); });
}

void UdpTransport::Impl::on_receive(const boost::system::error_code& ec, std::size_t size) {
    if (ec == asio::error::operation_aborted) return;  // closing down
    // Other errors (an ICMP error surfacing on the socket, say) concern one datagram: carry on.
    if (!ec) handle_datagram(size);
    // Drain what else is queued, so one Ack datagram answers many chunks.
    for (std::size_t i = 0; i < kDrainBudget; ++i) {
        boost::system::error_code read_ec;
        const std::size_t n = socket.receive_from(asio::buffer(rx_buffer), rx_from, 0, read_ec);
        if (read_ec == asio::error::would_block || read_ec == asio::error::try_again) break;
        if (read_ec) continue;
        handle_datagram(n);
    }
    for (int p = 0; p < world; ++p) send_acks(p);
    for (int p = 0; p < world; ++p) pump(p);  // acks may have opened windows
    publish();
    start_receive();
}

void UdpTransport::Impl::handle_datagram(std::size_t size) {
    ++local_stats.datagrams_rx;
    local_stats.bytes_rx += size;
    DropReason why{};
    auto datagram = open(std::span<const std::uint8_t>(rx_buffer.data(), size), secret, run_id, why);
    if (!datagram) return drop(why);
    const std::uint32_t sender = datagram->header.sender;
    // Authentic, but a node's datagrams must also come from that node's configured address: a
    // captured datagram re-sent from elsewhere stops here.
    if (sender >= static_cast<std::uint32_t>(world) || static_cast<int>(sender) == rank || rx_from != peers[sender])
        return drop(DropReason::UnknownSender);
    const int peer = static_cast<int>(sender);
    const auto& h = datagram->header;
    // Which process of that rank: a real one never says 0; an older one than we know is gone, so
    // this is a copy of something it sent once; a newer one replaces it.
    if (h.sender_incarnation == 0) return drop(DropReason::BadVersion);
    if (h.sender_incarnation < peer_inc[peer]) return drop(DropReason::Replay);
    if (h.sender_incarnation > peer_inc[peer]) {
        // A process of that rank we have not heard from. It is adopted only once it shows it
        // knows this process (a datagram addressed to our incarnation, which no recording made
        // before we started can carry): until then it is answered with a hello addressed to the
        // incarnation it claims, which only that process, if it is alive, can take up. A datagram
        // of an earlier run with the same secret, or of a dead predecessor, thus changes nothing.
        if (h.dest_incarnation != own_incarnation) {
            if (h.type != kHelloType) drop(DropReason::Replay);
            return greet(peer, true, h.sender_incarnation);
        }
        adopt(peer, h.sender_incarnation);
    }
    heard[peer].store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    if (h.type == kHelloType) {
        if (datagram->payload.size() != 1) return drop(DropReason::BadLength);
        if (datagram->payload[0] == 1) greet(peer, false);
        return;
    }
    // Data and acks are for one process of ours: this one. Others' are replays (of datagrams
    // meant for our predecessor), or a peer that has not heard of us yet: tell it who we are.
    if (h.dest_incarnation != own_incarnation) {
        drop(DropReason::Replay);
        return greet(peer, false);
    }
    if (h.type == kAckType) return on_ack(peer, datagram->payload);
    if (!is_message_type(h.type)) return drop(DropReason::BadVersion);
    on_chunk(peer, *datagram);
}

void UdpTransport::Impl::adopt(int peer, std::uint64_t incarnation) {
    const bool restarted = peer_inc[peer] != 0;
    peer_inc[peer] = incarnation;
    // What it had half sent, and which of its ids were done, belonged to its predecessor.
    for (const auto& [id, partial] : in[peer].partial) partial_bytes -= partial.reserved;
    in[peer] = PeerIn{};
    std::uint64_t dropped = 0;
    if (restarted) {
        // Our messages to the predecessor die with it: the new process never heard of their ids.
        // (On first contact nothing was sent yet, so what waits is kept, for this incarnation.)
        dropped = out[peer].pending.size();
        out[peer] = PeerOut{};
    }
    out[peer].unreachable = false;
    out[peer].last_ack = Clock::now();
    {
        // Published at once, with the unacked count: a caller that saw flush() succeed because
        // of the restart must also see the new incarnation.
        std::lock_guard lock(shared_mutex);
        incarnations[peer] = incarnation;
        unreachable[peer] = false;
        unacked_messages -= dropped;
        if (dropped > 0 && unacked_messages == 0) all_acked.notify_all();
    }
    greeting[peer].every = options.hello_after;
    pump(peer);
}

void UdpTransport::Impl::greet(int peer, bool want_answer, std::uint64_t dest) {
    Greeting& g = greeting[peer];
    const auto now = Clock::now();
    if (!want_answer || dest != 0) {  // an answer: rate-limited, so replays cannot make a flood
        if (now - g.last_answer < kTick) return;
        g.last_answer = now;
    }
    DatagramHeader h;
    h.type = kHelloType;
    h.run_id = run_id;
    h.sender = static_cast<std::uint32_t>(rank);
    h.sender_incarnation = own_incarnation;
    h.dest_incarnation = dest != 0 ? dest : peer_inc[peer];
    const std::uint8_t payload[1] = {static_cast<std::uint8_t>(want_answer ? 1 : 0)};
    transmit(peer, seal(h, payload, secret));
}

void UdpTransport::Impl::on_chunk(int sender, Datagram& datagram) {
    PeerIn& peer = in[sender];
    const auto& h = datagram.header;
    switch (peer.window.state(h.message_id)) {
    case IdWindow::State::BelowFloor:
        drop(DropReason::Replay);
        return queue_ack(sender, h.message_id, h.chunk_index);  // our earlier ack may have been lost
    case IdWindow::State::Done:
        ++local_stats.duplicates;
        return queue_ack(sender, h.message_id, h.chunk_index);
    case IdWindow::State::New: break;
    }
    const auto type = static_cast<MessageType>(h.type);
    auto it = peer.partial.find(h.message_id);
    if (it == peer.partial.end()) {
        if (h.chunk_count == 1) {  // the common small message: no reassembly
            queue_ack(sender, h.message_id, 0);
            peer.window.mark_done(h.message_id);
            return deliver(Message{sender, type, h.message_id, std::move(datagram.payload), peer_inc[sender]});
        }
        // Reserve the whole message at its first chunk, so a message once started always fits
        // and memory stays bounded whatever authenticated senders do. A refused chunk is not
        // acked: its sender retries once other messages complete.
        const std::size_t reserve = std::size_t{h.chunk_count} * kMaxPayloadBytes;
        if (partial_bytes + reserve > options.max_partial_bytes) return drop(DropReason::Oversize);
        Partial fresh{type, h.chunk_count, 0, reserve, std::vector<std::vector<std::uint8_t>>(h.chunk_count),
                      std::vector<bool>(h.chunk_count, false)};
        it = peer.partial.emplace(h.message_id, std::move(fresh)).first;
        partial_bytes += reserve;
    } else if (it->second.type != type || it->second.chunk_count != h.chunk_count) {
        return drop(DropReason::BadChunk);
    }
    Partial& p = it->second;
    p.touched = Clock::now();
    queue_ack(sender, h.message_id, h.chunk_index);
    if (p.got[h.chunk_index]) {
        ++local_stats.duplicates;
        return;
    }
    p.got[h.chunk_index] = true;
    p.chunks[h.chunk_index] = std::move(datagram.payload);
    if (++p.received < p.chunk_count) return;

    std::size_t total = 0;
    for (const auto& c : p.chunks) total += c.size();
    Message message{sender, p.type, h.message_id, {}, peer_inc[sender]};
    message.payload.reserve(total);
    for (const auto& c : p.chunks) message.payload.insert(message.payload.end(), c.begin(), c.end());
    partial_bytes -= p.reserved;
    peer.partial.erase(it);
    peer.window.mark_done(message.id);
    deliver(std::move(message));
}

void UdpTransport::Impl::deliver(Message message) {
    std::lock_guard lock(shared_mutex);
    inbox.push_back(std::move(message));
    inbox_ready.notify_one();
}

void UdpTransport::Impl::queue_ack(int sender, std::uint64_t id, std::uint16_t chunk) {
    auto& acks = in[sender].acks;
    acks.emplace_back(id, chunk);
    if (acks.size() >= chunk_bytes / kAckEntryBytes) send_acks(sender);
}

void UdpTransport::Impl::send_acks(int sender) {
    auto& acks = in[sender].acks;
    if (acks.empty()) return;
    std::vector<std::uint8_t> payload(acks.size() * kAckEntryBytes);
    for (std::size_t i = 0; i < acks.size(); ++i) {
        wire::store(payload.data() + i * kAckEntryBytes, acks[i].first);
        wire::store(payload.data() + i * kAckEntryBytes + 8, acks[i].second);
    }
    acks.clear();
    DatagramHeader h;
    h.type = kAckType;
    h.run_id = run_id;
    h.sender = static_cast<std::uint32_t>(rank);
    h.sender_incarnation = own_incarnation;
    h.dest_incarnation = peer_inc[sender];
    transmit(sender, seal(h, payload, secret));
}

void UdpTransport::Impl::on_ack(int sender, const std::vector<std::uint8_t>& payload) {
    if (payload.size() % kAckEntryBytes != 0) return drop(DropReason::BadLength);
    PeerOut& o = out[sender];
    o.last_ack = Clock::now();
    o.unreachable = false;
    std::uint64_t completed = 0;
    for (std::size_t at = 0; at < payload.size(); at += kAckEntryBytes) {
        const ChunkKey key{wire::load<std::uint64_t>(payload.data() + at), wire::load<std::uint16_t>(payload.data() + at + 8)};
        auto flight = o.in_flight.find(key);
        if (flight == o.in_flight.end()) continue;  // acked before (a duplicate ack) or never sent
        const bool first_try = !flight->second.retransmitted;
        o.in_flight.erase(flight);
        // Each chunk enters in_flight once and leaves once, so this counts every chunk once.
        auto message = o.pending.find(key.first);
        if (message != o.pending.end() && --message->second.unacked == 0) {
            o.pending.erase(message);
            ++completed;
        }
        if (first_try) o.cwnd = std::min<double>(o.cwnd + (o.cwnd < o.ssthresh ? 1.0 : 1.0 / o.cwnd),
                                                 static_cast<double>(options.max_window));
    }
    if (completed > 0) {
        std::lock_guard lock(shared_mutex);
        unacked_messages -= completed;
        if (unacked_messages == 0) all_acked.notify_all();
    }
}

// ---- sending ----

void UdpTransport::Impl::enqueue(int dest, MessageType type, std::shared_ptr<const std::vector<std::uint8_t>> payload) {
    PeerOut& o = out[dest];
    const std::uint64_t id = ++o.last_id;
    const std::size_t chunks = std::max<std::size_t>(1, (payload->size() + chunk_bytes - 1) / chunk_bytes);
    if (o.pending.empty()) o.pending_since = Clock::now();
    o.pending.emplace(id, Outgoing{type, std::move(payload), static_cast<std::uint16_t>(chunks), 0,
                                   static_cast<std::uint16_t>(chunks)});
    o.unsent.push_back(id);
    pump(dest);
    publish();
}

void UdpTransport::Impl::pump(int dest) {
    PeerOut& o = out[dest];
    if (peer_inc[dest] == 0) return;  // not before we know which process we talk to (on_tick greets)
    while (!o.unsent.empty() && static_cast<double>(o.in_flight.size()) < o.cwnd) {
        const std::uint64_t id = o.unsent.front();
        Outgoing& message = o.pending.at(id);
        const std::uint16_t chunk = message.next_unsent++;
        if (message.next_unsent == message.chunk_count) o.unsent.pop_front();
        o.in_flight.emplace(ChunkKey{id, chunk}, InFlight{Clock::now(), options.retransmit_after});
        send_chunk(dest, id, message, chunk);
    }
}

void UdpTransport::Impl::send_chunk(int dest, std::uint64_t id, const Outgoing& message, std::uint16_t chunk) {
    const std::size_t begin = std::size_t{chunk} * chunk_bytes;
    const std::size_t end = std::min(message.payload->size(), begin + chunk_bytes);
    DatagramHeader h;
    h.type = static_cast<std::uint8_t>(message.type);
    h.run_id = run_id;
    h.sender = static_cast<std::uint32_t>(rank);
    h.sender_incarnation = own_incarnation;
    h.dest_incarnation = peer_inc[dest];
    h.message_id = id;
    h.chunk_index = chunk;
    h.chunk_count = message.chunk_count;
    transmit(dest, seal(h, std::span(*message.payload).subspan(begin, end - begin), secret));
}

void UdpTransport::Impl::transmit(int dest, const std::vector<std::uint8_t>& datagram) {
    if (!link_line) return transmit_now(dest, datagram);
    // Through the emulated link: written when it arrives at the far end, or lost there (counted
    // as sent, as a NIC counts what the network later loses; the retransmission timer covers it).
    auto copy = std::make_shared<const std::vector<std::uint8_t>>(datagram);
    if (!link_line->submit(copy->size(), true, [this, dest, copy] { transmit_now(dest, *copy); })) {
        ++local_stats.datagrams_tx;
        local_stats.bytes_tx += datagram.size();
    }
}

void UdpTransport::Impl::transmit_now(int dest, const std::vector<std::uint8_t>& datagram) {
    boost::system::error_code ec;
    socket.send_to(asio::buffer(datagram), peers[dest], 0, ec);
    // A failed send (full buffer, no route) is a lost datagram: the retransmission timer covers it.
    if (ec) return;
    ++local_stats.datagrams_tx;
    local_stats.bytes_tx += datagram.size();
}

void UdpTransport::Impl::start_tick() {
    tick.expires_after(kTick);
    tick.async_wait([this](const boost::system::error_code& ec) { on_tick(ec); });
}

void UdpTransport::Impl::on_tick(const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    const auto now = Clock::now();
    for (int dest = 0; dest < world; ++dest) {
        if (dest != rank && peer_inc[dest] == 0 && now >= greeting[dest].next) {
            greet(dest, true);
            greeting[dest].next = now + greeting[dest].every;
            greeting[dest].every = std::min<Clock::duration>(greeting[dest].every * 2, kMaxHelloInterval);
        }
        // Half-received messages of a sender silent for twice give_up_after release their budget:
        // the sender died (or gave up on us long ago) and will never complete them.
        auto& partial = in[dest].partial;
        for (auto it = partial.begin(); it != partial.end();) {
            if (now - it->second.touched < 2 * options.give_up_after) {
                ++it;
                continue;
            }
            partial_bytes -= it->second.reserved;
            it = partial.erase(it);
        }
        PeerOut& o = out[dest];
        o.unreachable = !o.pending.empty() && now - std::max(o.last_ack, o.pending_since) >= options.give_up_after;
        bool lost = false;
        for (auto& [key, flight] : o.in_flight) {
            if (now - flight.sent_at < flight.timeout) continue;
            send_chunk(dest, key.first, o.pending.at(key.first), key.second);
            flight.sent_at = now;
            flight.timeout = std::min<Clock::duration>(flight.timeout * 2, options.max_retransmit_after);
            flight.retransmitted = true;
            ++local_stats.retransmitted;
            lost = true;
            // An unreachable peer gets one probe per tick, not its whole window.
            if (o.unreachable) break;
        }
        if (lost && now - o.last_cut >= options.retransmit_after) {
            o.ssthresh = std::max(o.cwnd / 2, kMinWindow);
            o.cwnd = o.ssthresh;
            o.last_cut = now;
        }
        pump(dest);
    }
    publish();
    start_tick();
}

void UdpTransport::Impl::publish() {
    std::lock_guard lock(shared_mutex);
    stats = local_stats;
    for (int p = 0; p < world; ++p) unreachable[p] = out[p].unreachable;
    incarnations = peer_inc;
}

// ---- the public face ----

UdpTransport::UdpTransport(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address,
                           std::uint64_t run_id, Secret secret, UdpOptions options)
    : impl_(std::make_unique<Impl>(rank, std::move(peers), bind_address, run_id, std::move(secret), options)) {}

UdpTransport::~UdpTransport() = default;

int UdpTransport::rank() const { return impl_->rank; }
int UdpTransport::world() const { return impl_->world; }
std::uint16_t UdpTransport::local_port() const { return impl_->bound_port; }
std::size_t UdpTransport::max_message_bytes() const { return kMaxChunks * impl_->chunk_bytes; }

void UdpTransport::send(int dest, MessageType type, std::span<const std::uint8_t> payload) {
    if (dest < 0 || dest >= impl_->world)
        throw Error("udp transport: destination rank " + std::to_string(dest) + " is outside [0, " +
                    std::to_string(impl_->world) + ")");
    if (payload.size() > max_message_bytes())
        throw Error("udp transport: a message of " + std::to_string(payload.size()) + " bytes exceeds the " +
                    std::to_string(max_message_bytes()) + " one UDP message can carry");
    // Copy before taking the lock: the network thread needs it for every datagram.
    std::vector<std::uint8_t> bytes(payload.begin(), payload.end());
    std::lock_guard lock(impl_->shared_mutex);
    impl_->check_running();
    if (dest == impl_->rank) {
        impl_->inbox.push_back(Message{dest, type, ++impl_->self_id, std::move(bytes), impl_->own_incarnation});
        impl_->inbox_ready.notify_one();
        return;
    }
    ++impl_->unacked_messages;
    auto shared = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    asio::post(impl_->io, [impl = impl_.get(), dest, type, shared = std::move(shared)]() mutable {
        impl->enqueue(dest, type, std::move(shared));
    });
}

void UdpTransport::broadcast(MessageType type, std::span<const std::uint8_t> payload) {
    if (payload.size() > max_message_bytes())
        throw Error("udp transport: a message of " + std::to_string(payload.size()) + " bytes exceeds the " +
                    std::to_string(max_message_bytes()) + " one UDP message can carry");
    // One copy of the bytes for all destinations.
    auto shared = std::make_shared<const std::vector<std::uint8_t>>(payload.begin(), payload.end());
    std::lock_guard lock(impl_->shared_mutex);
    impl_->check_running();
    for (int dest = 0; dest < impl_->world; ++dest) {
        if (dest == impl_->rank) continue;
        ++impl_->unacked_messages;
        asio::post(impl_->io, [impl = impl_.get(), dest, type, shared] { impl->enqueue(dest, type, shared); });
    }
}

std::optional<Message> UdpTransport::receive(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->shared_mutex);
    impl_->inbox_ready.wait_for(lock, timeout, [&] { return !impl_->inbox.empty() || !impl_->failure.empty(); });
    impl_->check_running();
    if (impl_->inbox.empty()) return std::nullopt;
    Message message = std::move(impl_->inbox.front());
    impl_->inbox.pop_front();
    return message;
}

bool UdpTransport::flush(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->shared_mutex);
    const bool done = impl_->all_acked.wait_for(
        lock, timeout, [&] { return impl_->unacked_messages == 0 || !impl_->failure.empty(); });
    impl_->check_running();
    return done;
}

TransportStats UdpTransport::stats() const {
    std::lock_guard lock(impl_->shared_mutex);
    return impl_->stats;
}

std::vector<int> UdpTransport::unreachable_peers() const {
    std::lock_guard lock(impl_->shared_mutex);
    std::vector<int> peers;
    for (int p = 0; p < impl_->world; ++p)
        if (impl_->unreachable[p]) peers.push_back(p);
    return peers;
}

std::optional<std::chrono::steady_clock::time_point> UdpTransport::last_heard(int rank) const {
    if (rank < 0 || rank >= impl_->world || rank == impl_->rank) return std::nullopt;
    const std::int64_t ns = impl_->heard[static_cast<std::size_t>(rank)].load(std::memory_order_relaxed);
    if (ns == 0) return std::nullopt;
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ns));
}

std::uint64_t UdpTransport::incarnation() const { return impl_->own_incarnation; }

std::uint64_t UdpTransport::peer_incarnation(int rank) const {
    std::lock_guard lock(impl_->shared_mutex);
    if (rank < 0 || rank >= impl_->world) return 0;
    return rank == impl_->rank ? impl_->own_incarnation : impl_->incarnations[static_cast<std::size_t>(rank)];
}

// ---- choosing the interface ----

namespace {

struct IfaddrsDeleter {
    void operator()(ifaddrs* list) const { freeifaddrs(list); }
};

bool in_network(const asio::ip::address& address, const asio::ip::address& network, unsigned prefix) {
    if (address.is_v4() != network.is_v4()) return false;
    std::vector<unsigned char> a, n;
    if (address.is_v4()) {
        auto x = address.to_v4().to_bytes(), y = network.to_v4().to_bytes();
        a.assign(x.begin(), x.end());
        n.assign(y.begin(), y.end());
    } else {
        auto x = address.to_v6().to_bytes(), y = network.to_v6().to_bytes();
        a.assign(x.begin(), x.end());
        n.assign(y.begin(), y.end());
    }
    for (std::size_t i = 0; i < a.size() && prefix > 0; ++i) {
        const unsigned bits = std::min(prefix, 8u);
        const unsigned mask = (0xFFu << (8 - bits)) & 0xFFu;
        if ((a[i] & mask) != (n[i] & mask)) return false;
        prefix -= bits;
    }
    return true;
}

}  // namespace

std::string choose_bind_address(const std::string& bind, const std::string& network_mask_cidr,
                                const char* thresher_ip_env) {
    boost::system::error_code ec;
    if (!bind.empty()) {
        asio::ip::make_address(bind, ec);
        if (ec) throw Error("--bind " + bind + ": not an IP address");
        return bind;
    }
    if (!network_mask_cidr.empty()) {
        const auto slash = network_mask_cidr.find('/');
        const auto network = asio::ip::make_address(network_mask_cidr.substr(0, slash), ec);
        const std::string length = slash == std::string::npos ? "" : network_mask_cidr.substr(slash + 1);
        const unsigned max_prefix = network.is_v4() ? 32 : 128;
        const bool digits = !length.empty() && length.size() <= 3 && length.find_first_not_of("0123456789") == std::string::npos;
        if (ec || !digits || std::stoul(length) > max_prefix)
            throw Error("--network-mask " + network_mask_cidr + ": expected ADDRESS/PREFIX such as 10.1.0.0/16");
        const unsigned prefix = static_cast<unsigned>(std::stoul(length));

        ifaddrs* raw = nullptr;
        if (getifaddrs(&raw) != 0) throw Error("--network-mask: cannot list network interfaces (getifaddrs failed)");
        const std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
        std::string seen;
        for (const ifaddrs* i = list.get(); i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr == nullptr) continue;
            asio::ip::address address;
            if (i->ifa_addr->sa_family == AF_INET) {
                const auto* in4 = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
                address = asio::ip::address_v4(ntohl(in4->sin_addr.s_addr));
            } else if (i->ifa_addr->sa_family == AF_INET6) {
                const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
                asio::ip::address_v6::bytes_type bytes;
                std::copy(std::begin(in6->sin6_addr.s6_addr), std::end(in6->sin6_addr.s6_addr), bytes.begin());
                address = asio::ip::address_v6(bytes, in6->sin6_scope_id);
            } else {
                continue;
            }
            if (in_network(address, network, prefix)) return address.to_string();
            seen += (seen.empty() ? "" : ", ") + std::string(i->ifa_name) + " " + address.to_string();
        }
        throw Error("--network-mask " + network_mask_cidr + ": no local interface has an address in it (seen: " +
                    (seen.empty() ? "none" : seen) + "); pick the cluster network's mask or use --bind");
    }
    if (thresher_ip_env != nullptr && *thresher_ip_env != '\0') {
        asio::ip::make_address(thresher_ip_env, ec);
        if (ec) throw Error(std::string("THRESHER_IP ") + thresher_ip_env + ": not an IP address");
        return thresher_ip_env;
    }
    return "0.0.0.0";
}

}  // namespace thresher::dist
