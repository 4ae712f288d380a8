#include "config/dl4j_graph.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>

#include <nlohmann/json.hpp>

namespace thresher::config {

namespace {

// A java.util.HashSet<Integer>'s iteration order: buckets by (h ^ h >>> 16) & (capacity - 1) with
// h the value itself, each bucket in insertion order; the table (16 buckets) doubles when it
// would hold more than 3/4 of its size. (Bins are only made trees at 8 entries in a bucket of a
// table of 64 or more, far beyond the graphs this sees.)
class JavaIntHashSet {
public:
    void add(int v) {
        if (std::find(items_.begin(), items_.end(), v) != items_.end()) return;
        items_.push_back(v);
        while (static_cast<double>(items_.size()) > 0.75 * static_cast<double>(capacity_)) capacity_ *= 2;
    }
    std::vector<int> in_order() const {
        std::vector<int> out = items_;
        std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return bucket(a) < bucket(b); });
        return out;
    }

private:
    std::uint32_t bucket(int v) const {
        const auto h = static_cast<std::uint32_t>(v);
        return (h ^ (h >> 16)) & static_cast<std::uint32_t>(capacity_ - 1);
    }
    std::vector<int> items_;
    std::size_t capacity_ = 16;
};

}  // namespace

std::vector<std::string> dl4j_vertex_key_order(std::string_view text) {
    std::vector<std::string> keys;
    try {
        const auto j = nlohmann::ordered_json::parse(text);
        if (!j.is_object() || !j.contains("vertices") || !j["vertices"].is_object()) return keys;
        for (const auto& [key, value] : j["vertices"].items()) keys.push_back(key);
    } catch (const nlohmann::json::exception&) {
    }
    return keys;
}

std::vector<std::string> dl4j_topological_order(const std::vector<std::string>& inputs,
                                                const std::vector<std::pair<std::string, std::vector<std::string>>>& vertices) {
    std::vector<std::string> names = inputs;
    for (const auto& v : vertices) names.push_back(v.first);
    std::map<std::string, int> index;
    for (std::size_t i = 0; i < names.size(); ++i) index.emplace(names[i], static_cast<int>(i));
    const std::size_t n = names.size();
    std::vector<std::vector<int>> waiting(n);  // per vertex: the inputs not yet placed
    std::vector<JavaIntHashSet> readers(n);
    for (std::size_t k = 0; k < vertices.size(); ++k) {
        const int self = static_cast<int>(inputs.size() + k);
        for (const auto& in : vertices[k].second) {
            const auto it = index.find(in);
            if (it == index.end()) continue;
            if (std::find(waiting[self].begin(), waiting[self].end(), it->second) == waiting[self].end())
                waiting[self].push_back(it->second);
            readers[static_cast<std::size_t>(it->second)].add(self);
        }
    }
    std::deque<int> ready;
    for (std::size_t i = 0; i < n; ++i)
        if (waiting[i].empty()) ready.push_back(static_cast<int>(i));
    std::vector<std::string> order;
    while (!ready.empty()) {
        const int next = ready.front();
        ready.pop_front();
        order.push_back(names[static_cast<std::size_t>(next)]);
        for (int r : readers[static_cast<std::size_t>(next)].in_order()) {
            auto& w = waiting[static_cast<std::size_t>(r)];
            w.erase(std::remove(w.begin(), w.end(), next), w.end());
            if (w.empty()) ready.push_back(r);
        }
    }
    return order;
}

}  // namespace thresher::config
