// TerminalOutput: the CLI's stderr. On a terminal the progress line is redrawn in place ('\r',
// at most 10 times a second, cut to the terminal's width so it never wraps) and messages are
// printed above it; elsewhere (a log file, CI) progress lines are skipped and only messages
// appear, one per line — so a run logs one line per epoch.
#pragma once

#include <QElapsedTimer>
#include <QString>
#include <QTimer>
#include <cstdio>

namespace thresher::launcher::cli {

class TerminalOutput {
public:
    explicit TerminalOutput(std::FILE* out);

    bool is_tty() const { return tty_; }
    // A line that stays (an epoch, a warning, the result).
    void message(const QString& line);
    // The progress line (terminal only; replaces the previous one).
    void progress(const QString& line);
    // Leaves the last progress line on screen and ends it with a newline.
    void done();

private:
    void redraw();
    void clear_line();
    int width() const;

    std::FILE* out_;
    bool tty_;
    QString line_;      // the progress line to show
    bool shown_ = false;  // a progress line is on screen
    QElapsedTimer last_draw_;
    QTimer pending_;  // a throttled redraw
};

}  // namespace thresher::launcher::cli
