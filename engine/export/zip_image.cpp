// libzip writing into a buffer source, then the buffer read back (zip_image.h).
#include "export/zip_image.h"

#include <zip.h>

#include <memory>

#include "export/model_export.h"

namespace thresher::model_export {

namespace {

struct ArchiveDiscard {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct SourceFree {
    void operator()(zip_source_t* s) const { zip_source_free(s); }
};

}  // namespace

std::string zip_bytes(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& what) {
    const auto fail = [&](const std::string& step, const char* why) -> std::string {
        throw ExportError(what + ": libzip could not " + step + ": " + (why ? why : "unknown error"));
    };
    zip_error_t error;
    zip_error_init(&error);
    std::unique_ptr<zip_source_t, SourceFree> buffer(zip_source_buffer_create(nullptr, 0, 0, &error));
    if (!buffer) fail("create a buffer", zip_error_strerror(&error));
    std::unique_ptr<zip_t, ArchiveDiscard> archive(zip_open_from_source(buffer.get(), ZIP_TRUNCATE, &error));
    if (!archive) fail("open an archive in memory", zip_error_strerror(&error));
    zip_source_keep(buffer.get());  // the archive frees its source on close; the bytes are read after
    for (const auto& [name, bytes] : entries) {
        zip_source_t* src = zip_source_buffer(archive.get(), bytes.data(), bytes.size(), 0);
        if (!src) fail("add " + name, zip_strerror(archive.get()));
        const zip_int64_t index = zip_file_add(archive.get(), name.c_str(), src, ZIP_FL_ENC_UTF_8);
        if (index < 0) {
            zip_source_free(src);
            fail("add " + name, zip_strerror(archive.get()));
        }
        if (zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0)
            fail("store " + name, zip_strerror(archive.get()));
    }
    if (zip_close(archive.get()) != 0) fail("write the archive", zip_strerror(archive.get()));
    archive.release();  // closed: zip_close freed it

    zip_source_t* src = buffer.get();
    if (zip_source_open(src) != 0) fail("reopen the archive's bytes", zip_error_strerror(zip_source_error(src)));
    std::string out;
    char chunk[1 << 16];
    for (;;) {
        const zip_int64_t n = zip_source_read(src, chunk, sizeof chunk);
        if (n < 0) {
            zip_source_close(src);
            fail("read the archive's bytes", zip_error_strerror(zip_source_error(src)));
        }
        if (n == 0) break;
        out.append(chunk, static_cast<std::size_t>(n));
    }
    zip_source_close(src);
    zip_error_fini(&error);
    return out;
}

}  // namespace thresher::model_export
