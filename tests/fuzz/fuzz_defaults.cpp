// Linked into every fuzzer: libFuzzer's default -max_len is 4096 bytes without a corpus, which
// hides whatever only large inputs reach (400 KB of nested JSON overflowed the stack, and the
// fuzzers never saw it). Unless the command line sets -max_len, inputs go up to 1 MiB.
// ASan's defaults come from CMake (THRESHER_FUZZ_ASAN_OPTIONS, tests/fuzz/CMakeLists.txt): the
// suppressions file for libhdf5's own overflow, and per fuzzer a shorter allocation stack where
// storing stacks is the fuzzer's cost. ASAN_OPTIONS on the command line still overrides them.
#include <cstring>
#include <vector>

namespace {
char kMaxLen[] = "-max_len=1048576";
std::vector<char*> g_args;
}  // namespace

extern "C" const char* __asan_default_options() { return THRESHER_FUZZ_ASAN_OPTIONS; }

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    for (int i = 1; i < *argc; ++i)
        if (std::strncmp((*argv)[i], "-max_len=", 9) == 0) return 0;
    // libFuzzer parses the flags after this returns, from the argv we leave.
    g_args.assign(*argv, *argv + *argc);
    g_args.insert(g_args.begin() + 1, kMaxLen);
    g_args.push_back(nullptr);
    *argc += 1;
    *argv = g_args.data();
    return 0;
}
