#include "config/zip_archive.h"

#include <zip.h>

#include "core/error.h"

namespace thresher::config {

namespace {

struct SourceFree {
    void operator()(zip_source_t* s) const { zip_source_free(s); }
};
struct FileClose {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

}  // namespace

void ZipArchive::Closer::operator()(zip* z) const { zip_discard(z); }

bool looks_like_zip(std::span<const std::uint8_t> b) {
    return b.size() >= 4 && b[0] == 'P' && b[1] == 'K' &&
           ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6));
}

ZipArchive::ZipArchive(std::span<const std::uint8_t> bytes, std::string source) : source_(std::move(source)) {
    zip_error_t error;
    zip_error_init(&error);
    std::unique_ptr<zip_source_t, SourceFree> src(zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error));
    if (!src) {
        const std::string msg = zip_error_strerror(&error);
        zip_error_fini(&error);
        throw ConfigError(source_ + ": cannot read as a zip archive: " + msg);
    }
    // ZIP_CHECKCONS: also cross-check the central directory against the local headers.
    zip_ = std::unique_ptr<zip, Closer>(zip_open_from_source(src.get(), ZIP_RDONLY | ZIP_CHECKCONS, &error));
    if (!zip_) {
        const std::string msg = zip_error_strerror(&error);
        zip_error_fini(&error);
        throw ConfigError(source_ + ": not a readable zip archive: " + msg);
    }
    src.release();  // the archive owns the source now
    zip_error_fini(&error);
}

ZipArchive::~ZipArchive() = default;

std::vector<std::string> ZipArchive::names() const {
    std::vector<std::string> out;
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    for (zip_int64_t i = 0; i < n; ++i)
        if (const char* name = zip_get_name(zip_.get(), static_cast<zip_uint64_t>(i), 0)) out.emplace_back(name);
    return out;
}

bool ZipArchive::contains(const std::string& name) const { return zip_name_locate(zip_.get(), name.c_str(), 0) >= 0; }

std::optional<std::vector<std::uint8_t>> ZipArchive::read(const std::string& name) const {
    const zip_int64_t index = zip_name_locate(zip_.get(), name.c_str(), 0);
    if (index < 0) return std::nullopt;
    const std::string where = source_ + ": " + name;
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(index), 0, &st) != 0)
        throw ConfigError(where + ": cannot read the entry's header: " + zip_strerror(zip_.get()));
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE))
        throw ConfigError(where + ": the entry's header gives no size");
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
        throw ConfigError(where + ": encrypted entries are not supported");
    // Deflate expands at most 1032:1; anything claiming more is lying (or a bomb).
    const std::uint64_t bound = std::min<std::uint64_t>(kMaxEntryBytes, st.comp_size * 1032 + 1024);
    if (st.size > bound)
        throw ConfigError(where + ": declares " + std::to_string(st.size) + " bytes from " + std::to_string(st.comp_size) +
                          " stored bytes: more than " + std::to_string(bound) + " is refused");
    std::unique_ptr<zip_file_t, FileClose> f(zip_fopen_index(zip_.get(), static_cast<zip_uint64_t>(index), 0));
    if (!f) throw ConfigError(where + ": cannot open the entry: " + zip_strerror(zip_.get()));
    std::vector<std::uint8_t> out(static_cast<std::size_t>(st.size));
    std::size_t got = 0;
    while (got < out.size()) {
        const zip_int64_t n = zip_fread(f.get(), out.data() + got, out.size() - got);
        if (n < 0) throw ConfigError(where + ": cannot read the entry (truncated or corrupt): " + zip_file_strerror(f.get()));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got != out.size())
        throw ConfigError(where + ": truncated: " + std::to_string(got) + " of " + std::to_string(out.size()) + " bytes");
    // One more read reaches the end of the stream, where libzip compares the CRC.
    std::uint8_t extra = 0;
    if (zip_fread(f.get(), &extra, 1) != 0)
        throw ConfigError(where + ": longer than its header says, or its checksum does not match: " + zip_file_strerror(f.get()));
    return out;
}

}  // namespace thresher::config
