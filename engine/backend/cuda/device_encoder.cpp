// The device encoder's host side: the CPU encoder's format decision, applied to the count the
// GPU found, and the copies of message bodies between pinned host memory and the device.
#include "backend/cuda/device_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/encoder_kernels.h"
#include "core/error.h"

namespace thresher::backend::cuda {

namespace ek = encoder_kernels;

struct DeviceEncoder::Impl {
    CudaBackend& be;
    std::size_t n;
    std::size_t nwords;
    FormatPolicy policy;
    Format mode;

    // encode(): the words, their entry counts and the counts' prefix sums, and CUB's scratch.
    DeviceArray<std::uint32_t> words, counts, offsets;
    DeviceArray<unsigned char> scan_temp;
    std::size_t scan_bytes = 0;
    DeviceArray<std::int32_t> sparse;           // grows to the largest sparse message
    PinnedArray<std::uint32_t> totals{2};       // offsets[last], counts[last]
    PinnedArray<std::uint32_t> message_host;    // the body on its way to the host; grows

    // apply(): the body on its way to the device. `body_sent` marks when the pinned copy has
    // been read, so the next apply() may overwrite it.
    PinnedArray<std::uint32_t> body_host;
    DeviceArray<std::uint32_t> body_device;
    Event body_sent;

    Impl(CudaBackend& b, std::size_t length, FormatPolicy p)
        : be(b), n(length), nwords(dist::bitmap_words(length)), policy(p),
          mode(p == FormatPolicy::Bitmap ? Format::Bitmap : Format::Sparse) {}

    cudaStream_t stream() const { return be.stream(); }

    // Host words of at least `count`; reallocation keeps nothing (callers refill it).
    static void reserve(PinnedArray<std::uint32_t>& a, std::size_t count) {
        if (a.size() < count) {
            a = PinnedArray<std::uint32_t>();
            a = PinnedArray<std::uint32_t>(count);
        }
    }
};

DeviceEncoder::DeviceEncoder(Backend& backend, std::size_t length, FormatPolicy policy) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda)
        throw Error("device encoder: backend " + backend.info().name +
                    " is not a CUDA backend (use dist::ThresholdEncoder on host memory)");
    if (length > dist::kMaxEncodedLength)
        throw Error("device encoder: " + std::to_string(length) +
                    " parameters is more than a message can index (" +
                    std::to_string(dist::kMaxEncodedLength) + ")");
    cuda->activate();
    impl_ = std::make_unique<Impl>(*cuda, length, policy);
    Impl& m = *impl_;
    m.words = DeviceArray<std::uint32_t>(m.nwords);
    m.counts = DeviceArray<std::uint32_t>(m.nwords);
    m.offsets = DeviceArray<std::uint32_t>(m.nwords);
    // Never empty: CUB takes a null scratch pointer as "only tell me the size" and would skip
    // the scan.
    m.scan_bytes = std::max<std::size_t>(ek::scan_temp_bytes(m.nwords), 16);
    m.scan_temp = DeviceArray<unsigned char>(m.scan_bytes);
    cudaEvent_t event = nullptr;
    THRESHER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    m.body_sent.reset(event);
}

DeviceEncoder::~DeviceEncoder() {
    // Enqueued copies may still read this encoder's pinned buffers.
    if (impl_ && cudaSetDevice(impl_->be.device()) == cudaSuccess)
        (void)cudaStreamSynchronize(impl_->stream());
}

std::size_t DeviceEncoder::length() const { return impl_->n; }
DeviceEncoder::FormatPolicy DeviceEncoder::policy() const { return impl_->policy; }
DeviceEncoder::Format DeviceEncoder::mode() const { return impl_->mode; }

dist::EncodedUpdate DeviceEncoder::encode(float* residual, float threshold) {
    dist::EncodedUpdate out;
    encode(residual, threshold, out);
    return out;
}

