// See chart_legend.h.
#include "chart_legend.h"

#include "qcustomplot_include.h"

namespace thresher::ui {

void put_legend_below(QCustomPlot* plot, int wrap) {
    plot->legend->setVisible(true);
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setWrap(wrap);
    plot->axisRect()->insetLayout()->take(plot->legend);
    // A layout grid's column is never wider than its narrowest element allows, and a legend
    // allows no more than its items need (an empty one: nothing), which squeezed the axis rect
    // above it. So the legend shares its row with an empty element that may take any width.
    auto* row = new QCPLayoutGrid;
    plot->plotLayout()->addElement(2, 0, row);
    row->addElement(0, 0, plot->legend);
    row->addElement(0, 1, new QCPLayoutElement(plot));
    row->setColumnStretchFactor(0, 0.001);
    row->setMargins(QMargins(0, 0, 0, 0));
    plot->plotLayout()->setRowStretchFactor(2, 0.001);
}

}  // namespace thresher::ui
