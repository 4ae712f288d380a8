// Gradient sharing with ranks as threads: after training stops and the messages drain, every
// replica holds the same parameters; for every worker, Σ sent messages + residual = Σ updates
// (nothing is lost, only delayed); messages are really sparse; a worker only ever applies each
// message once (replicas would drift apart otherwise). The same invariants hold with the replicas,
// residuals and encoders on a GPU (the device rows; they skip without a CUDA device).
#include <QtTest>

#include <cmath>

#include "backend/registry.h"
#include "core/error.h"
#include "dist/masters/gradient_sharing.h"
#include "worker_threads.h"

using namespace thresher;

namespace {
const char* kModel = R"({"name":"gs","input":{"size":8},"updater":{"type":"nesterovs","learning_rate":0.05},
  "layers":[{"type":"dense","units":16,"activation":"relu"},{"type":"output","units":4}]})";

void sample(int i, float* x, float* t) {
    for (int j = 0; j < 8; ++j) x[j] = std::cos(0.37f * i + 0.9f * j) + (j == i % 4 ? 1.f : 0.f);
    for (int k = 0; k < 4; ++k) t[k] = k == i % 4 ? 1.f : 0.f;
}

struct Result {
    std::vector<std::vector<float>> params;
    std::vector<dist::GradientSharing::Accounting> accounting;
    double mean_density = 0;
};

// Every worker's parameters equal worker 0's (within 1e-5).
void replicas_equal(const Result& r, int workers);

// Whether `device` can be made here, and why not ("" when it can).
QString unavailable(const std::string& device) {
    try {
        backend::create_backend(device, {1});
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

Result train_workers(int workers, int steps, dist::GradientSharingOptions options, const std::string& device = "cpu") {
    const auto config = config::ModelConfig::parse(kModel, "gs");
    options.track_sums = true;
    dist::GradientSharing master({1, 0, workers}, config.param_count(), options);
    Result r;
    r.params.resize(workers);
    std::vector<double> density(workers, 0.0);
    run_workers(workers, [&](int w) {
        auto be = backend::create_backend(device, {1});
        nn::Network net(config, *be);
        master.attach(w, net);
        std::vector<float> x(6 * 8), t(6 * 4);
        for (int s = 0; s < steps; ++s) {
            for (int b = 0; b < 6; ++b) sample(100000 * w + 6 * s + b, &x[b * 8], &t[b * 4]);
            master.before_gradient(w, s);
            net.compute_gradients(x.data(), t.data(), 6, 0);
            density[w] += master.step(w, s, true).density.value_or(0.0) / steps;
            // Uneven speeds: the workers interleave differently on every run.
            if ((s + w) % 7 == 0) std::this_thread::yield();
        }
        master.finish(w);
        r.params[w] = net.get_params();
        master.release(w);  // before `net` and `be`: a GPU residual goes before its backend
    });
    for (int w = 0; w < workers; ++w) r.accounting.push_back(master.accounting(w));
    for (double d : density) r.mean_density += d / workers;
    return r;
}

// For every worker: `messages` messages, and Σ updates = Σ sent + residual for every parameter
// (nothing lost, only delayed), with updates large enough for that to mean something.
void nothing_lost(const Result& r, int workers, long messages) {
    for (int w = 0; w < workers; ++w) {
        const auto& a = r.accounting[w];
        QCOMPARE(a.messages, messages);
        double largest = 0;
        for (std::size_t i = 0; i < a.residual.size(); ++i) {
            const double lost = a.sum_updates[i] - (a.sum_sent[i] + a.residual[i]);
            largest = std::max(largest, std::abs(a.sum_updates[i]));
            // The residual is float: each iteration's r += u and r -= ±τ round at ~6e-8 relative.
            QVERIFY2(std::abs(lost) <= 1e-5 + 1e-5 * std::abs(a.sum_updates[i]),
                     qPrintable(QString("worker %1 param %2: updates %3, sent %4, residual %5")
                                    .arg(w).arg(i).arg(a.sum_updates[i]).arg(a.sum_sent[i]).arg(a.residual[i])));
        }
        QVERIFY2(largest > 1e-3, "updates too small for the accounting to mean anything");
    }
}

void replicas_equal(const Result& r, int workers) {
    for (int w = 1; w < workers; ++w)
        for (std::size_t i = 0; i < r.params[0].size(); ++i)
            QVERIFY2(std::abs(r.params[w][i] - r.params[0][i]) <= 1e-5,
                     qPrintable(QString("worker %1 param %2: %3 vs %4").arg(w).arg(i).arg(r.params[w][i]).arg(r.params[0][i])));
}
}  // namespace

class TestGradientSharing : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void replicas_equal_and_nothing_lost_data();
    void replicas_equal_and_nothing_lost();
    void clipping_still_keeps_replicas_equal();
    void overlap_keeps_replicas_equal_and_loses_nothing_data();
    void overlap_keeps_replicas_equal_and_loses_nothing();
    void overlap_reports_the_previous_step();
    void overlap_needs_a_staleness_bound();
    void a_worker_failing_before_attach_ends_cleanly();
    void a_hole_costs_one_wait();
    void on_a_gpu_data();
    void on_a_gpu();
    void encode_overlap_is_refused_on_a_gpu();
};

