#include "config/hdf5_file.h"

#include <hdf5.h>

#include <cstring>
#include <sstream>

#include "core/error.h"

namespace thresher::nn {

namespace {

// One owner per handle kind, closed with the matching H5?close.
template <herr_t (*Close)(hid_t)>
class Handle {
public:
    explicit Handle(hid_t id = -1) : id_(id) {}
    ~Handle() {
        if (id_ >= 0) Close(id_);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    hid_t get() const { return id_; }
    explicit operator bool() const { return id_ >= 0; }

private:
    hid_t id_;
};
using Plist = Handle<H5Pclose>;
using Object = Handle<H5Oclose>;
using Attribute = Handle<H5Aclose>;
using Type = Handle<H5Tclose>;
using Space = Handle<H5Sclose>;
using Dataset = Handle<H5Dclose>;

// libhdf5 prints its error stack to stderr by default; we report failures ourselves.
void silence() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> parts;
    std::string cur;
    for (char c : path) {
        if (c == '/') {
            if (!cur.empty()) parts.push_back(std::move(cur));
            cur.clear();
        } else {
            cur.push_back(c);
        }
    }
    if (!cur.empty()) parts.push_back(std::move(cur));
    return parts;
}

}  // namespace

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
    : source_(std::move(source)), image_size_(image.size()) {
    silence();
    if (!looks_like_hdf5(image)) throw ConfigError(source_ + ": not an HDF5 file (no HDF5 signature at its start)");
    Plist fapl(H5Pcreate(H5P_FILE_ACCESS));
    if (!fapl || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
        H5Pset_file_image(fapl.get(), const_cast<std::uint8_t*>(image.data()), image.size()) < 0)
        throw ConfigError(source_ + ": cannot prepare to read the HDF5 file");
    // The core driver refuses a name that exists on disk ("file already exists"), so the image
    // gets one that never can (nothing can be created under /proc/self).
    file_ = H5Fopen("/proc/self/thresher-hdf5-image", H5F_ACC_RDONLY, fapl.get());
    if (file_ < 0) throw ConfigError(source_ + ": not a readable HDF5 file (truncated or corrupt)");
}

Hdf5File::~Hdf5File() {
    if (file_ >= 0) H5Fclose(file_);
}

void Hdf5File::fail(const std::string& path, const std::string& what) const {
    throw ConfigError(source_ + ": " + (path.empty() ? std::string("/") : path) + ": " + what);
}

bool Hdf5File::exists(const std::string& path) const {
    std::string at;
    for (const auto& part : split(path)) {
        at += (at.empty() ? "" : "/") + part;
        if (H5Lexists(file_, at.c_str(), H5P_DEFAULT) <= 0) return false;
        if (H5Oexists_by_name(file_, at.c_str(), H5P_DEFAULT) <= 0) return false;
    }
    return true;
}

std::vector<std::string> Hdf5File::members(const std::string& path) const {
    const std::string at = path.empty() ? "/" : path;
    H5G_info_t info;
    if (H5Gget_info_by_name(file_, at.c_str(), &info, H5P_DEFAULT) < 0) fail(path, "is not a group");
    std::vector<std::string> out;
    // Each member costs at least a link message in the file: more members than bytes is a lie.
    if (info.nlinks > image_size_) fail(path, "declares " + std::to_string(info.nlinks) + " members");
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        const ssize_t n = H5Lget_name_by_idx(file_, at.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
        if (n < 0 || static_cast<std::uint64_t>(n) > image_size_) fail(path, "cannot read the name of member " + std::to_string(i));
        std::string name(static_cast<std::size_t>(n) + 1, '\0');
        if (H5Lget_name_by_idx(file_, at.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
            fail(path, "cannot read the name of member " + std::to_string(i));
        name.resize(static_cast<std::size_t>(n));
        out.push_back(std::move(name));
    }
    return out;
}

std::optional<std::vector<std::string>> Hdf5File::strings(const std::string& path, const std::string& attribute) const {
    const std::string at = path.empty() ? "/" : path;
    if (!path.empty() && !exists(path)) return std::nullopt;
    if (H5Aexists_by_name(file_, at.c_str(), attribute.c_str(), H5P_DEFAULT) <= 0) return std::nullopt;
    const std::string what = "attribute \"" + attribute + "\"";
    Attribute attr(H5Aopen_by_name(file_, at.c_str(), attribute.c_str(), H5P_DEFAULT, H5P_DEFAULT));
    if (!attr) fail(path, "cannot open " + what);
    Type type(H5Aget_type(attr.get()));
    Space space(H5Aget_space(attr.get()));
    if (!type || !space) fail(path, "cannot read " + what);
    if (H5Tget_class(type.get()) != H5T_STRING) fail(path, what + " is not a string");
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    if (count < 0 || static_cast<std::uint64_t>(count) > image_size_) fail(path, what + ": bad number of elements");
    std::vector<std::string> out;
    const auto n = static_cast<std::size_t>(count);
    if (H5Tis_variable_str(type.get()) > 0) {
        Type mem(H5Tcopy(H5T_C_S1));
        if (!mem || H5Tset_size(mem.get(), H5T_VARIABLE) < 0) fail(path, "cannot read " + what);
        std::vector<char*> ptrs(n, nullptr);
        if (H5Aread(attr.get(), mem.get(), ptrs.data()) < 0) fail(path, "cannot read " + what);
        for (char* p : ptrs) out.emplace_back(p ? p : "");
        H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
        return out;
    }
    const std::size_t size = H5Tget_size(type.get());
    // A fixed-length string attribute's bytes are in the file: bound them by its size.
    if (size == 0 || (n && size > image_size_ / n)) fail(path, what + ": declares more bytes than the file holds");
    Type mem(H5Tcopy(H5T_C_S1));
    if (!mem || H5Tset_size(mem.get(), size) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLPAD) < 0)
        fail(path, "cannot read " + what);
    std::vector<char> buf(n * size);
    if (H5Aread(attr.get(), mem.get(), buf.data()) < 0) fail(path, "cannot read " + what);
    for (std::size_t i = 0; i < n; ++i) {
        const char* p = buf.data() + i * size;
        out.emplace_back(p, strnlen(p, size));
    }
    return out;
}

std::optional<std::string> Hdf5File::string(const std::string& path, const std::string& attribute) const {
    auto v = strings(path, attribute);
    if (!v) return std::nullopt;
    if (v->size() != 1) fail(path, "attribute \"" + attribute + "\" holds " + std::to_string(v->size()) + " strings, expected one");
    return std::move((*v)[0]);
}

Hdf5File::Floats Hdf5File::floats(const std::string& path) const {
    if (!exists(path)) fail(path, "no such dataset");
    Dataset d(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
    if (!d) fail(path, "is not a dataset");
    Type type(H5Dget_type(d.get()));
    Space space(H5Dget_space(d.get()));
    if (!type || !space) fail(path, "cannot read the dataset's type or shape");
    if (H5Tget_class(type.get()) != H5T_FLOAT) fail(path, "is not a floating-point dataset");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 8) fail(path, "has rank " + std::to_string(rank) + " (at most 8 is read)");
    hsize_t dims[8] = {};
    if (H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0) fail(path, "cannot read the dataset's shape");
    Floats f;
    std::uint64_t count = 1;
    // Keras stores weights uncompressed; compressed chunks expand at most ~1032:1 (deflate).
    const std::uint64_t bound = image_size_ * 1032 / 4 + 1024;
    for (int i = 0; i < rank; ++i) {
        f.dims.push_back(dims[i]);
        if (dims[i] != 0 && count > bound / dims[i])
            fail(path, "shape " + f.dims_str() + "... declares more values than a " + std::to_string(image_size_) + "-byte file can hold");
        count *= dims[i];
    }
    f.data.resize(static_cast<std::size_t>(count));
    if (count && H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f.data.data()) < 0)
        fail(path, "cannot read the dataset's values (truncated or corrupt file)");
    return f;
}

}  // namespace thresher::nn
