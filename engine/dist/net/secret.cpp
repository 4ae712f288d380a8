// Loading, generating and storing the run secret (see secret.h for where it comes from and why
// never from the command line). File checks use fstat on the opened descriptor, so the file that
// was checked is the file that is read.
#include "dist/net/secret.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace thresher::dist {

namespace {

// Owns a POSIX file descriptor (STYLE item 5): closed on every path out.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

private:
    int fd_;
};

// A secret file is a few dozen bytes; anything much larger is not a secret file.
constexpr std::size_t kMaxSecretFileBytes = 64 * 1024;

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Wipes a temporary copy of key material before its memory is released.
struct Wiped {
    std::string text;
    ~Wiped() { OPENSSL_cleanse(text.data(), text.size()); }
};

}  // namespace

Secret::Secret(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {
    if (bytes_.size() < kMinBytes) {
        OPENSSL_cleanse(bytes_.data(), bytes_.size());
        throw Error("run secret: " + std::to_string(bytes_.size()) + " bytes is too short (need at least " +
                    std::to_string(kMinBytes) + ")");
    }
}

Secret& Secret::operator=(Secret other) noexcept {
    bytes_.swap(other.bytes_);
    return *this;
}

Secret::~Secret() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

std::string Secret::to_hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes_.size() * 2);
    for (std::uint8_t b : bytes_) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

Secret parse_secret(std::string_view text, const std::string& what) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    bool hex = !text.empty() && text.size() % 2 == 0;
    for (char c : text) hex = hex && hex_value(c) >= 0;
    std::vector<std::uint8_t> bytes;
    if (hex) {
        bytes.reserve(text.size() / 2);
        for (std::size_t i = 0; i < text.size(); i += 2)
            bytes.push_back(static_cast<std::uint8_t>(hex_value(text[i]) * 16 + hex_value(text[i + 1])));
    } else {
        bytes.assign(text.begin(), text.end());
    }
    if (bytes.size() < Secret::kMinBytes) {
        OPENSSL_cleanse(bytes.data(), bytes.size());
        throw Error(what + ": the secret is " + std::to_string(bytes.size()) + " bytes, need at least " +
                    std::to_string(Secret::kMinBytes) + " (the launcher writes " +
                    std::to_string(Secret::kGeneratedBytes * 2) + " hex digits)");
    }
    return Secret(std::move(bytes));
}

Secret load_secret(const std::string& secret_file) {
    FileDescriptor fd(::open(secret_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0)
        throw Error("secret file " + secret_file + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw Error("secret file " + secret_file + ": cannot stat: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw Error("secret file " + secret_file + " is not a regular file");
    if (st.st_uid != ::geteuid())
        throw Error("secret file " + secret_file + " is owned by uid " + std::to_string(st.st_uid) +
                    ", not by the user running the engine (uid " + std::to_string(::geteuid()) + ")");
    if ((st.st_mode & 077) != 0)
        throw Error("secret file " + secret_file + " has mode " + octal_mode(st.st_mode) +
                    ": group or others may access it; it must be 0600 or stricter (chmod 600 " + secret_file +
                    ")");
    if (static_cast<std::uint64_t>(st.st_size) > kMaxSecretFileBytes)
        throw Error("secret file " + secret_file + " is " + std::to_string(st.st_size) +
                    " bytes; a secret file holds a few dozen");
    Wiped contents;
    contents.text.resize(kMaxSecretFileBytes + 1);
    std::size_t got = 0;
    while (got < contents.text.size()) {
        ssize_t n = ::read(fd.get(), contents.text.data() + got, contents.text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error("secret file " + secret_file + ": cannot read: " + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > kMaxSecretFileBytes) throw Error("secret file " + secret_file + " grew while being read");
    return parse_secret(std::string_view(contents.text.data(), got), "secret file " + secret_file);
}

Secret secret_from_env() {
    const char* value = std::getenv("THRESHER_SECRET");
    if (value == nullptr)
        throw Error("THRESHER_SECRET is not set: a multi-node run needs a secret (--secret-file FILE or "
                    "THRESHER_SECRET)");
    return parse_secret(value, "THRESHER_SECRET");
}

Secret generate_secret() {
    std::vector<std::uint8_t> bytes(Secret::kGeneratedBytes);
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
        throw Error("generate_secret: OpenSSL RAND_bytes failed (no entropy source?)");
    return Secret(std::move(bytes));
}

void write_secret_file(const std::string& path, const Secret& secret) {
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) throw Error("secret file " + path + ": cannot create: " + std::strerror(errno));
    Wiped text{secret.to_hex() + "\n"};
    std::size_t done = 0;
    while (done < text.text.size()) {
        ssize_t n = ::write(fd.get(), text.text.data() + done, text.text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error("secret file " + path + ": cannot write: " + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace thresher::dist
