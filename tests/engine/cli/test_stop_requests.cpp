// StopRequests (engine/cli/stop_requests.h): what asks `thresher-engine train` to stop, in one
// process. stdin is a pipe the test holds; the "stopping the run" line goes to a recorder instead
// of stderr. The signal case raises SIGTERM in this process once (a second one would end it:
// that case, and SIGINT, are test_stop_signals's, on a real engine).
//
//   stdin closed                 stop flag, on_stop("stdin closed"), the line said
//   input on stdin               discarded, no stop
//   heartbeat lines, then none   no stop while they come; "no heartbeat ... for 0.2 s" after
//   stderr stuck                 the stop flag and on_stop all the same; wait_until_said bounded
//   destroyed with no request    on_stop never runs; the destructor returns at once
//   SIGTERM                      stop flag, on_stop("SIGTERM")
#include <QtTest>

#include <QElapsedTimer>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <functional>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/stop_requests.h"

using thresher::cli::StopRequests;
using thresher::cli::StopSources;
using namespace std::chrono_literals;

namespace {

// A pipe standing in for stdin: the test writes and closes `write_end`.
struct StdinPipe {
    int read_end = -1, write_end = -1;
    StdinPipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) == 0) read_end = fds[0], write_end = fds[1];
    }
    ~StdinPipe() {
        close_write();
        if (read_end >= 0) ::close(read_end);
    }
    bool send(const char* text) { return ::write(write_end, text, std::strlen(text)) == ssize_t(std::strlen(text)); }
    void close_write() {
        if (write_end >= 0) ::close(write_end);
        write_end = -1;
    }
};

// What a StopRequests did, written from its threads.
struct Record {
    std::mutex mutex;
    std::vector<std::string> stops, lines;
    std::function<void(const std::string&)> on_stop() {
        return [this](const std::string& why) {
            std::lock_guard lock(mutex);
            stops.push_back(why);
        };
    }
    StopRequests::Say say() {
        return [this](const std::string& line) {
            std::lock_guard lock(mutex);
            lines.push_back(line);
        };
    }
    std::size_t stop_count() {
        std::lock_guard lock(mutex);
        return stops.size();
    }
};

}  // namespace

class TestStopRequests : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void stdin_closing_asks_for_a_stop();
    void input_on_stdin_is_no_request();
    void silence_after_heartbeats_asks_for_a_stop();
    void a_stuck_stderr_does_not_hold_the_stop();
    void destroyed_without_a_request();
    void sigterm_asks_for_a_stop();
};

void TestStopRequests::stdin_closing_asks_for_a_stop() {
    StdinPipe in;
    QVERIFY(in.read_end >= 0);
    Record r;
    std::atomic<bool> stop{false};
    StopRequests requests(stop, StopSources{in.read_end, 0ms}, r.on_stop(), r.say());
    QVERIFY(requests.reason().empty());
    QVERIFY(requests.wait_until_said(0ms));  // nothing asked: nothing to wait for
    in.close_write();
    QTRY_COMPARE_WITH_TIMEOUT(r.stop_count(), std::size_t(1), 5000);
    QVERIFY(stop.load());  // set before on_stop runs
    QCOMPARE(requests.reason(), std::string("stdin closed"));
    QVERIFY(requests.wait_until_said(5s));
    std::lock_guard lock(r.mutex);
    QCOMPARE(r.stops, std::vector<std::string>{"stdin closed"});
    QCOMPARE(r.lines, std::vector<std::string>{"thresher-engine: stdin closed: stopping the run at the next iteration"});
}

void TestStopRequests::input_on_stdin_is_no_request() {
    // Without a heartbeat, what arrives on stdin is read and dropped; only its end asks.
    StdinPipe in;
    Record r;
    std::atomic<bool> stop{false};
    StopRequests requests(stop, StopSources{in.read_end, 0ms}, r.on_stop(), r.say());
    for (int i = 0; i < 5; ++i) QVERIFY(in.send("anything\n"));
    QTest::qWait(100);
    QVERIFY(!stop.load());
    QCOMPARE(r.stop_count(), std::size_t(0));
    QVERIFY(requests.reason().empty());
}

