#include "graph_layout.h"

#include <algorithm>

namespace thresher::ui {

GraphLayout layout_graph(const std::vector<std::vector<int>>& sources) {
    GraphLayout g;
    std::vector<int> in_row(1, 1);  // how many places each row holds so far; row 0: the input
    for (std::size_t i = 0; i < sources.size(); ++i) {
        int depth = 1;
        for (int s : sources[i])
            if (s >= 0 && static_cast<std::size_t>(s) < i) depth = std::max(depth, g.layers[static_cast<std::size_t>(s)].row + 1);
        if (static_cast<int>(in_row.size()) <= depth) in_row.resize(static_cast<std::size_t>(depth) + 1, 0);
        g.layers.push_back({depth, in_row[static_cast<std::size_t>(depth)]++});
    }
    g.rows = static_cast<int>(in_row.size());
    g.columns = *std::max_element(in_row.begin(), in_row.end());
    return g;
}

}  // namespace thresher::ui
