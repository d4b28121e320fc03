// host.cpp: a C++17 host of the assay C ABI (built and run by tests/c_abi.rs).
//
// usage: host CAPTURE_DIR
//
// Prints the ABI and library versions and the closure verdict of CAPTURE_DIR. Exit status 0 when
// the read succeeded (whatever the verdict), 1 otherwise. Strings returned by the library are
// held by a RAII wrapper that releases them with assay_string_free.
#include "assay.h"

#include <cstdio>
#include <memory>
#include <string>

namespace {

struct StringFree {
  void operator()(char *s) const noexcept { assay_string_free(s); }
};

// Owns a string returned through one of the library's char ** outputs.
using AssayString = std::unique_ptr<char, StringFree>;

// Adapts an AssayString to a char ** output parameter: `call(out.ptr())`, then the string is
// owned by `target` when `out` goes out of scope.
class OutString {
 public:
  explicit OutString(AssayString &target) : target_(target) {}
  ~OutString() { target_.reset(raw_); }
  OutString(const OutString &) = delete;
  OutString &operator=(const OutString &) = delete;
  char **ptr() { return &raw_; }

 private:
  AssayString &target_;
  char *raw_ = nullptr;
};

const char *closure_name(AssayClosure c) {
  switch (c) {
    case ASSAY_CLOSURE_CLOSED:
      return "closed";
    case ASSAY_CLOSURE_INCOMPLETE:
      return "incomplete";
    case ASSAY_CLOSURE_UNKNOWN:
      return "unknown";
  }
  return "?";
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: host CAPTURE_DIR\n");
    return 2;
  }
  std::printf("abi: %u\n", static_cast<unsigned>(assay_abi_version()));
  std::printf("version: %s\n", assay_version());
  if (assay_abi_version() != ASSAY_ABI_VERSION || std::string(assay_version()) != ASSAY_VERSION) {
    std::fprintf(stderr, "header and library versions differ\n");
    return 1;
  }

  AssayClosure closure = ASSAY_CLOSURE_UNKNOWN;
  AssayString verdict;
  AssayStatus status;
  {
    OutString out(verdict);
    status = assay_read_capture(argv[1], &closure, out.ptr());
  }
  if (status != ASSAY_OK) {
    const char *err = assay_last_error();
    std::fprintf(stderr, "assay_read_capture: status %u: %s\n", static_cast<unsigned>(status),
                 err ? err : "(no message)");
    return 1;
  }
  std::printf("verdict: %s\n", verdict ? verdict.get() : "(null)");
  std::printf("closure: %s\n", closure_name(closure));
  return 0;
}
