// An executable whose loader fails: it needs libthresher_test_missing.so, which it cannot find
// (no RPATH; the library stays in the build tree). test_ssh_launcher puts it on a "host" in place
// of thresher-engine to see SshLauncher refuse a host that lacks an engine dependency.
extern "C" int thresher_test_missing_library_answer();

int main() { return thresher_test_missing_library_answer() == 42 ? 0 : 1; }
