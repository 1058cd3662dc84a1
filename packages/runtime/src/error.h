// Thread-local last-error message behind hipdnn_ep_last_error().
#pragma once

#include "runtime_internal.h"

// Shorthand for the argument checks C entry points start with.
#define HIPDNN_EP_REQUIRE(cond, status, message)                     \
  do {                                                               \
    if (!(cond)) return ::hipdnn_ep::set_error((status), (message)); \
  } while (0)
