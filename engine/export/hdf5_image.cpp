#include "export/hdf5_image.h"

#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <utility>

#include "export/model_export.h"

namespace thresher::model_export {

static_assert(std::is_same_v<hid_t, std::int64_t>, "hdf5_image.h keeps libhdf5 ids as int64_t");

namespace {

// One libhdf5 id, closed by its own close function whatever happens.
class Id {
public:
    Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    ~Id() {
        if (id_ >= 0) close_(id_);
    }
    Id(const Id&) = delete;
    Id& operator=(const Id&) = delete;
    hid_t get() const { return id_; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

}  // namespace

// Status to exception at one place, naming the call and the object.
void Hdf5Image::check(std::int64_t status, const char* call, const std::string& object) const {
    if (status < 0) throw ExportError(what_ + ": libhdf5's " + call + " failed for " + object);
}

Hdf5Image::Hdf5Image(std::string what) : what_(std::move(what)) {
    // Failures become ExportErrors; libhdf5's own printing of its error stack would only add noise.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    Id access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    check(access.get(), "H5Pcreate", "the file access properties");
    // In memory only (no backing store), growing 1 MiB at a time.
    check(H5Pset_fapl_core(access.get(), 1 << 20, 0), "H5Pset_fapl_core", "the file access properties");
    // The earliest file format, as h5py writes by default. (Not 1.8's: libhdf5 1.10 takes the image of
    // a file with a version 2 superblock without updating its checksum, and readers refuse it.)
    // An attribute then holds at most 64 KiB, as in the files Keras 2 writes.
    // libhdf5 treats two open core files of one name as one file: each image gets its own.
    static std::atomic<unsigned> count{0};
    const std::string name = "thresher-export-" + std::to_string(count++) + ".h5";
    file_ = H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
    check(file_, "H5Fcreate", "an in-memory file");
    link_props_ = H5Pcreate(H5P_LINK_CREATE);
    if (link_props_ < 0 || H5Pset_create_intermediate_group(link_props_, 1) < 0) {
        if (link_props_ >= 0) H5Pclose(link_props_);
        H5Fclose(file_);
        throw ExportError(what_ + ": libhdf5's H5Pcreate failed for the link creation properties");
    }
}

Hdf5Image::~Hdf5Image() {
    if (link_props_ >= 0) H5Pclose(link_props_);
    if (file_ >= 0) H5Fclose(file_);
}

void Hdf5Image::group(const std::string& path) {
    Id g(H5Gcreate2(file_, path.c_str(), link_props_, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    check(g.get(), "H5Gcreate2", "group " + path);
}

void Hdf5Image::floats(const std::string& path, const std::vector<std::uint64_t>& dims, const std::vector<float>& values) {
    const std::vector<hsize_t> d(dims.begin(), dims.end());
    Id space(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose);
    check(space.get(), "H5Screate_simple", "dataset " + path);
    // Little-endian float32 in the file, as numpy writes float32 on every machine Keras runs on.
    Id set(H5Dcreate2(file_, path.c_str(), H5T_IEEE_F32LE, space.get(), link_props_, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    check(set.get(), "H5Dcreate2", "dataset " + path);
    if (!values.empty())
        check(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "H5Dwrite",
                          "dataset " + path);
}

void Hdf5Image::attribute(const std::string& object, const std::string& name, std::int64_t type, std::int64_t space,
                          const void* data) {
    const std::string what = "attribute " + name + " of " + object;
    Id obj(H5Oopen(file_, object.c_str(), H5P_DEFAULT), H5Oclose);
    check(obj.get(), "H5Oopen", what);
    Id a(H5Acreate2(obj.get(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check(a.get(), "H5Acreate2", what);
    if (data) check(H5Awrite(a.get(), type, data), "H5Awrite", what);
}

void Hdf5Image::string_attribute(const std::string& object, const std::string& name, const std::string& value) {
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    check(type.get(), "H5Tcopy", "attribute " + name);
    check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)), "H5Tset_size", "attribute " + name);
    check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "H5Tset_strpad", "attribute " + name);
    Id space(H5Screate(H5S_SCALAR), H5Sclose);
    check(space.get(), "H5Screate", "attribute " + name);
    std::string padded = value;
    padded.resize(std::max<std::size_t>(value.size(), 1), '\0');
    attribute(object, name, type.get(), space.get(), padded.data());
}

void Hdf5Image::strings_attribute(const std::string& object, const std::string& name, const std::vector<std::string>& values,
                                  std::size_t width) {
    const hsize_t n = values.size();
    Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    check(space.get(), "H5Screate_simple", "attribute " + name);
    if (values.empty()) {
        attribute(object, name, H5T_IEEE_F64LE, space.get(), nullptr);
        return;
    }
    for (const auto& v : values) width = std::max(width, v.size());
    width = std::max<std::size_t>(width, 1);
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    check(type.get(), "H5Tcopy", "attribute " + name);
    check(H5Tset_size(type.get(), width), "H5Tset_size", "attribute " + name);
    check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "H5Tset_strpad", "attribute " + name);
    std::string buffer(values.size() * width, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buffer.begin() + static_cast<std::ptrdiff_t>(i * width));
    attribute(object, name, type.get(), space.get(), buffer.data());
}

std::string Hdf5Image::finish() {
    check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "H5Fflush", "the file");
    const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
    check(size, "H5Fget_file_image", "the file");
    std::string bytes(static_cast<std::size_t>(size), '\0');
    check(H5Fget_file_image(file_, bytes.data(), bytes.size()), "H5Fget_file_image", "the file");
    H5Pclose(std::exchange(link_props_, -1));
    check(H5Fclose(std::exchange(file_, -1)), "H5Fclose", "the file");
    return bytes;
}

}  // namespace thresher::model_export