void DeviceEncoder::encode(float* residual, float threshold, dist::EncodedUpdate& out) {
    if (!std::isfinite(threshold) || !(threshold > 0.f))
        throw Error("device encoder: the threshold must be finite and positive, got " +
                    std::to_string(threshold));
    Impl& m = *impl_;
    m.be.activate();
    const cudaStream_t s = m.stream();
    out.length = static_cast<std::uint32_t>(m.n);
    out.threshold = threshold;
    out.sparse.clear();
    out.bitmap.clear();

    // 1. Codes, counts and the residual update; the total from the prefix sum's last element.
    std::size_t total = 0;
    if (m.n > 0) {
        ek::encode(s, residual, m.n, threshold, m.words.data(), m.counts.data());
        ek::exclusive_sum(s, m.counts.data(), m.offsets.data(), m.nwords, m.scan_temp.data(), m.scan_bytes);
        THRESHER_CUDA_CHECK(cudaMemcpyAsync(m.totals.data(), m.offsets.data() + m.nwords - 1,
                                            sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
        THRESHER_CUDA_CHECK(cudaMemcpyAsync(m.totals.data() + 1, m.counts.data() + m.nwords - 1,
                                            sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
        THRESHER_CUDA_CHECK(cudaStreamSynchronize(s));
        total = std::size_t(m.totals.data()[0]) + m.totals.data()[1];
    }

    // 2. The format, by dist::ThresholdEncoder's rules (threshold_encoder.h): in Sparse mode a
    //    message reaching sparse_limit(N) goes out as a Bitmap and switches the mode; in Bitmap
    //    mode one with fewer than bitmap_exit(N) entries switches back for the next message.
    bool bitmap = m.mode == Format::Bitmap;
    if (!bitmap) {
        const std::size_t limit = m.policy == FormatPolicy::Sparse
                                      ? std::numeric_limits<std::size_t>::max()
                                      : dist::ThresholdEncoder::sparse_limit(m.n);
        if (total >= limit) {
            bitmap = true;
            m.mode = Format::Bitmap;
        }
    }
    out.count = static_cast<std::uint32_t>(total);

    // 3. The body, to the host.
    if (bitmap) {
        out.format = Format::Bitmap;
        if (m.nwords > 0) {
            Impl::reserve(m.message_host, m.nwords);
            THRESHER_CUDA_CHECK(cudaMemcpyAsync(m.message_host.data(), m.words.data(),
                                                m.nwords * sizeof(std::uint32_t),
                                                cudaMemcpyDeviceToHost, s));
            THRESHER_CUDA_CHECK(cudaStreamSynchronize(s));
        }
        out.bitmap.assign(m.message_host.data(), m.message_host.data() + m.nwords);
        if (m.policy == FormatPolicy::Auto && total < dist::ThresholdEncoder::bitmap_exit(m.n))
            m.mode = Format::Sparse;
        return;
    }
    out.format = Format::Sparse;
    if (total == 0) return;
    if (m.sparse.size() < total) {
        m.sparse = DeviceArray<std::int32_t>();  // cudaFree waits for the last message's readers
        m.sparse = DeviceArray<std::int32_t>(total);
    }
    ek::write_sparse(s, m.words.data(), m.offsets.data(), m.nwords, m.sparse.data());
    Impl::reserve(m.message_host, total);
    THRESHER_CUDA_CHECK(cudaMemcpyAsync(m.message_host.data(), m.sparse.data(),
                                        total * sizeof(std::int32_t), cudaMemcpyDeviceToHost, s));
    THRESHER_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto* entries = reinterpret_cast<const std::int32_t*>(m.message_host.data());
    out.sparse.assign(entries, entries + total);
}

void DeviceEncoder::apply(const dist::EncodedUpdate& u, float* target, float scale) {
    Impl& m = *impl_;
    if (u.length != m.n)
        throw Error("device encoder: a message for " + std::to_string(u.length) +
                    " parameters applied to " + std::to_string(m.n));
    const bool sparse = u.format == Format::Sparse;
    const std::size_t words = sparse ? u.sparse.size() : u.bitmap.size();
    if (!sparse && words != m.nwords)
        throw Error("device encoder: a bitmap of " + std::to_string(words) + " words for " +
                    std::to_string(m.n) + " parameters");
    if (words == 0) return;
    m.be.activate();
    const cudaStream_t s = m.stream();
    // The previous apply's copy must have read the pinned body before it is overwritten (or freed).
    THRESHER_CUDA_CHECK(cudaEventSynchronize(m.body_sent.get()));
    Impl::reserve(m.body_host, words);
    if (m.body_device.size() < words) {
        m.body_device = DeviceArray<std::uint32_t>();
        m.body_device = DeviceArray<std::uint32_t>(words);
    }
    std::memcpy(m.body_host.data(), sparse ? static_cast<const void*>(u.sparse.data()) : u.bitmap.data(),
                words * sizeof(std::uint32_t));
    THRESHER_CUDA_CHECK(cudaMemcpyAsync(m.body_device.data(), m.body_host.data(),
                                        words * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s));
    THRESHER_CUDA_CHECK(cudaEventRecord(m.body_sent.get(), s));
    const float plus = scale * u.threshold;  // as dist::apply computes it
    if (sparse)
        ek::apply_sparse(s, reinterpret_cast<const std::int32_t*>(m.body_device.data()), words, plus, target);
    else
        ek::apply_bitmap(s, m.body_device.data(), m.n, plus, target);
}

void DeviceEncoder::post_process(const dist::ResidualPostProcessor& p, int iteration,
                                 float threshold, float* residual) {
    if (dynamic_cast<const dist::NoResidualProcessing*>(&p)) return;
    const auto* clipping = dynamic_cast<const dist::ResidualClipping*>(&p);
    if (!clipping)
        throw Error("device encoder: residual processing \"" + p.name() +
                    "\" has no device implementation");
    if (iteration <= 0 || iteration % clipping->every() != 0) return;
    const float c = static_cast<float>(clipping->multiple() * threshold);  // as ResidualClipping
    impl_->be.activate();
    ek::clip(impl_->stream(), residual, impl_->n, c);
}

}  // namespace thresher::backend::cuda
