#include "config/hdf5_file.h"

#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"

namespace thresher::nn {

namespace {

// ---------------------------------------------------------------- the snapshot's encoding
// Records, host byte order (the same machine writes and reads them):
//   'G' path, u32 n, n names          a group and its members (hard links)
//   'A' path, name, u32 n, n strings  a string attribute
//   'D' path, u32 rank, rank u64 dims, u64 n, n floats
//   'X' path, message                 a dataset that could not be read as floats
//   'Y' path, name, message           an attribute that could not be read as strings
//   'F' message                       the file could not be opened
//   'Z'                               the end (a snapshot without it is incomplete)
// Strings are u32 length + bytes; paths have no leading slash, "" is the root.

struct Out {
    std::vector<std::uint8_t> b;
    template <class T>
    void put(T v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
    }
    void str(const std::string& s) {
        put(static_cast<std::uint32_t>(s.size()));
        b.insert(b.end(), s.begin(), s.end());
    }
};

class In {
public:
    explicit In(const std::vector<std::uint8_t>& b) : b_(b) {}
    bool done() const { return at_ == b_.size(); }
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
    void floats(std::vector<float>& v, std::uint64_t n) {
        if (n > (b_.size() - at_) / sizeof(float)) throw std::runtime_error("snapshot: truncated dataset");
        v.resize(static_cast<std::size_t>(n));
        std::memcpy(v.data(), b_.data() + at_, v.size() * sizeof(float));
        at_ += v.size() * sizeof(float);
    }

private:
    void need(std::size_t n) const {
        if (n > b_.size() - at_) throw std::runtime_error("snapshot: truncated");
    }
    const std::vector<std::uint8_t>& b_;
    std::size_t at_ = 0;
};

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

// ---------------------------------------------------------------- the child: libhdf5 walks the file

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
    Walker(hid_t file, std::uint64_t image_size, Out& out)
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
            std::vector<std::string> names;
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
                names.push_back(std::move(name));
            }
            out_.put('G');
            out_.str(path);
            out_.put(static_cast<std::uint32_t>(names.size()));
            for (const auto& n : names) out_.str(n);
            for (const auto& n : names) object(path.empty() ? n : path + "/" + n, depth + 1);
        }
    }

private:
    static herr_t on_attribute(hid_t obj, const char* name, const H5A_info_t*, void* self) {
        auto* w = static_cast<Walker*>(self);
        w->attribute(obj, name);
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
        out_.put('Y');
        out_.str(path_);
        out_.str(name);
        out_.str(problem);
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
        std::vector<std::string> values;
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
        out_.put('A');
        out_.str(path_);
        out_.str(name);
        out_.put(static_cast<std::uint32_t>(values.size()));
        for (const auto& v : values) out_.str(v);
        return true;
    }
    void error(const std::string& path, const std::string& what) {
        out_.put('X');
        out_.str(path);
        out_.str(what);
    }
    void dataset(hid_t d, const std::string& path) {
        Type type(H5Dget_type(d));
        Space space(H5Dget_space(d));
        if (!type || !space) return error(path, "cannot read the dataset's type or shape");
        if (H5Tget_class(type.get()) != H5T_FLOAT) return error(path, "is not a floating-point dataset");
        const int rank = H5Sget_simple_extent_ndims(space.get());
        if (rank < 0 || rank > 8) return error(path, "has rank " + std::to_string(rank) + " (at most 8 is read)");
        hsize_t dims[8] = {};
        if (H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0) return error(path, "cannot read the dataset's shape");
        std::uint64_t count = 1;
        for (int i = 0; i < rank; ++i) {
            // Keras stores weights uncompressed; compressed chunks expand at most ~1032:1 (deflate).
            if (dims[i] != 0 && count > values_left_ / dims[i])
                return error(path, "declares more values than a " + std::to_string(image_size_) + "-byte file can hold");
            count *= dims[i];
        }
        values_left_ -= count;
        std::vector<float> data(static_cast<std::size_t>(count));
        if (count && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
            return error(path, "cannot read the dataset's values (truncated or corrupt file)");
        out_.put('D');
        out_.str(path);
        out_.put(static_cast<std::uint32_t>(rank));
        for (int i = 0; i < rank; ++i) out_.put(static_cast<std::uint64_t>(dims[i]));
        out_.put(static_cast<std::uint64_t>(count));
        const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
        out_.b.insert(out_.b.end(), p, p + data.size() * sizeof(float));
    }

    hid_t file_;
    std::uint64_t image_size_, values_left_;
    std::size_t objects_ = 0;
    std::set<haddr_t> seen_;
    std::string path_;
    Out& out_;
};

Out snapshot_in_child(std::span<const std::uint8_t> image) {
    Out out;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // we report failures ourselves
    Plist fapl(H5Pcreate(H5P_FILE_ACCESS));
    if (!fapl || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
        H5Pset_file_image(fapl.get(), const_cast<std::uint8_t*>(image.data()), image.size()) < 0) {
        out.put('F');
        out.str("cannot prepare to read the HDF5 file");
        out.put('Z');
        return out;
    }
    // The core driver refuses a name that exists on disk ("file already exists"), so the image
    // gets one that never can (nothing can be created under /proc/self).
    File file(H5Fopen("/proc/self/thresher-hdf5-image", H5F_ACC_RDONLY, fapl.get()));
    if (!file) {
        out.put('F');
        out.str("not a readable HDF5 file (truncated or corrupt)");
    } else {
        Walker(file.get(), image.size(), out).object("", 0);
    }
    out.put('Z');
    return out;
}