void TestStopRequests::silence_after_heartbeats_asks_for_a_stop() {
    // Heartbeats every 20 ms keep a 200 ms heartbeat satisfied for 400 ms; then none come, and
    // the request follows within the heartbeat (the pipe stays open: no EOF here).
    StdinPipe in;
    Record r;
    std::atomic<bool> stop{false};
    StopRequests requests(stop, StopSources{in.read_end, 200ms}, r.on_stop(), r.say());
    for (int i = 0; i < 20; ++i) {
        QVERIFY(in.send("heartbeat\n"));
        QTest::qWait(20);
    }
    QVERIFY2(!stop.load(), "stopped while heartbeats came");
    QElapsedTimer silent;
    silent.start();
    QTRY_COMPARE_WITH_TIMEOUT(r.stop_count(), std::size_t(1), 5000);
    QVERIFY2(silent.elapsed() >= 150, qPrintable(QString("stopped %1 ms after the last heartbeat").arg(silent.elapsed())));
    QVERIFY(stop.load());
    QCOMPARE(requests.reason(), std::string("no heartbeat from the launcher on stdin for 0.2 s (its machine or connection is gone)"));
}

void TestStopRequests::a_stuck_stderr_does_not_hold_the_stop() {
    // stderr is a pipe nobody drains: saying the line blocks. The stop flag and on_stop (which
    // starts the deadline in main.cpp) must come all the same, and waiting for the line is bounded.
    StdinPipe in;
    Record r;
    std::mutex gate_mutex;
    std::condition_variable gate_cv;
    bool open = false;
    std::atomic<bool> stop{false};
    {
        StopRequests requests(stop, StopSources{in.read_end, 0ms}, r.on_stop(), [&](const std::string& line) {
            std::unique_lock lock(gate_mutex);
            gate_cv.wait(lock, [&] { return open; });
            r.say()(line);
        });
        in.close_write();
        QTRY_COMPARE_WITH_TIMEOUT(r.stop_count(), std::size_t(1), 5000);
        QVERIFY(stop.load());
        QElapsedTimer waited;
        waited.start();
        QVERIFY(!requests.wait_until_said(50ms));
        QVERIFY2(waited.elapsed() < 1000, qPrintable(QString("waited %1 ms").arg(waited.elapsed())));
        {
            std::lock_guard lock(gate_mutex);
            open = true;  // stderr drains again
        }
        gate_cv.notify_all();
        QVERIFY(requests.wait_until_said(5s));
    }
    std::lock_guard lock(r.mutex);
    QCOMPARE(r.lines.size(), std::size_t(1));
}

void TestStopRequests::destroyed_without_a_request() {
    // The run ended by itself: the watch thread is woken and joined; nothing is said or called.
    StdinPipe in;
    Record r;
    std::atomic<bool> stop{false};
    QElapsedTimer took;
    {
        StopRequests requests(stop, StopSources{in.read_end, std::chrono::hours(1)}, r.on_stop(), r.say());
        took.start();
    }
    QVERIFY2(took.elapsed() < 1000, qPrintable(QString("the destructor took %1 ms").arg(took.elapsed())));
    QVERIFY(!stop.load());
    QCOMPARE(r.stop_count(), std::size_t(0));
    QVERIFY(r.lines.empty());
}

void TestStopRequests::sigterm_asks_for_a_stop() {
    // Last: the handlers stay installed, and this process has now had its one signal.
    Record r;
    std::atomic<bool> stop{false};
    StopRequests requests(stop, StopSources{}, r.on_stop(), r.say());
    QCOMPARE(::raise(SIGTERM), 0);  // the handler writes to its pipe; the process goes on
    QTRY_COMPARE_WITH_TIMEOUT(r.stop_count(), std::size_t(1), 5000);
    QVERIFY(stop.load());
    QCOMPARE(requests.reason(), std::string("SIGTERM"));
    QVERIFY(requests.wait_until_said(5s));
    std::lock_guard lock(r.mutex);
    QCOMPARE(r.lines, std::vector<std::string>{"thresher-engine: SIGTERM: stopping the run at the next iteration"});
}

QTEST_GUILESS_MAIN(TestStopRequests)
#include "test_stop_requests.moc"
