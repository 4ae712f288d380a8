// libhdf5's side of the snapshot: the walk the forked child used to do, unchanged in what it
// reads and bounds; only the records go through hdf5_snapshot::Writer.
#include "hdf5_reader/walker.h"

#include <hdf5.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace thresher::hdf5_reader {

namespace {

namespace snap = hdf5_snapshot;

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
using File = Handle<H5Fclose>;

class Walker {
public:
    Walker(hid_t file, std::uint64_t image_size, snap::Writer& out)
        : file_(file), image_size_(image_size), values_left_(image_size * 1032 / 4 + 1024), out_(out) {}

    void object(const std::string& path, int depth) {
        if (depth > 32 || ++objects_ > 100000) return;
        Object obj(H5Oopen(file_, path.empty() ? "/" : path.c_str(), H5P_DEFAULT));
        if (!obj) return;
        H5O_info_t info;
        if (H5Oget_info2(obj.get(), &info, H5O_INFO_BASIC) < 0) return;
        if (!seen_.insert(info.addr).second) return;  // a hard link back up the tree
        attributes(obj.get(), path);
        if (info.type == H5O_TYPE_DATASET) {
            dataset(obj.get(), path);
        } else if (info.type == H5O_TYPE_GROUP) {
            H5G_info_t g;
            if (H5Gget_info(obj.get(), &g) < 0 || g.nlinks > image_size_) return;
            snap::Group group{path, {}};
            for (hsize_t i = 0; i < g.nlinks; ++i) {
                const ssize_t n = H5Lget_name_by_idx(obj.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
                if (n <= 0 || static_cast<std::uint64_t>(n) > image_size_) continue;
                std::string name(static_cast<std::size_t>(n) + 1, '\0');
                if (H5Lget_name_by_idx(obj.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0) continue;
                name.resize(static_cast<std::size_t>(n));
                H5L_info_t link;
                // Only hard links: a soft link may dangle, an external one names another file.
                if (name.find('/') != std::string::npos || name == "." ||
                    H5Lget_info(obj.get(), name.c_str(), &link, H5P_DEFAULT) < 0 || link.type != H5L_TYPE_HARD)
                    continue;
                group.members.push_back(std::move(name));
            }
            out_.write(group);
            for (const auto& n : group.members) object(path.empty() ? n : path + "/" + n, depth + 1);
        }
    }

private:
    static herr_t on_attribute(hid_t obj, const char* name, const H5A_info_t*, void* self) {
        static_cast<Walker*>(self)->attribute(obj, name);
        return 0;
    }
    void attributes(hid_t obj, const std::string& path) {
        path_ = path;
        hsize_t idx = 0;
        H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, &Walker::on_attribute, this);
    }
    void attribute(hid_t obj, const char* name) {
        // Whatever cannot be read is recorded, so the importer names it instead of calling it absent.
        std::string problem = "cannot be read";
        if (read_attribute(obj, name, problem)) return;
        out_.write(snap::BadAttribute{path_, name, problem});
    }
    bool read_attribute(hid_t obj, const char* name, std::string& problem) {
        Attribute attr(H5Aopen(obj, name, H5P_DEFAULT));
        if (!attr) return false;
        Type type(H5Aget_type(attr.get()));
        Space space(H5Aget_space(attr.get()));
        if (!type || !space) return false;
        const hssize_t count = H5Sget_simple_extent_npoints(space.get());
        if (count < 0 || static_cast<std::uint64_t>(count) > image_size_) return false;
        // Keras writes a layer without weights as weight_names = np.asarray([]): an empty float
        // array, which is an empty list of names.
        if (H5Tget_class(type.get()) != H5T_STRING && count != 0) {
            problem = "is not a string";
            return false;
        }
        const auto n = static_cast<std::size_t>(count);
        snap::Attribute record{path_, name, {}};
        auto& values = record.values;
        if (n == 0) {
        } else if (H5Tis_variable_str(type.get()) > 0) {
            // The same character set as the file's (h5py writes a str as UTF-8, bytes as ASCII):
            // libhdf5 does not convert between them.
            Type mem(H5Tcopy(H5T_C_S1));
            if (!mem || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 || H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0) return false;
            std::vector<char*> ptrs(n, nullptr);
            if (H5Aread(attr.get(), mem.get(), ptrs.data()) < 0) return false;
            for (char* p : ptrs) values.emplace_back(p ? std::string(p, strnlen(p, image_size_)) : std::string());
            H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
        } else {
            const std::size_t size = H5Tget_size(type.get());
            // A fixed-length string attribute's bytes are in the file: bound them by its size.
            if (size == 0 || (n && size > image_size_ / n)) {
                problem = "declares more bytes than the file holds";
                return false;
            }
            Type mem(H5Tcopy(H5T_C_S1));
            if (!mem || H5Tset_size(mem.get(), size) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLPAD) < 0 ||
                H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
                return false;
            std::vector<char> buf(n * size);
            if (H5Aread(attr.get(), mem.get(), buf.data()) < 0) return false;
            for (std::size_t i = 0; i < n; ++i) values.emplace_back(buf.data() + i * size, strnlen(buf.data() + i * size, size));
        }
        out_.write(record);
        return true;
    }
    void error(const std::string& path, const std::string& what) { out_.write(snap::BadDataset{path, what}); }
    void dataset(hid_t d, const std::string& path) {
        Type type(H5Dget_type(d));
        Space space(H5Dget_space(d));
        if (!type || !space) return error(path, "cannot read the dataset's type or shape");
        if (H5Tget_class(type.get()) != H5T_FLOAT) return error(path, "is not a floating-point dataset");
        const int rank = H5Sget_simple_extent_ndims(space.get());
        if (rank < 0 || rank > static_cast<int>(snap::kMaxRank))
            return error(path, "has rank " + std::to_string(rank) + " (at most " + std::to_string(snap::kMaxRank) + " is read)");
        hsize_t dims[snap::kMaxRank] = {};
        if (H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0) return error(path, "cannot read the dataset's shape");
        std::uint64_t count = 1;
        for (int i = 0; i < rank; ++i) {
            // Keras stores weights uncompressed; compressed chunks expand at most ~1032:1 (deflate).
            if (dims[i] != 0 && count > values_left_ / dims[i])
                return error(path, "declares more values than a " + std::to_string(image_size_) + "-byte file can hold");
            count *= dims[i];
        }
        values_left_ -= count;
        snap::Dataset record{path, std::vector<std::uint64_t>(dims, dims + rank), std::vector<float>(static_cast<std::size_t>(count))};
        if (count && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, record.values.data()) < 0)
            return error(path, "cannot read the dataset's values (truncated or corrupt file)");
        out_.write(record);
    }

    hid_t file_;
    std::uint64_t image_size_, values_left_;
    std::size_t objects_ = 0;
    std::set<haddr_t> seen_;
    std::string path_;
    snap::Writer& out_;
};

}  // namespace

void snapshot_image(std::span<const std::uint8_t> image, snap::Writer& out) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // we report failures ourselves
    Plist fapl(H5Pcreate(H5P_FILE_ACCESS));
    if (!fapl || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
        H5Pset_file_image(fapl.get(), const_cast<std::uint8_t*>(image.data()), image.size()) < 0) {
        out.write(snap::Unreadable{"cannot prepare to read the HDF5 file"});
        out.write(snap::End{});
        return;
    }
    {
        // The core driver refuses a name that exists on disk ("file already exists"), so the
        // image gets one that never can (nothing can be created under /proc/self).
        File file(H5Fopen("/proc/self/thresher-hdf5-image", H5F_ACC_RDONLY, fapl.get()));
        if (!file) out.write(snap::Unreadable{"not a readable HDF5 file (truncated or corrupt)"});
        else Walker(file.get(), image.size(), out).object("", 0);
    }
    out.write(snap::End{});
}

}  // namespace thresher::hdf5_reader
