// Who talks to whom in a multi-node run (DESIGN.md: "relays updates (plain topology). A tree
// topology is for many nodes").
//   mesh   every node sends its gradient-sharing messages straight to every other node: one hop,
//          and every node uploads (N-1) copies of its own messages -- the least a node sends for
//          all-to-all exchange, evenly spread. Averaging rounds: a star on node 0.
//   relay  the plain topology: a star around node 0, the controller; the other nodes send to it
//          and it passes each message on to everyone else (node 0 uploads everyone's).
//   tree   nodes in a tree of `fanout` children per node, rooted at node 0 (node i's parent is
//          (i-1)/fanout). Messages flood along its edges: no node has more than fanout+1 peers,
//          but an inner node uploads others' messages too. Averaging rounds reduce up the tree
//          and come back down, so no node sends or receives more than fanout+1 parameter vectors
//          per round, where the star puts 2(N-1) of them on node 0.
//   auto   mesh up to 8 nodes; beyond, mesh for messages and a tree (fanout 4) for rounds.
// With relay and tree, a node that is gone is bypassed: its children are adopted by its nearest
// live ancestor (the whole subtree stays reachable), and if every ancestor is gone, by the
// lowest-numbered live node.
#pragma once

#include <string>
#include <vector>

namespace thresher::dist {

enum class TopologyKind { Mesh, Relay, Tree };

struct Topology {
    TopologyKind kind = TopologyKind::Mesh;  // how gradient-sharing messages travel
    int fanout = 2;                          // children per node in a tree
    bool tree_rounds = false;                // averaging rounds reduced up a tree (else a star on node 0)
};

// "auto", "mesh", "relay", "tree" (see above); throws thresher::ConfigError naming the value.
Topology parse_topology(const std::string& name, int fanout, int nodes);
std::string topology_name(const Topology&);

// The links of one view of the cluster: `live[i]` says whether node i takes part (our own entry
// must be true).
class Routes {
public:
    Routes(const Topology&, const std::vector<bool>& live);

    // Mesh: the origin reaches everyone itself, so nobody passes messages on.
    bool floods() const { return kind_ != TopologyKind::Mesh; }
    // The node's parent in the tree of live nodes, -1 for the root (and for every node in a mesh).
    int parent(int node) const { return parent_.at(static_cast<std::size_t>(node)); }
    std::vector<int> children(int node) const;
    // Where a message from `node` (or passed on by it) goes: every other live node in a mesh,
    // else its parent and children.
    std::vector<int> neighbours(int node) const;

private:
    TopologyKind kind_;
    std::vector<bool> live_;
    std::vector<int> parent_;
};

}  // namespace thresher::dist
