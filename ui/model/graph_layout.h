// Where the graph view draws each layer: a pure function of the graph (no widgets), so tests
// check it headless. Rows are depths (the longest path from the model's input, which sits alone
// in row 0); within a row, layers keep their order in the list. A layer stack is one column.
#pragma once

#include <vector>

namespace thresher::ui {

struct GraphPlace {
    int row = 0;     // depth: 0 is the model's input
    int column = 0;  // position within the row
};

struct GraphLayout {
    GraphPlace input;                 // the model's input
    std::vector<GraphPlace> layers;   // one per layer
    int rows = 1, columns = 1;        // extent
};

// `sources[i]`: the layers layer i reads (-1: the model's input), every one earlier than i.
GraphLayout layout_graph(const std::vector<std::vector<int>>& sources);

}  // namespace thresher::ui
