// nd4j_writer.h: one ND4J row vector, big-endian as Java writes it.
#include "export/nd4j_writer.h"

#include <bit>
#include <cstdint>

namespace thresher::model_export {

namespace {

class JavaOut {
public:
    explicit JavaOut(std::size_t reserve) { b_.reserve(reserve); }
    void be(std::uint64_t v, int bytes) {
        for (int i = bytes - 1; i >= 0; --i) b_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void utf(const char* s) {  // DataOutputStream.writeUTF: u16 byte count, then the (ASCII) bytes
        const std::string text(s);
        be(text.size(), 2);
        b_ += text;
    }
    std::string take() { return std::move(b_); }

private:
    std::string b_;
};

constexpr std::int64_t kArrayFloat = 8192;  // libnd4j ArrayOptions ARRAY_FLOAT
constexpr std::int64_t kOrderC = 'c';

}  // namespace

std::string nd4j_row_bytes(std::span<const float> values) {
    const auto n = static_cast<std::int64_t>(values.size());
    JavaOut o(128 + 4 * values.size());
    const std::int64_t info[] = {2, 1, n, n, 1, kArrayFloat, 1, kOrderC};
    o.utf("LONG_SHAPE");
    o.be(std::size(info), 8);
    o.utf("LONG");
    for (auto x : info) o.be(static_cast<std::uint64_t>(x), 8);
    o.utf("MIXED_DATA_TYPES");
    o.be(static_cast<std::uint64_t>(n), 8);
    o.utf("FLOAT");
    for (float x : values) o.be(std::bit_cast<std::uint32_t>(x), 4);
    return o.take();
}

}  // namespace thresher::model_export