void TestGradientSharing::replicas_equal_and_nothing_lost_data() {
    QTest::addColumn<int>("workers");
    QTest::addColumn<QString>("algorithm");
    QTest::addColumn<double>("max_density");  // mean fraction of entries per message
    // A 212-parameter model's updates dwarf τ = 1e-3, and the adaptive algorithms move τ by only
    // 0.966x per step: only the large fixed threshold makes these messages sparse.
    QTest::newRow("2 workers, fixed 0.01 (sparse)") << 2 << "fixed:0.01" << 0.5;
    QTest::newRow("2 workers, fixed 1e-3 (dense: bitmap)") << 2 << "fixed:1e-3" << 1.0;
    QTest::newRow("4 workers, adaptive") << 4 << "adaptive" << 1.0;
    QTest::newRow("3 workers, target density 0.05") << 3 << "target:0.05" << 1.0;
}

void TestGradientSharing::replicas_equal_and_nothing_lost() {
    QFETCH(int, workers);
    QFETCH(QString, algorithm);
    QFETCH(double, max_density);
    dist::GradientSharingOptions o;
    o.threshold_algorithm = dist::parse_threshold_spec(algorithm.toStdString());
    o.residual = "none";
    const auto r = train_workers(workers, 60, o);
    replicas_equal(r, workers);
    if (QTest::currentTestFailed()) return;
    nothing_lost(r, workers, 60);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(r.mean_density > 0 && r.mean_density <= max_density, qPrintable(QString::number(r.mean_density)));
}

void TestGradientSharing::clipping_still_keeps_replicas_equal() {
    dist::GradientSharingOptions o;  // defaults: adaptive threshold, clip ±5τ every 5 iterations
    const auto r = train_workers(3, 40, o);
    for (int w = 1; w < 3; ++w)
        for (std::size_t i = 0; i < r.params[0].size(); ++i) QVERIFY(std::abs(r.params[w][i] - r.params[0][i]) <= 1e-5);
}

// --overlap-comm: each step's encoding runs on the worker's communicator thread beside the next
// gradient; the invariants are the same (equal replicas after the drain, nothing lost).
void TestGradientSharing::overlap_keeps_replicas_equal_and_loses_nothing_data() {
    QTest::addColumn<int>("workers");
    QTest::addColumn<QString>("staleness");
    QTest::addColumn<QString>("mode");
    QTest::newRow("send, 2 workers, S = 0") << 2 << "0" << "send";
    QTest::newRow("send, 3 workers, no bound") << 3 << "off" << "send";
    QTest::newRow("encode, 2 workers, S = 1") << 2 << "1" << "encode";
    QTest::newRow("encode, 3 workers, S = 2") << 3 << "2" << "encode";
    QTest::newRow("encode, 4 workers, no bound") << 4 << "off" << "encode";
}

