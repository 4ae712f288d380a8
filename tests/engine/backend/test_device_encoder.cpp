// The device threshold encoder against the CPU codec (engine/codec), bit for bit: the same
// residual stream through dist::ThresholdEncoder on the host and DeviceEncoder on the GPU must give
// identical serialized messages, identical residuals (compared as bit patterns, so -0 and subnormals
// count; a NaN must stay a NaN), the same Sparse/Bitmap mode after every call, and identical parameters once
// the messages are applied. Iterations vary the density so Auto policy crosses the hysteresis in
// both directions; clipping runs between them as gradient sharing runs it.
//
// The GPU rows skip without a CUDA device ("no CUDA device: ..."); refusing a non-CUDA backend is
// checked everywhere.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backend/cuda/device_encoder.h"
#include "backend/registry.h"
#include "codec/encoded_update.h"
#include "codec/residual.h"
#include "codec/threshold_encoder.h"
#include "core/error.h"

using namespace thresher;
using backend::cuda::DeviceEncoder;
using Policy = dist::ThresholdEncoder::FormatPolicy;
using Format = dist::EncodedUpdate::Format;

namespace {

// An update in which about `density` of the entries are big enough (|u| in [τ, 3τ]) to cross on
// their own and the rest are small; every 97th entry is one of the awkward values.
std::vector<float> update(std::size_t n, double density, float tau, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> u(n);
    const float awkward[] = {tau, -tau, -0.f, std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::denorm_min(), 1e30f, -2.f * tau,
                             std::nextafter(tau, 0.f)};
    for (std::size_t i = 0; i < n; ++i) {
        const float sign = unit(gen) < 0.5f ? -1.f : 1.f;
        if (i % 97 == 13)
            u[i] = awkward[(i / 97) % std::size(awkward)];
        else if (unit(gen) < density)
            u[i] = sign * tau * (1.f + 2.f * unit(gen));
        else
            u[i] = sign * tau * 0.3f * unit(gen);
    }
    return u;
}

// Bit patterns, except that any NaN equals any NaN: IEEE 754 leaves a result's NaN payload and
// sign to the hardware (the CPU propagates the operand's quiet NaN, 0x7fc00000; CUDA's arithmetic
// returns its canonical 0x7fffffff), so only "is NaN" is the codec's to keep.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::size_t& at) {
    for (at = 0; at < a.size(); ++at) {
        if (std::isnan(a[at]) && std::isnan(b[at])) continue;
        if (std::memcmp(&a[at], &b[at], sizeof(float)) != 0) return false;
    }
    return a.size() == b.size();
}

const char* format_name(Format f) { return f == Format::Sparse ? "sparse" : "bitmap"; }

// Processors the device encoder does not know.
class Doubling final : public dist::ResidualPostProcessor {
public:
    void process(int, float, float*, std::size_t) override {}
    std::unique_ptr<dist::ResidualPostProcessor> clone() const override { return std::make_unique<Doubling>(); }
    std::string name() const override { return "doubling"; }
};

}  // namespace

class TestDeviceEncoder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refuses_host_backend();
    void matches_cpu_data();
    void matches_cpu();
    void rejects_bad_input();

private:
    std::unique_ptr<backend::Backend> open_or_null(QString& why);
};

std::unique_ptr<backend::Backend> TestDeviceEncoder::open_or_null(QString& why) {
    try {
        return backend::create_backend("cuda:0");
    } catch (const Error& e) {
        why = QString("no CUDA device: %1").arg(e.what());
        return nullptr;
    }
}

void TestDeviceEncoder::refuses_host_backend() {
    auto cpu = backend::create_backend("cpu");
    try {
        DeviceEncoder encoder(*cpu, 16);
        QFAIL("a device encoder was built on the CPU backend");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("not a CUDA backend"), e.what());
    }
}

void TestDeviceEncoder::matches_cpu_data() {
    QTest::addColumn<int>("length");
    QTest::addColumn<int>("policy");
    const std::pair<const char*, Policy> policies[] = {
        {"auto", Policy::Auto}, {"sparse", Policy::Sparse}, {"bitmap", Policy::Bitmap}};
    for (int n : {1, 7, 16, 33, 1000, 4099, (1 << 20) + 5})
        for (const auto& [name, policy] : policies)
            QTest::newRow(qPrintable(QString("N=%1 %2").arg(n).arg(name))) << n << int(policy);
}

