// JPEG through libjpeg-turbo's libjpeg API. Its default error handler prints and calls exit(),
// so an error manager longjmps back here instead (error_exit) and the message becomes a
// DataError after jpeg_destroy_decompress. Between setjmp and a longjmp only libjpeg's C frames
// run, so no C++ destructor is skipped: every C++ object that owns memory is declared before
// setjmp and touched only through plain pointers in between.
//
// Warnings count as errors, except "extraneous bytes before marker" (common in camera files,
// harmless): libjpeg reports a truncated file only as a warning and fills the missing rows with
// grey, which would train on images that are not there.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <string>

#include <jerror.h>
#include <jpeglib.h>

#include "core/error.h"
#include "data/image/decoders.h"

namespace thresher::data::decoders {

namespace {

// Progressive files may hold many scans, each a full pass over the coefficients; thousands of
// tiny scans make a small file take minutes (libjpeg-turbo's djpeg -maxscans guards the same).
constexpr int kMaxScans = 1000;

struct ErrorManager {
    jpeg_error_mgr pub;  // first: libjpeg hands back a jpeg_error_mgr*
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    if (cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
    on_error(cinfo);
}

void on_progress(j_common_ptr cinfo) {
    auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (d->input_scan_number > kMaxScans) {
        auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
        std::snprintf(err->message, sizeof err->message, "more than %d progressive scans", kMaxScans);
        std::longjmp(err->jump, 1);
    }
}

}  // namespace

Image decode_jpeg(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits& limits) {
    jpeg_decompress_struct cinfo{};
    ErrorManager err{};
    jpeg_progress_mgr progress{};
    Image out;                      // allocated below only after the size check
    std::string refusal;            // set when our own check refuses the header
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    progress.progress_monitor = on_progress;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        throw DataError(name + ": JPEG: " + err.message);
    }
    jpeg_create_decompress(&cinfo);
    cinfo.progress = &progress;
    jpeg_mem_src(&cinfo, bytes, static_cast<unsigned long>(size));
    jpeg_read_header(&cinfo, TRUE);
    try {
        check_image_size(name, "JPEG", cinfo.image_width, cinfo.image_height, limits);
    } catch (const DataError& e) {
        refusal = e.what();
    }
    if (!refusal.empty()) {
        jpeg_destroy_decompress(&cinfo);
        throw DataError(refusal);
    }
    const bool grey = cinfo.num_components == 1;
    cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;  // CMYK files fail here, named
    jpeg_start_decompress(&cinfo);
    out.width = static_cast<int>(cinfo.output_width);
    out.height = static_cast<int>(cinfo.output_height);
    out.channels = cinfo.output_components;
    // resize() may throw bad_alloc; it runs outside libjpeg, so the state is destroyed first.
    try {
        out.pixels.resize(out.size());
    } catch (...) {
        jpeg_destroy_decompress(&cinfo);
        throw;
    }
    const std::size_t stride = static_cast<std::size_t>(out.width) * out.channels;
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = out.pixels.data() + cinfo.output_scanline * stride;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return out;
}

}  // namespace thresher::data::decoders
