// The snapshot of an HDF5 file that thresher-hdf5-reader writes on its stdout and
// engine/config/hdf5_file.cpp reads back: the one definition of its records, writer and reader
// side by side, so the two programs cannot spell a record two ways.
//
// Host byte order: the helper always runs on the machine of the program that starts it (it is
// installed beside it and travels in the same SSH bundle). The stream:
//   kMagic (8 bytes), u32 kVersion                 a helper from another build is named, not misread
//   'G' path, u32 n, n names                       a group and its members (hard links)
//   'A' path, name, u32 n, n strings               a string attribute
//   'D' path, u32 rank, rank u64 dims, u64 n, n floats
//   'X' path, problem                              a dataset that could not be read as floats
//   'Y' path, name, problem                        an attribute that could not be read as strings
//   'F' problem                                    the file could not be opened
//   'Z'                                            the end (a snapshot without it is incomplete)
// Strings are u32 length + bytes; paths have no leading slash, "" is the root. The reader checks
// every length against the bytes that follow it: it trusts nothing the helper says.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace thresher::hdf5_snapshot {

inline constexpr char kMagic[8] = {'T', 'H', 'R', 'H', 'D', 'F', '5', 'S'};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kMaxRank = 8;

// thresher-hdf5-reader's exit statuses. 0 also when the file could not be opened: that is an
// 'F' record, in the file's terms.
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitWriteFailed = 3;  // stdout closed or failing
inline constexpr int kExitInternal = 4;     // an exception (out of memory under the address-space cap)
inline constexpr int kExitInput = 5;        // stdin unreadable, or longer than --max-bytes

enum class Kind : char {
    group = 'G',
    attribute = 'A',
    dataset = 'D',
    bad_dataset = 'X',
    bad_attribute = 'Y',
    unreadable = 'F',
    end = 'Z',
};

struct Group {
    std::string path;
    std::vector<std::string> members;
};
struct Attribute {
    std::string path, name;
    std::vector<std::string> values;
};
struct Dataset {
    std::string path;
    std::vector<std::uint64_t> dims;  // at most kMaxRank
    std::vector<float> values;
};
struct BadDataset {
    std::string path, problem;
};
struct BadAttribute {
    std::string path, name, problem;
};
struct Unreadable {
    std::string problem;
};
struct End {};
using Record = std::variant<Group, Attribute, Dataset, BadDataset, BadAttribute, Unreadable, End>;

// Encodes records into a buffer; with a sink, hands the buffer over whenever it passes 1 MiB (and
// on flush()), so the helper never holds a second copy of the file's floats.
class Writer {
public:
    using Sink = std::function<void(std::span<const std::uint8_t>)>;
    explicit Writer(Sink sink = {}) : sink_(std::move(sink)), b_(sizeof kMagic + sizeof kVersion) {
        // Copied into place: GCC 12 warns (a false -Wstringop-overflow) on inserts into a new vector.
        std::memcpy(b_.data(), kMagic, sizeof kMagic);
        std::memcpy(b_.data() + sizeof kMagic, &kVersion, sizeof kVersion);
    }

    void write(const Group& r) {
        kind(Kind::group);
        str(r.path);
        strs(r.members);
        done();
    }
    void write(const Attribute& r) {
        kind(Kind::attribute);
        str(r.path);
        str(r.name);
        strs(r.values);
        done();
    }
    void write(const Dataset& r) {
        kind(Kind::dataset);
        str(r.path);
        put(static_cast<std::uint32_t>(r.dims.size()));
        for (const auto d : r.dims) put(d);
        put(static_cast<std::uint64_t>(r.values.size()));
        const auto* p = reinterpret_cast<const std::uint8_t*>(r.values.data());
        b_.insert(b_.end(), p, p + r.values.size() * sizeof(float));
        done();
    }
    void write(const BadDataset& r) {
        kind(Kind::bad_dataset);
        str(r.path);
        str(r.problem);
        done();
    }
    void write(const BadAttribute& r) {
        kind(Kind::bad_attribute);
        str(r.path);
        str(r.name);
        str(r.problem);
        done();
    }
    void write(const Unreadable& r) {
        kind(Kind::unreadable);
        str(r.problem);
        done();
    }
    void write(const End&) {
        kind(Kind::end);
        flush();
    }

