// Writing a file so that a crash, a power cut or a second writer never leaves it half written,
// empty, or written through someone else's symlink.
//
// write_file_durably(path, bytes):
//   1. creates a fresh temporary file beside `path` (same folder, so the rename is atomic) with a
//      random name, O_CREAT|O_EXCL: it never opens an existing file or follows a symlink, and two
//      writers of the same path never share a temporary;
//   2. writes every byte, fsyncs the file, closes it (close errors count: NFS reports them there);
//   3. renames it over `path` (a symlink at `path` is replaced, not followed) and fsyncs the
//      folder, so the new name survives a power cut too.
// On any failure the temporary is removed and an Error names `path` and the failing step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace thresher {

void write_file_durably(const std::string& path, std::string_view bytes);

// zlib's CRC-32 over every byte: zlib's crc32() takes a 32-bit length, so a buffer of 4 GiB or
// more must not be passed to it in one call (the length would wrap and the tail go unchecked).
// `crc` continues a running value (a file read in pieces); 0 starts one.
std::uint32_t crc32_of(const void* data, std::size_t size, std::uint32_t crc = 0);

}  // namespace thresher