// In the child: libhdf5 allocates what a damaged header says (fuzzing saw 3.4e15-byte requests).
// Cap the child's address space at what it has plus room for this file (the image copy, the
// floats and the snapshot, each about the file's size, plus 2 GiB), so such a request fails in
// the child instead of reaching the machine's memory. Not under AddressSanitizer, whose shadow
// mappings an address-space limit would break.
#if defined(__SANITIZE_ADDRESS__)
#define THRESHER_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define THRESHER_UNDER_ASAN 1
#endif
#endif

void limit_child_memory(std::uint64_t image_size) {
#ifdef THRESHER_UNDER_ASAN
    (void)image_size;
#else
    std::uint64_t pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        unsigned long long v = 0;
        if (std::fscanf(f, "%llu", &v) == 1) pages = v;
        std::fclose(f);
    }
    const std::uint64_t have = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto cap = static_cast<rlim_t>(have + (std::uint64_t{2} << 30) + 16 * image_size);
    const rlimit r{cap, cap};
    ::setrlimit(RLIMIT_AS, &r);
#endif
}

bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
    while (n) {
        const ssize_t k = ::write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
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
    int fds[2];
    if (::pipe(fds) != 0) throw ConfigError(source_ + ": cannot start reading the HDF5 file: " + std::strerror(errno));
    const pid_t child = ::fork();
    if (child < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw ConfigError(source_ + ": cannot start reading the HDF5 file: " + std::strerror(errno));
    }
    if (child == 0) {
        ::close(fds[0]);
        // A crash in here is libhdf5's on a damaged file, and the parent reports it (signal N):
        // the default action, not a handler inherited from the parent. A sanitizer's or a fuzzer's
        // handler would report the child's death as a finding of the whole process (libFuzzer
        // wrote a crash file for every damaged .h5 that made libhdf5 fault).
        for (const int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(s, SIG_DFL);
        limit_child_memory(image.size());
        int status = 0;
        try {
            const Out out = snapshot_in_child(image);
            status = write_all(fds[1], out.b.data(), out.b.size()) ? 0 : 3;
        } catch (...) {
            status = 4;
        }
        ::_exit(status);  // no atexit handlers, no second flush of the parent's buffers
    }
    ::close(fds[1]);
    // What may come back: the floats (bounded as the child bounds them), names and strings
    // (each within the file's size), and record overhead.
    const std::uint64_t limit = image.size() * 1032 + image.size() * 64 + (1u << 20);
    std::vector<std::uint8_t> bytes;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds);
    std::string problem;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            problem = "libhdf5 took longer than " + std::to_string(kChildSeconds) + " s reading it";
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        std::uint8_t buf[65536];
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (bytes.size() + static_cast<std::size_t>(n) > limit) {
            problem = "libhdf5 returned more than the file can hold";
            break;
        }
        bytes.insert(bytes.end(), buf, buf + n);
    }
    ::close(fds[0]);
    if (!problem.empty()) ::kill(child, SIGKILL);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!problem.empty()) throw ConfigError(source_ + ": " + problem + ": the file is damaged or not one Thresher can read");
    if (WIFSIGNALED(status))
        throw ConfigError(source_ + ": libhdf5 crashed reading the file (signal " + std::to_string(WTERMSIG(status)) +
                          "): it is damaged or not an HDF5 file Thresher can read");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw ConfigError(source_ + ": libhdf5 could not read the file (exit " + std::to_string(WEXITSTATUS(status)) + ")");

    try {
        In in(bytes);
        for (;;) {
            const char kind = in.get<char>();
            if (kind == 'Z') break;
            if (kind == 'F') throw ConfigError(source_ + ": " + in.str());
            const std::string path = in.str();
            if (kind == 'G') {
                auto& names = snap_->groups[path];
                for (auto n = in.get<std::uint32_t>(); n > 0; --n) names.push_back(in.str());
            } else if (kind == 'A') {
                const std::string name = in.str();
                auto& values = snap_->attributes[{path, name}];
                for (auto n = in.get<std::uint32_t>(); n > 0; --n) values.push_back(in.str());
            } else if (kind == 'D') {
                Floats f;
                const auto rank = in.get<std::uint32_t>();
                if (rank > 8) throw std::runtime_error("snapshot: bad rank");
                for (std::uint32_t i = 0; i < rank; ++i) f.dims.push_back(in.get<std::uint64_t>());
                in.floats(f.data, in.get<std::uint64_t>());
                snap_->datasets[path] = std::move(f);
            } else if (kind == 'X') {
                snap_->bad[path] = in.str();
            } else if (kind == 'Y') {
                const std::string name = in.str();
                snap_->bad_attributes[{path, name}] = in.str();
            } else {
                throw std::runtime_error("snapshot: unknown record");
            }
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

}  // namespace thresher::nn