void TestGradientSharing::overlap_keeps_replicas_equal_and_loses_nothing() {
    QFETCH(int, workers);
    QFETCH(QString, staleness);
    QFETCH(QString, mode);
    dist::GradientSharingOptions o;
    o.threshold_algorithm = dist::parse_threshold_spec("fixed:0.01");
    o.residual = "none";
    o.overlap = dist::parse_overlap(mode.toStdString());
    o.max_staleness = staleness == "off" ? std::nullopt : std::optional<int>(staleness.toInt());
    const auto r = train_workers(workers, 60, o);
    replicas_equal(r, workers);
    if (QTest::currentTestFailed()) return;
    nothing_lost(r, workers, 60);
    if (QTest::currentTestFailed()) return;
    QVERIFY(r.mean_density > 0);
}

// Step k returns at once with the fields of step k-1's message, whose encoding ran meanwhile.
void TestGradientSharing::overlap_reports_the_previous_step() {
    const auto config = config::ModelConfig::parse(kModel, "gs");
    dist::GradientSharingOptions o;
    o.overlap = dist::GradientSharingOptions::Overlap::Encode;
    o.max_staleness = 1;
    dist::GradientSharing master({1, 0, 1}, config.param_count(), o);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    master.attach(0, net);
    std::vector<float> x(6 * 8), t(6 * 4);
    for (int s = 0; s < 5; ++s) {
        for (int b = 0; b < 6; ++b) sample(6 * s + b, &x[b * 8], &t[b * 4]);
        master.before_gradient(0, s);
        net.compute_gradients(x.data(), t.data(), 6, 0);
        const auto fields = master.step(0, s, true);
        QCOMPARE(fields.overlapped.value_or(false), true);
        QVERIFY(fields.updater_ms && fields.comm_wait_ms);
        if (s == 0) QVERIFY(!fields.encode_ms);
        else QCOMPARE(fields.encoded_iter.value_or(-1L), long(s - 1));
    }
    master.finish(0);
    QCOMPARE(master.accounting(0).messages, 5L);
}

void TestGradientSharing::overlap_needs_a_staleness_bound() {
    dist::GradientSharingOptions o;
    o.overlap = dist::GradientSharingOptions::Overlap::Encode;  // with the default S = 0
    try {
        dist::GradientSharing master({1, 0, 2}, 100, o);
        QFAIL("encoding overlap accepted with S = 0");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("--overlap-comm encode needs --max-staleness 1") == 0, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, dist::parse_overlap("on"));
}

// Node 1's messages of iterations 3..7 went with a relay that died; its message of iteration 8
// came another way and is held for gradient 9 (S = 0). Gradient 4 waits out its deadline for the
// message of iteration 3; then the hole is known and gradients 5..9 do not wait again. Before,
// every one of them waited out the deadline (six timeouts): with a dead relay at an epoch
// boundary that held a node up for 18 s.
void TestGradientSharing::a_hole_costs_one_wait() {
    const auto config = config::ModelConfig::parse(kModel, "gs");
    dist::GradientSharing master({2, 0, 1}, config.param_count(), {});
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    master.attach(0, net);
    const auto message = [&](float tau) {
        auto u = std::make_shared<dist::EncodedUpdate>();
        u->length = static_cast<std::uint32_t>(config.param_count());
        u->threshold = tau;
        u->count = 1;
        u->sparse = {1};  // +τ on parameter 0
        return u;
    };
    for (long it : {0L, 1L, 2L, 8L}) master.deliver_remote(1, it, message(0.001f));
    std::vector<float> x(6 * 8), t(6 * 4);
    long timeouts = 0;
    for (long s = 0; s < 11; ++s) {
        for (int b = 0; b < 6; ++b) sample(6 * s + b, &x[b * 8], &t[b * 4]);
        if (s == 10) master.deliver_remote(1, 9, message(0.001f));
        const auto fields = master.before_gradient(0, s);
        timeouts = fields.wait_timeouts.value_or(-1L);
        qInfo("gradient %ld: waited %.1f ms, timeouts %ld, applied %ld", s, fields.wait_ms.value_or(0.0), timeouts,
              fields.messages_applied.value_or(0L));
        if (s == 9) QCOMPARE(fields.messages_applied.value_or(0L), 1L);  // the held one, now due
        net.compute_gradients(x.data(), t.data(), 6, 0);
        master.step(0, s, true);
    }
    QCOMPARE(timeouts, 1L);
    master.finish(0);
}

