#include "config/nd4j_array.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace thresher::config {

namespace {

// A cursor over big-endian bytes that refuses to read past the end.
class Reader {
public:
    Reader(std::span<const std::uint8_t> bytes, const std::string& source) : b_(bytes), source_(source) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw ConfigError(source_ + ": byte " + std::to_string(at_) + ": " + what);
    }
    std::size_t left() const { return b_.size() - at_; }
    std::size_t at() const { return at_; }

    std::uint64_t unsigned_be(int n, const char* what) {
        if (left() < static_cast<std::size_t>(n))
            fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left");
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i) v = (v << 8) | b_[at_ + static_cast<std::size_t>(i)];
        at_ += static_cast<std::size_t>(n);
        return v;
    }
    std::string utf(const char* what) {
        const auto n = static_cast<std::size_t>(unsigned_be(2, what));
        if (left() < n) fail(std::string("truncated: ") + what + " of " + std::to_string(n) + " bytes");
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
        at_ += n;
        return s;
    }

private:
    std::span<const std::uint8_t> b_;
    const std::string& source_;
    std::size_t at_ = 0;
};

struct Header {
    std::string mode, type;
    std::uint64_t length = 0;
    int element = 0;  // bytes per element
};

int element_size(const std::string& type) {
    if (type == "DOUBLE" || type == "LONG" || type == "UINT64") return 8;
    if (type == "FLOAT" || type == "INT" || type == "UINT32") return 4;
    if (type == "HALF" || type == "BFLOAT16" || type == "SHORT" || type == "UINT16") return 2;
    if (type == "BYTE" || type == "UBYTE" || type == "BOOL") return 1;
    return 0;
}

Header read_header(Reader& r, const char* which) {
    Header h;
    h.mode = r.utf("allocation mode");
    // Before 1.0 (HEAP, DIRECT, JAVACPP) the length is an int; from 1.0 on a long.
    if (h.mode == "HEAP" || h.mode == "DIRECT" || h.mode == "JAVACPP") {
        h.length = r.unsigned_be(4, "length");
        if (h.length > 0x7fffffffULL) r.fail(std::string(which) + ": negative length");
    } else if (h.mode == "LONG_SHAPE" || h.mode == "MIXED_DATA_TYPES") {
        h.length = r.unsigned_be(8, "length");
        if (h.length > 0x7fffffffffffffffULL) r.fail(std::string(which) + ": negative length");
    } else {
        r.fail(std::string(which) + ": unknown allocation mode \"" + h.mode.substr(0, 40) +
               "\" (expected HEAP, DIRECT, JAVACPP, LONG_SHAPE or MIXED_DATA_TYPES): not an ND4J array");
    }
    h.type = r.utf("data type");
    if (h.type == "COMPRESSED") r.fail(std::string(which) + ": compressed ND4J buffers are not supported");
    h.element = element_size(h.type);
    if (h.element == 0) r.fail(std::string(which) + ": unknown data type \"" + h.type.substr(0, 40) + "\"");
    // Bound the declared length by the bytes that are really there, before allocating.
    if (h.length > r.left() / static_cast<std::uint64_t>(h.element))
        r.fail(std::string(which) + ": declares " + std::to_string(h.length) + " " + h.type + " values (" +
               std::to_string(h.length) + " x " + std::to_string(h.element) + " bytes) but only " +
               std::to_string(r.left()) + " bytes follow");
    return h;
}

float half_to_float(std::uint16_t h) {
    const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    const float sign = (h & 0x8000) ? -1.f : 1.f;
    if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
    if (exp == 31) return mant ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
    return sign * std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
}

// A shape value: INT or LONG, as the integer it is (never through a double, which cannot hold
// every long and whose conversion back could overflow).
std::int64_t integer(Reader& r, const Header& h) {
    const std::uint64_t bits = r.unsigned_be(h.element, "shape value");
    if (h.type == "INT") return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
    return static_cast<std::int64_t>(bits);
}

// One data element as a double (then stored as a float).
double element(Reader& r, const Header& h) {
    const std::uint64_t bits = r.unsigned_be(h.element, "value");
    if (h.type == "DOUBLE") return std::bit_cast<double>(bits);
    if (h.type == "FLOAT") return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (h.type == "HALF") return half_to_float(static_cast<std::uint16_t>(bits));
    if (h.type == "BFLOAT16") return std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16));
    if (h.type == "LONG") return static_cast<double>(static_cast<std::int64_t>(bits));
    if (h.type == "INT") return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
    if (h.type == "SHORT") return static_cast<std::int16_t>(static_cast<std::uint16_t>(bits));
    if (h.type == "BYTE") return static_cast<std::int8_t>(static_cast<std::uint8_t>(bits));
    return static_cast<double>(bits);  // unsigned kinds, BOOL
}

}  // namespace

std::string Nd4jArray::shape_str() const {
    std::ostringstream s;
    s << "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    s << "]";
    return s.str();
}

Nd4jArray read_nd4j_array(std::span<const std::uint8_t> bytes, const std::string& source, std::size_t* consumed) {
    Reader r(bytes, source);
    const Header sh = read_header(r, "shape information");
    if (sh.type != "INT" && sh.type != "LONG") r.fail("shape information: data type " + sh.type + ", expected INT or LONG");
    if (sh.length < 4) r.fail("shape information: " + std::to_string(sh.length) + " values, too few for any array");
    std::vector<std::int64_t> info;
    info.reserve(static_cast<std::size_t>(sh.length));  // bounded by the bytes present (read_header)
    for (std::uint64_t i = 0; i < sh.length; ++i) info.push_back(integer(r, sh));
    const std::int64_t rank = info[0];
    if (rank < 0 || rank > 32 || static_cast<std::uint64_t>(2 * rank + 4) != sh.length)
        r.fail("shape information: rank " + std::to_string(rank) + " does not fit its " + std::to_string(sh.length) +
               " values (expected 2 x rank + 4)");
    Nd4jArray a;
    std::uint64_t count = 1;
    for (std::int64_t i = 0; i < rank; ++i) {
        const std::int64_t d = info[static_cast<std::size_t>(1 + i)];
        if (d < 0) r.fail("shape information: negative dimension " + std::to_string(d));
        a.shape.push_back(d);
        if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
            r.fail("shape information: the shape " + a.shape_str() + " overflows");
        count *= static_cast<std::uint64_t>(d);
    }
    const std::int64_t order = info.back();
    if (order != 'c' && order != 'f') r.fail("shape information: order " + std::to_string(order) + ", expected 99 ('c') or 102 ('f')");
    a.order = static_cast<char>(order);

    const Header dh = read_header(r, "data");
    if (dh.length != count)
        r.fail("data: " + std::to_string(dh.length) + " values, but the shape " + a.shape_str() + " holds " + std::to_string(count));
    a.data_type = dh.type;
    a.data.reserve(static_cast<std::size_t>(dh.length));  // bounded by the bytes present (read_header)
    for (std::uint64_t i = 0; i < dh.length; ++i) a.data.push_back(static_cast<float>(element(r, dh)));
    if (consumed) *consumed = r.at();
    return a;
}

}  // namespace thresher::config
