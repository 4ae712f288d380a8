#include "cli/cluster.h"

#include <iostream>

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "dist/net/run_key.h"

namespace thresher::cli {

std::vector<dist::UdpEndpoint> parse_nodes(const std::string& nodes) {
    std::vector<dist::UdpEndpoint> out;
    std::size_t start = 0;
    while (start <= nodes.size()) {
        const std::size_t comma = std::min(nodes.find(',', start), nodes.size());
        const std::string item = nodes.substr(start, comma - start);
        const std::size_t colon = item.rfind(':');
        unsigned port = 0;
        const char* end = item.data() + item.size();
        if (colon == std::string::npos || colon == 0 ||
            std::from_chars(item.data() + colon + 1, end, port).ptr != end || port == 0 || port > 65535)
            throw ConfigError("--nodes: \"" + item + "\" (entry " + std::to_string(out.size()) +
                              ") is not HOST:PORT with a port in 1..65535");
        out.push_back({item.substr(0, colon), static_cast<std::uint16_t>(port)});
        start = comma + 1;
    }
    return out;
}

ClusterSession::ClusterSession(const ClusterOptions& o, train::ClusterShape& shape, events::EventWriter& events, bool bulk)
    : events_(events) {
    if (o.nodes.empty()) {
        if (o.node_rank != 0) throw ConfigError("--node-rank " + std::to_string(o.node_rank) + " needs --nodes");
        shape_ = shape;
        return;
    }
    const auto endpoints = parse_nodes(o.nodes);
    if (o.node_rank < 0 || o.node_rank >= static_cast<int>(endpoints.size()))
        throw ConfigError("--node-rank " + std::to_string(o.node_rank) + " is not in 0.." +
                          std::to_string(endpoints.size() - 1) + " (" + std::to_string(endpoints.size()) + " --nodes)");
    shape.nodes = static_cast<int>(endpoints.size());
    shape.node_rank = o.node_rank;
    shape_ = shape;
    topology_ = dist::parse_topology(o.topology, o.fanout, shape.nodes);
    if (shape.nodes == 1) return;
    // A multi-node run is refused without a secret: unauthenticated datagrams could rewrite
    // every replica's parameters.
    dist::Secret secret = o.secret ? *o.secret : !o.secret_file.empty() ? dist::load_secret(o.secret_file) : [] {
        try {
            return dist::secret_from_env();
        } catch (const Error& e) {
            throw ConfigError(std::string("a multi-node run needs the run secret: --secret-file FILE (mode 0600), "
                                          "--secret-stdin or THRESHER_SECRET (") + e.what() + ")");
        }
    }();
    // Every key of the run (datagram MACs, TCP handshakes, frame keys) and its id come from the
    // secret and this run's nonce, so a run that reuses the secret cannot speak in this one.
    secret = dist::run_key(secret, o.run_nonce);
    const std::uint64_t run_id = o.run_id ? o.run_id : dist::run_id_of(secret);
    {
        char id[17];
        std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(run_id));
        if (o.run_nonce.empty())
            std::cerr << "thresher-engine: node " << o.node_rank << ": run id " << id
                      << " from the secret alone (no --run-nonce): runs that reuse this secret are not separated "
                         "(they share its keys; only incarnations keep their traffic apart): give every node of a run "
                         "the same fresh --run-nonce (the launchers do)" << std::endl;
        else
            std::cerr << "thresher-engine: node " << o.node_rank << ": run id " << id << " (secret and --run-nonce)"
                      << std::endl;
    }
    if (!(o.join_wait_s >= 0 && o.join_wait_s <= 86400))
        throw ConfigError("--join-wait " + std::to_string(o.join_wait_s) + ": expected seconds in 0..86400");
    join_wait_ = std::chrono::milliseconds(static_cast<long long>(o.join_wait_s * 1000));
    // With no choice given, bind the node's own --nodes address when it is a literal IP: on a
    // host with several interfaces a wildcard socket may answer from another address, and peers
    // drop datagrams from an address that is not the sender's --nodes entry.
    std::string bind = o.bind;
    const std::string& own = endpoints[static_cast<std::size_t>(o.node_rank)].host;
    in6_addr scratch{};
    if (bind.empty() && o.network_mask.empty() && !std::getenv("THRESHER_IP") &&
        (inet_pton(AF_INET, own.c_str(), &scratch) == 1 || inet_pton(AF_INET6, own.c_str(), &scratch) == 1))
        bind = own;
    bind = dist::choose_bind_address(bind, o.network_mask, std::getenv("THRESHER_IP"));
    dist::UdpOptions udp_options;
    if (o.link.active()) {
        // One emulated link per node, shared by UDP and TCP; loss draws differ per node and run.
        dist::LinkSpec link = o.link;
        link.seed = run_id ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(o.node_rank + 1));
        udp_options.link = std::make_shared<dist::LinkShaper>(link);
        std::cerr << "thresher-engine: node " << o.node_rank << " sends through an emulated link: " << link.describe() << std::endl;
    }
    auto udp = std::make_unique<dist::UdpTransport>(o.node_rank, endpoints, bind, run_id, secret, udp_options);
    if (bulk) {
        dist::BulkOptions options;
        options.link = udp_options.link;
        options.incarnation = udp->incarnation();  // one process, one incarnation on both channels
        bulk_ = std::make_unique<dist::BulkChannel>(o.node_rank, endpoints, bind == "0.0.0.0" ? std::string() : bind,
                                                    run_id, std::move(secret), options);
    }
    transport_ = std::move(udp);
}

train::MasterFactory ClusterSession::factory(const StrategyOptions& options) {
    if (!transport_) return make_master_factory(options, shape_);
    const std::string strategy = resolve_strategy(options, shape_);
    if (strategy == "single") throw ConfigError("--nodes runs need --strategy gradient-sharing or parameter-averaging");
    // Options are checked now, before any thread starts; the link is made once the model is known.
    dist::ClusterNodeOptions o;
    o.strategy = strategy;
    o.sharing = gradient_sharing_options(options);
    o.averaging = averaging_options(options);
    o.join_wait = join_wait_;
    o.topology = topology_;
    node_ = std::make_unique<dist::ClusterNode>(std::move(transport_), std::move(bulk_), shape_, &events_, std::move(o));
    return node_->factory();
}

}  // namespace thresher::cli