void TestDeviceEncoder::matches_cpu() {
    QFETCH(int, length);
    QFETCH(int, policy);
    QString why;
    auto be = open_or_null(why);
    if (!be) QSKIP(qPrintable(why));
    const auto n = static_cast<std::size_t>(length);
    const auto p = static_cast<Policy>(policy);

    dist::ThresholdEncoder cpu(n, p);
    DeviceEncoder gpu(*be, n, p);
    QCOMPARE(gpu.length(), n);
    QCOMPARE(gpu.mode(), cpu.mode());
    dist::ResidualClipping clipping(2, 1.5);

    std::vector<float> r_cpu(n, 0.f), theta_cpu(n, 0.f), decoded_cpu(n, 0.f);
    backend::Buffer r(*be, n), u_dev(*be, n), theta(*be, n), decoded(*be, n);
    std::vector<float> r_got(n), theta_got(n), decoded_got(n);

    // Densities chosen to cross the Auto hysteresis both ways: S, B, B, B then S again.
    const double densities[] = {0.01, 0.2, 0.05, 0.04, 0.005, 0.001, 0.5, 0.0};
    const float taus[] = {0.5f, 0.5f, 0.25f, 1e-3f, 0.5f, 0.75f, 0.5f, 0.5f};
    int sparse_seen = 0, bitmap_seen = 0;
    for (int it = 0; it < int(std::size(densities)); ++it) {
        const float tau = taus[it];
        const auto u = update(n, densities[it], tau, 40 + it);
        for (std::size_t i = 0; i < n; ++i) r_cpu[i] += 1.f * u[i];  // = axpy(1, u, r)
        be->upload(u_dev.data(), u.data(), n);
        be->axpy(1.f, u_dev.data(), r.data(), n);

        dist::EncodedUpdate want, got;
        cpu.encode(r_cpu.data(), tau, want);
        gpu.encode(r.data(), tau, got);
        clipping.process(it, tau, r_cpu.data(), n);
        gpu.post_process(clipping, it, tau, r.data());

        const QString at = QString("iteration %1 (tau %2)").arg(it).arg(tau);
        QVERIFY2(got.format == want.format,
                 qPrintable(at + ": " + format_name(got.format) + " message, cpu " + format_name(want.format)));
        QVERIFY2(got.count == want.count,
                 qPrintable(at + QString(": %1 entries, cpu %2").arg(got.count).arg(want.count)));
        QVERIFY2(dist::serialize(got) == dist::serialize(want), qPrintable(at + ": message bytes differ"));
        QCOMPARE(gpu.mode(), cpu.mode());
        (want.format == Format::Sparse ? sparse_seen : bitmap_seen)++;

        be->download(r_got.data(), r.data(), n);
        std::size_t bad = 0;
        QVERIFY2(same_bits(r_got, r_cpu, bad),
                 qPrintable(at + QString(": residual[%1] = %2, cpu %3").arg(bad).arg(r_got[bad]).arg(r_cpu[bad])));

        // Apply as an update (θ -= message) and decode into zeros, from the deserialized bytes
        // as a receiving worker would.
        const auto received = dist::deserialize(dist::serialize(want), static_cast<std::uint32_t>(n));
        dist::apply(received, theta_cpu.data(), -1.f);
        gpu.apply(received, theta.data(), -1.f);
        std::fill(decoded_cpu.begin(), decoded_cpu.end(), 0.f);
        dist::apply(received, decoded_cpu.data(), 1.f);
        be->fill(decoded.data(), 0.f, n);
        gpu.apply(received, decoded.data(), 1.f);
        be->download(theta_got.data(), theta.data(), n);
        be->download(decoded_got.data(), decoded.data(), n);
        QVERIFY2(same_bits(theta_got, theta_cpu, bad), qPrintable(at + QString(": parameter %1 differs").arg(bad)));
        QVERIFY2(same_bits(decoded_got, decoded_cpu, bad), qPrintable(at + QString(": decoded %1 differs").arg(bad)));
    }
    if (p == Policy::Auto && n >= 1000)
        QVERIFY2(sparse_seen > 0 && bitmap_seen > 0, "the run never switched format");
}

void TestDeviceEncoder::rejects_bad_input() {
    QString why;
    auto be = open_or_null(why);
    if (!be) QSKIP(qPrintable(why));
    DeviceEncoder gpu(*be, 100);
    backend::Buffer r(*be, 100);
    for (float tau : {0.f, -1.f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        QVERIFY_THROWS_EXCEPTION(Error, gpu.encode(r.data(), tau));
    }
    dist::EncodedUpdate other;
    other.length = 99;
    other.threshold = 1.f;
    QVERIFY_THROWS_EXCEPTION(Error, gpu.apply(other, r.data(), -1.f));
    QVERIFY_THROWS_EXCEPTION(Error, gpu.post_process(Doubling(), 5, 1.f, r.data()));
    gpu.post_process(dist::NoResidualProcessing(), 5, 1.f, r.data());  // nothing to do, no error
}

QTEST_GUILESS_MAIN(TestDeviceEncoder)
#include "test_device_encoder.moc"
