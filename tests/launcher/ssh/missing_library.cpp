// A shared library that the test program needs_missing_library links but that is never installed
// anywhere a loader looks: it stands for an engine dependency a cluster host lacks.
extern "C" int thresher_test_missing_library_answer() { return 42; }