    // Without a sink: everything written so far.
    const std::vector<std::uint8_t>& bytes() const { return b_; }
    void flush() {
        if (!sink_ || b_.empty()) return;
        sink_(b_);
        b_.clear();
    }

private:
    template <class T>
    void put(T v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        b_.insert(b_.end(), p, p + sizeof v);
    }
    void kind(Kind k) { put(static_cast<char>(k)); }
    void str(const std::string& s) {
        put(static_cast<std::uint32_t>(s.size()));
        b_.insert(b_.end(), s.begin(), s.end());
    }
    void strs(const std::vector<std::string>& v) {
        put(static_cast<std::uint32_t>(v.size()));
        for (const auto& s : v) str(s);
    }
    void done() {
        if (b_.size() >= (std::size_t{1} << 20)) flush();
    }

    Sink sink_;
    std::vector<std::uint8_t> b_;
};

// Decodes a snapshot. Throws std::runtime_error ("snapshot: ...") on anything malformed.
class Reader {
public:
    // Checks the magic and version first: a helper of another build is refused by name.
    explicit Reader(std::span<const std::uint8_t> b) : b_(b) {
        need(sizeof kMagic);
        if (std::memcmp(b_.data(), kMagic, sizeof kMagic) != 0) throw std::runtime_error("snapshot: no header");
        at_ = sizeof kMagic;
        if (const auto v = get<std::uint32_t>(); v != kVersion)
            throw std::runtime_error("snapshot: format version " + std::to_string(v) + ", expected " + std::to_string(kVersion));
    }

    Record next() {
        switch (static_cast<Kind>(get<char>())) {
            case Kind::group: {
                Group r;
                r.path = str();
                r.members = strs();
                return r;
            }
            case Kind::attribute: {
                Attribute r;
                r.path = str();
                r.name = str();
                r.values = strs();
                return r;
            }
            case Kind::dataset: {
                Dataset r;
                r.path = str();
                const auto rank = get<std::uint32_t>();
                if (rank > kMaxRank) throw std::runtime_error("snapshot: bad rank");
                for (std::uint32_t i = 0; i < rank; ++i) r.dims.push_back(get<std::uint64_t>());
                const auto n = get<std::uint64_t>();
                if (n > (b_.size() - at_) / sizeof(float)) throw std::runtime_error("snapshot: truncated dataset");
                std::uint64_t count = 1;
                for (const auto d : r.dims) count = d && count > n / d ? n + 1 : count * d;
                if (count != n) throw std::runtime_error("snapshot: a dataset's values do not match its shape");
                r.values.resize(static_cast<std::size_t>(n));
                std::memcpy(r.values.data(), b_.data() + at_, r.values.size() * sizeof(float));
                at_ += r.values.size() * sizeof(float);
                return r;
            }
            case Kind::bad_dataset: {
                BadDataset r;
                r.path = str();
                r.problem = str();
                return r;
            }
            case Kind::bad_attribute: {
                BadAttribute r;
                r.path = str();
                r.name = str();
                r.problem = str();
                return r;
            }
            case Kind::unreadable:
                return Unreadable{str()};
            case Kind::end:
                return End{};
        }
        throw std::runtime_error("snapshot: unknown record");
    }

private:
    void need(std::size_t n) const {
        if (n > b_.size() - at_) throw std::runtime_error("snapshot: truncated");
    }
    template <class T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, b_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    std::string str() {
        const auto n = get<std::uint32_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
        at_ += n;
        return s;
    }
    // Each string takes at least its 4-byte length, which bounds a count before anything is reserved.
    std::vector<std::string> strs() {
        const auto n = get<std::uint32_t>();
        if (n > (b_.size() - at_) / sizeof(std::uint32_t)) throw std::runtime_error("snapshot: truncated");
        std::vector<std::string> v;
        v.reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) v.push_back(str());
        return v;
    }

    std::span<const std::uint8_t> b_;
    std::size_t at_ = 0;
};

}  // namespace thresher::hdf5_snapshot
