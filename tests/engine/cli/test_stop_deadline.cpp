// StopDeadline (engine/cli/stop_deadline.h): once a stop was asked for, a run that has not ended
// within the deadline gets its last words and the process ends with 143. Here the "end" is a
// recorder instead of std::_Exit, and the deadlines are tens of milliseconds (or an hour, for the
// cases where nothing may fire): no case waits longer than its deadline plus scheduling.
//
//   started, the run hangs        last words with the reason, then end(143), once, not before the deadline
//   never started                 nothing, however long it lives; the destructor returns at once
//   started, the run ended        the destructor cancels the countdown (an hour) at once
//   last words stuck              end(143) anyway, `grace` after the deadline
//   started twice                 the first reason counts
#include <QtTest>

#include <QElapsedTimer>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "cli/stop_deadline.h"

using thresher::cli::kExitStopped;
using thresher::cli::StopDeadline;
using namespace std::chrono_literals;

namespace {

// What a deadline did, written from its threads.
struct Record {
    std::mutex mutex;
    std::vector<std::string> last_words;
    std::vector<int> ends;
    qint64 ended_after_ms = -1;
    QElapsedTimer since;

    Record() { since.start(); }
    StopDeadline::LastWords words() {
        return [this](const std::string& reason) {
            std::lock_guard lock(mutex);
            last_words.push_back(reason);
        };
    }
    StopDeadline::End end() {
        return [this](int status) {
            std::lock_guard lock(mutex);
            ends.push_back(status);
            if (ended_after_ms < 0) ended_after_ms = since.elapsed();
        };
    }
    std::size_t end_count() {
        std::lock_guard lock(mutex);
        return ends.size();
    }
};

// A gate that holds the last words until the test opens it.
struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
    bool entered = false;
    void pass() {
        std::unique_lock lock(mutex);
        entered = true;
        cv.notify_all();
        cv.wait(lock, [&] { return open; });
    }
    void release() {
        {
            std::lock_guard lock(mutex);
            open = true;
        }
        cv.notify_all();
    }
};

}  // namespace

class TestStopDeadline : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void ends_the_process_after_the_deadline();
    void never_started_never_fires();
    void destroyed_before_the_deadline_cancels_it();
    void stuck_last_words_still_end_after_the_grace();
    void a_second_start_changes_nothing();
};

void TestStopDeadline::ends_the_process_after_the_deadline() {
    Record r;
    {
        StopDeadline deadline(40ms, r.words(), 1s, r.end());
        r.since.restart();
        deadline.start("SIGTERM");
        QTRY_COMPARE_WITH_TIMEOUT(r.end_count(), std::size_t(1), 5000);
    }
    std::lock_guard lock(r.mutex);
    QCOMPARE(r.last_words, std::vector<std::string>{"SIGTERM"});
    QCOMPARE(r.ends, std::vector<int>{kExitStopped});
    QCOMPARE(kExitStopped, 143);
    QVERIFY2(r.ended_after_ms >= 40, qPrintable(QString("ended %1 ms after the start").arg(r.ended_after_ms)));
}

void TestStopDeadline::never_started_never_fires() {
    // A run nobody stopped: a zero deadline that was never started does nothing, and destroying
    // it has no thread to wait for.
    Record r;
    QElapsedTimer took;
    {
        StopDeadline deadline(0ms, r.words(), 0ms, r.end());
        took.start();
    }
    QVERIFY2(took.elapsed() < 500, qPrintable(QString("the destructor took %1 ms").arg(took.elapsed())));
    QCOMPARE(r.end_count(), std::size_t(0));
    QVERIFY(r.last_words.empty());
}

void TestStopDeadline::destroyed_before_the_deadline_cancels_it() {
    // The run stopped in time and main() returns: an hour's countdown is cancelled and joined at once.
    Record r;
    QElapsedTimer took;
    {
        StopDeadline deadline(std::chrono::hours(1), r.words(), 1s, r.end());
        deadline.start("stdin closed");
        took.start();
    }
    QVERIFY2(took.elapsed() < 1000, qPrintable(QString("the destructor took %1 ms").arg(took.elapsed())));
    QCOMPARE(r.end_count(), std::size_t(0));
    QVERIFY(r.last_words.empty());
}

void TestStopDeadline::stuck_last_words_still_end_after_the_grace() {
    // stdout stuck: the last words (a warning, run_finished) block; the process ends `grace` later
    // all the same -- and only once when the words do get out afterwards.
    Record r;
    Gate gate;
    {
        StopDeadline deadline(0ms, [&](const std::string& reason) {
            r.words()(reason);
            gate.pass();
        }, 60ms, r.end());
        r.since.restart();
        deadline.start("SIGINT");
        QTRY_COMPARE_WITH_TIMEOUT(r.end_count(), std::size_t(1), 5000);
        {
            std::lock_guard lock(gate.mutex);
            QVERIFY2(gate.entered && !gate.open, "ended, but not while the last words were stuck");
        }
        QVERIFY2(r.ended_after_ms >= 60, qPrintable(QString("ended %1 ms after the start").arg(r.ended_after_ms)));
        gate.release();  // the words get out after all; the destructor joins both threads
    }
    QCOMPARE(r.end_count(), std::size_t(1));
    QCOMPARE(r.last_words, std::vector<std::string>{"SIGINT"});
}

void TestStopDeadline::a_second_start_changes_nothing() {
    // A signal, then stdin closing: one countdown, from the first request, with its reason.
    Record r;
    {
        StopDeadline deadline(20ms, r.words(), 1s, r.end());
        deadline.start("SIGTERM");
        deadline.start("stdin closed");
        QTRY_COMPARE_WITH_TIMEOUT(r.end_count(), std::size_t(1), 5000);
        deadline.start("SIGINT");
    }
    QCOMPARE(r.end_count(), std::size_t(1));
    QCOMPARE(r.last_words, std::vector<std::string>{"SIGTERM"});
}

QTEST_GUILESS_MAIN(TestStopDeadline)
#include "test_stop_deadline.moc"