// A worker whose replica never attached (its backend or model failed: a GPU out of memory, a
// replica of the wrong size) leaves through abort(); the completion steps that read every
// replica must not run on the missing one. This crashed multi-node GPU runs with SIGSEGV.
void TestGradientSharing::a_worker_failing_before_attach_ends_cleanly() {
    const auto config = config::ModelConfig::parse(kModel, "gs");
    dist::GradientSharing master({1, 0, 2}, config.param_count(), {});
    bool reconciled = false;
    master.set_reconcile([&](const std::vector<nn::Network*>&) { reconciled = true; });
    const auto wrong = config::ModelConfig::parse(
        R"({"name":"gs","input":{"size":8},"layers":[{"type":"output","units":4}]})", "gs");
    bool refused = false;
    run_workers(2, [&](int w) {
        auto be = backend::create_backend("cpu", {1});
        nn::Network net(w == 0 ? config : wrong, *be);
        try {
            master.attach(w, net);
        } catch (const Error&) {
            refused = true;
        }
        master.abort(w);  // the trainer's path for a failed or stopped run
    });
    QVERIFY2(refused, "a replica of the wrong size was attached");
    QVERIFY2(!reconciled, "reconcile ran although a replica was missing");
}

// The residual, the encoding and every message's application on the GPU (CudaWorkerEncoder):
// the same invariants, with the accounting read back from the device.
void TestGradientSharing::on_a_gpu_data() {
    QTest::addColumn<int>("workers");
    QTest::addColumn<QString>("algorithm");
    QTest::addColumn<QString>("residual");
    QTest::addColumn<QString>("overlap");
    QTest::newRow("2 workers, fixed 0.01 (sparse)") << 2 << "fixed:0.01" << "none" << "off";
    QTest::newRow("2 workers, fixed 1e-3 (bitmap)") << 2 << "fixed:1e-3" << "none" << "off";
    QTest::newRow("3 workers, adaptive, clipping") << 3 << "adaptive" << "clip" << "off";
    QTest::newRow("2 workers, target 0.05, send overlap") << 2 << "target:0.05" << "none" << "send";
}

void TestGradientSharing::on_a_gpu() {
    QFETCH(int, workers);
    QFETCH(QString, algorithm);
    QFETCH(QString, residual);
    QFETCH(QString, overlap);
    if (const QString why = unavailable("cuda:0"); !why.isEmpty()) QSKIP(qPrintable("no CUDA device: " + why));
    dist::GradientSharingOptions o;
    o.threshold_algorithm = dist::parse_threshold_spec(algorithm.toStdString());
    o.residual = residual.toStdString();
    o.overlap = dist::parse_overlap(overlap.toStdString());
    const auto r = train_workers(workers, 60, o, "cuda:0");
    replicas_equal(r, workers);
    if (QTest::currentTestFailed()) return;
    // Clipping takes from the residual what was never sent: the balance holds without it.
    if (residual == "none") nothing_lost(r, workers, 60);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(r.mean_density > 0, qPrintable(QString::number(r.mean_density)));
}

void TestGradientSharing::encode_overlap_is_refused_on_a_gpu() {
    if (const QString why = unavailable("cuda:0"); !why.isEmpty()) QSKIP(qPrintable("no CUDA device: " + why));
    const auto config = config::ModelConfig::parse(kModel, "gs");
    dist::GradientSharingOptions o;
    o.overlap = dist::GradientSharingOptions::Overlap::Encode;
    o.max_staleness = 1;
    dist::GradientSharing master({1, 0, 1}, config.param_count(), o);
    auto be = backend::create_backend("cuda:0", {1});
    nn::Network net(config, *be);
    try {
        master.attach(0, net);
        QFAIL("encoding overlap accepted on a GPU");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("--overlap-comm encode is for the CPU backend") == 0, e.what());
    }
    master.abort(0);
}

QTEST_APPLESS_MAIN(TestGradientSharing)
#include "test_gradient_sharing.moc"
