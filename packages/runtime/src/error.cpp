#include "error.h"

#include <utility>

namespace hipdnn_ep {
namespace {
thread_local std::string last_error;
}  // namespace

int32_t set_error(int32_t status, std::string message) {
  last_error = std::move(message);
  return status;
}

}  // namespace hipdnn_ep

extern "C" const char* hipdnn_ep_last_error(void) { return hipdnn_ep::last_error.c_str(); }
