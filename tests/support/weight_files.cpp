#include "weight_files.h"

#include <hdf5.h>
#include <zip.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace test_support {

void JavaOut::be(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void JavaOut::utf(const std::string& s) {
    be(s.size(), 2);
    b.insert(b.end(), s.begin(), s.end());
}
void JavaOut::f32(float v) { be(std::bit_cast<std::uint32_t>(v), 4); }
void JavaOut::f64(double v) { be(std::bit_cast<std::uint64_t>(v), 8); }

Bytes nd4j_row(const std::vector<float>& v, bool legacy, bool doubles) {
    JavaOut o;
    const auto n = static_cast<std::int64_t>(v.size());
    // [rank, shape, stride, offset/extras, element-wise stride, order 'c']
    const std::int64_t info[] = {2, 1, n, n, 1, 0, 1, 'c'};
    o.utf(legacy ? "HEAP" : "LONG_SHAPE");
    o.be(8, legacy ? 4 : 8);
    o.utf(legacy ? "INT" : "LONG");
    for (auto x : info) o.be(static_cast<std::uint64_t>(x), legacy ? 4 : 8);
    o.utf(legacy ? "HEAP" : "MIXED_DATA_TYPES");
    o.be(static_cast<std::uint64_t>(n), legacy ? 4 : 8);
    o.utf(doubles ? "DOUBLE" : "FLOAT");
    for (float x : v) doubles ? o.f64(x) : o.f32(x);
    return o.b;
}

void write_zip(const std::string& path, const std::vector<std::pair<std::string, Bytes>>& entries) {
    int err = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!z) throw std::runtime_error(path + ": zip_open failed (" + std::to_string(err) + ")");
    for (const auto& [name, data] : entries) {
        zip_source_t* s = zip_source_buffer(z, data.data(), data.size(), 0);
        if (!s || zip_file_add(z, name.c_str(), s, ZIP_FL_OVERWRITE) < 0) {
            if (s) zip_source_free(s);
            zip_discard(z);
            throw std::runtime_error(path + ": cannot add " + name);
        }
    }
    if (zip_close(z) != 0) {
        const std::string msg = zip_strerror(z);
        zip_discard(z);
        throw std::runtime_error(path + ": zip_close: " + msg);
    }
}

Bytes read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return nlohmann::json::parse(in);
}
Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

H5Writer::H5Writer(const std::string& path) {
    file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file_ < 0) throw std::runtime_error(path + ": H5Fcreate failed");
    lcpl_ = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl_, 1);
}
H5Writer::~H5Writer() {
    H5Pclose(lcpl_);
    H5Fclose(file_);
}
void H5Writer::group(const std::string& path) {
    if (path == "/") return;
    H5Gclose(H5Gcreate2(file_, path.c_str(), lcpl_, H5P_DEFAULT, H5P_DEFAULT));
}
void H5Writer::dataset(const std::string& path, const std::vector<unsigned long long>& dims, const std::vector<float>& v) {
    const std::vector<hsize_t> d(dims.begin(), dims.end());
    hid_t space = H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr);
    hid_t set = H5Dcreate2(file_, path.c_str(), H5T_IEEE_F32LE, space, lcpl_, H5P_DEFAULT, H5P_DEFAULT);
    if (set < 0) throw std::runtime_error(path + ": H5Dcreate2 failed");
    H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(set);
    H5Sclose(space);
}
void H5Writer::keras_layer(const std::string& group_path, const std::string& layer, const std::vector<Variable>& variables) {
    group(group_path);
    std::vector<std::string> names;
    for (const auto& [name, v] : variables) {
        names.push_back(layer + "/" + name + ":0");
        dataset(group_path + "/" + layer + "/" + name + ":0", v.first, v.second);
    }
    strings(group_path, "weight_names", names, false);
}

void H5Writer::strings(const std::string& object, const std::string& name, const std::vector<std::string>& values, bool scalar,
                       bool variable) {
    if (variable) {
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, H5T_VARIABLE);
        H5Tset_cset(type, H5T_CSET_UTF8);
        const hsize_t n = values.size();
        hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
        std::vector<const char*> ptrs;
        for (const auto& v : values) ptrs.push_back(v.c_str());
        write_attribute(object, name, type, space, ptrs.data());
        return;
    }
    std::size_t len = 1;
    for (const auto& s : values) len = std::max(len, s.size());
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, len);
    const hsize_t n = values.size();
    hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
    std::vector<char> buf(values.size() * len, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buf.begin() + static_cast<std::ptrdiff_t>(i * len));
    write_attribute(object, name, type, space, buf.data());
}

void H5Writer::write_attribute(const std::string& object, const std::string& name, long long type, long long space,
                               const void* data) {
    hid_t obj = H5Oopen(file_, object.c_str(), H5P_DEFAULT);
    hid_t a = H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, type, data);
    H5Aclose(a);
    H5Oclose(obj);
    H5Sclose(space);
    H5Tclose(type);
}

void H5Writer::empty_floats(const std::string& object, const std::string& name) {
    const hsize_t n = 0;
    hid_t space = H5Screate_simple(1, &n, nullptr);
    hid_t obj = H5Oopen(file_, object.c_str(), H5P_DEFAULT);
    hid_t a = H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Aclose(a);
    H5Oclose(obj);
    H5Sclose(space);
}

}  // namespace test_support
