// A chart's legend in a row of its own under the plot, so that it never covers a curve.
#pragma once

class QCustomPlot;

namespace thresher::ui {

// Moves `plot`'s legend (visible, items filled column by column, `wrap` per row) under its
// axis rect, left-aligned. The plot's layout must have the axis rect in row 1 (a title in row 0).
void put_legend_below(QCustomPlot* plot, int wrap);

}  // namespace thresher::ui
