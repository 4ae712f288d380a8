#include "config/hdf5_file.h"

#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <variant>

#include "config/hdf5_reader_location.h"
#include "config/hdf5_reader_process.h"
#include "core/error.h"
#include "hdf5_reader/snapshot.h"

namespace thresher::config {

namespace {

std::string normalise(const std::string& path) {
    std::string out, cur;
    auto flush = [&] {
        if (!cur.empty()) out += (out.empty() ? "" : "/") + cur;
        cur.clear();
    };
    for (char c : path) {
        if (c == '/') flush();
        else cur.push_back(c);
    }
    flush();
    return out;
}

}  // namespace

struct Hdf5File::Snapshot {
    std::map<std::string, std::vector<std::string>> groups;
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> attributes;
    std::map<std::string, Floats> datasets;
    std::map<std::string, std::string> bad;  // datasets that could not be read, and why
    std::map<std::pair<std::string, std::string>, std::string> bad_attributes;
};

bool looks_like_hdf5(std::span<const std::uint8_t> b) {
    static const std::uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}

std::string Hdf5File::Floats::dims_str() const {
    std::ostringstream s;
    s << "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
    s << "]";
    return s.str();
}

Hdf5File::Hdf5File(std::span<const std::uint8_t> image, std::string source)
    : snap_(std::make_unique<Snapshot>()), source_(std::move(source)) {
    if (!looks_like_hdf5(image)) throw ConfigError(source_ + ": not an HDF5 file (no HDF5 signature at its start)");
    std::string reader;
    try {
        reader = find_hdf5_reader(hdf5_reader_places());
    } catch (const ConfigError& e) {
        throw ConfigError(source_ + ": cannot read the HDF5 file: " + e.what());
    }
    // What may come back: the floats (bounded as the helper bounds them), names and strings
    // (each within the file's size), and record overhead.
    const Hdf5ReaderLimits limits{image.size() * 1032 + image.size() * 64 + (1u << 20), kChildSeconds};
    const auto bytes = run_hdf5_reader(reader, image, limits, source_);

    namespace snap = hdf5_snapshot;
    std::optional<snap::Reader> in;
    try {
        in.emplace(bytes);
    } catch (const std::runtime_error& e) {
        throw ConfigError(source_ + ": " + reader + " is not the " + kHdf5ReaderName + " of this Thresher (" + e.what() +
                          "): install the two from the same build");
    }
    try {
        for (bool more = true; more;) {
            std::visit(
                [&](auto&& r) {
                    using R = std::decay_t<decltype(r)>;
                    if constexpr (std::is_same_v<R, snap::Group>) {
                        snap_->groups[r.path] = std::move(r.members);
                    } else if constexpr (std::is_same_v<R, snap::Attribute>) {
                        snap_->attributes[{r.path, r.name}] = std::move(r.values);
                    } else if constexpr (std::is_same_v<R, snap::Dataset>) {
                        snap_->datasets[r.path] = Floats{std::move(r.dims), std::move(r.values)};
                    } else if constexpr (std::is_same_v<R, snap::BadDataset>) {
                        snap_->bad[r.path] = std::move(r.problem);
                    } else if constexpr (std::is_same_v<R, snap::BadAttribute>) {
                        snap_->bad_attributes[{r.path, r.name}] = std::move(r.problem);
                    } else if constexpr (std::is_same_v<R, snap::Unreadable>) {
                        throw ConfigError(source_ + ": " + r.problem);
                    } else {
                        static_assert(std::is_same_v<R, snap::End>);
                        more = false;
                    }
                },
                in->next());
        }
    } catch (const std::runtime_error& e) {
        if (dynamic_cast<const ConfigError*>(&e)) throw;
        throw ConfigError(source_ + ": reading the HDF5 file failed (" + e.what() + ")");
    }
}

Hdf5File::~Hdf5File() = default;

void Hdf5File::fail(const std::string& path, const std::string& what) const {
    throw ConfigError(source_ + ": " + (path.empty() ? std::string("/") : path) + ": " + what);
}

bool Hdf5File::exists(const std::string& path) const {
    const auto p = normalise(path);
    return snap_->groups.count(p) || snap_->datasets.count(p) || snap_->bad.count(p);
}

std::vector<std::string> Hdf5File::members(const std::string& path) const {
    const auto it = snap_->groups.find(normalise(path));
    if (it == snap_->groups.end()) fail(path, "is not a group");
    return it->second;
}

std::optional<std::vector<std::string>> Hdf5File::strings(const std::string& path, const std::string& attribute) const {
    const std::pair<std::string, std::string> key{normalise(path), attribute};
    if (const auto bad = snap_->bad_attributes.find(key); bad != snap_->bad_attributes.end())
        fail(path, "attribute \"" + attribute + "\" " + bad->second);
    const auto it = snap_->attributes.find(key);
    if (it == snap_->attributes.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> Hdf5File::string(const std::string& path, const std::string& attribute) const {
    auto v = strings(path, attribute);
    if (!v) return std::nullopt;
    if (v->size() != 1) fail(path, "attribute \"" + attribute + "\" holds " + std::to_string(v->size()) + " strings, expected one");
    return std::move((*v)[0]);
}

Hdf5File::Floats Hdf5File::floats(const std::string& path) const {
    const auto p = normalise(path);
    if (const auto bad = snap_->bad.find(p); bad != snap_->bad.end()) fail(path, bad->second);
    const auto it = snap_->datasets.find(p);
    if (it == snap_->datasets.end()) fail(path, snap_->groups.count(p) ? "is a group, not a dataset" : "no such dataset");
    return it->second;
}

}  // namespace thresher::config
