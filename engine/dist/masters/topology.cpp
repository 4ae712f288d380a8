#include "dist/masters/topology.h"

#include "core/error.h"

namespace thresher::dist {

namespace {

constexpr int kMeshUpTo = 8;     // beyond this, node 0's share of a star's averaging rounds dominates
constexpr int kAutoFanout = 4;

int static_parent(const Topology& t, int node) {
    if (node == 0) return -1;
    return t.kind == TopologyKind::Relay ? 0 : (node - 1) / t.fanout;
}

}  // namespace

Topology parse_topology(const std::string& name, int fanout, int nodes) {
    if (fanout < 1 || fanout > 1024)
        throw ConfigError("--fanout " + std::to_string(fanout) + ": expected children per node in 1..1024");
    if (name == "auto")
        return nodes <= kMeshUpTo ? Topology{TopologyKind::Mesh, fanout, false} : Topology{TopologyKind::Mesh, kAutoFanout, true};
    if (name == "mesh") return {TopologyKind::Mesh, fanout, false};
    if (name == "relay") return {TopologyKind::Relay, fanout, false};
    if (name == "tree") return {TopologyKind::Tree, fanout, true};
    throw ConfigError("--topology " + name + ": expected auto, mesh, relay or tree");
}

std::string topology_name(const Topology& t) {
    switch (t.kind) {
        case TopologyKind::Mesh:
            return t.tree_rounds ? "mesh, averaging in a tree (fanout " + std::to_string(t.fanout) + ")" : "mesh";
        case TopologyKind::Relay: return "relay";
        case TopologyKind::Tree: return "tree (fanout " + std::to_string(t.fanout) + ")";
    }
    return "?";
}

Routes::Routes(const Topology& t, const std::vector<bool>& live)
    : kind_(t.kind), live_(live), parent_(live.size(), -1) {
    if (kind_ == TopologyKind::Mesh) return;
    int lowest_live = -1;
    for (std::size_t i = 0; i < live_.size() && lowest_live < 0; ++i)
        if (live_[i]) lowest_live = static_cast<int>(i);
    for (int node = 0; node < static_cast<int>(live_.size()); ++node) {
        if (!live_[static_cast<std::size_t>(node)]) continue;
        int up = static_parent(t, node);
        while (up >= 0 && !live_[static_cast<std::size_t>(up)]) up = static_parent(t, up);
        // Every ancestor gone (node 0 among them): hang on the lowest live node, the new root.
        if (up < 0 && node != lowest_live) up = lowest_live;
        parent_[static_cast<std::size_t>(node)] = up;
    }
}

std::vector<int> Routes::children(int node) const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(parent_.size()); ++i)
        if (parent_[static_cast<std::size_t>(i)] == node && live_[static_cast<std::size_t>(i)]) out.push_back(i);
    return out;
}

std::vector<int> Routes::neighbours(int node) const {
    std::vector<int> out;
    if (kind_ == TopologyKind::Mesh) {
        for (int i = 0; i < static_cast<int>(live_.size()); ++i)
            if (i != node && live_[static_cast<std::size_t>(i)]) out.push_back(i);
        return out;
    }
    if (parent(node) >= 0) out.push_back(parent(node));
    for (int c : children(node)) out.push_back(c);
    return out;
}

}  // namespace thresher::dist
