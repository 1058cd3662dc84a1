/* A host-memory stand-in for the hipdnn-ep runtime, for the EP's tests only. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hipdnn_ep/runtime_abi.h>

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION HIPDNN_EP_ABI_VERSION
#endif

static _Thread_local char last_error[4096];

static int32_t fail(int32_t status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

struct hipdnn_ep_state { long live; };
struct hipdnn_ep_artifact { void* handle; char* metadata; hipdnn_ep_program_run_fn run; };

uint32_t hipdnn_ep_abi_version(void) { return FAKE_ABI_VERSION; }
const char* hipdnn_ep_last_error(void) { return last_error; }

void hipdnn_ep_state_options_init(hipdnn_ep_state_options_t* o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->backend = HIPDNN_EP_BACKEND_CPU;
  o->alignment = 256;
}

int32_t hipdnn_ep_state_create(const hipdnn_ep_state_options_t* o, hipdnn_ep_state_t** out) {
  if (o && o->backend != HIPDNN_EP_BACKEND_CPU) return fail(HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE, "fake runtime: only the cpu backend");
  *out = calloc(1, sizeof **out);
  return HIPDNN_EP_STATUS_OK;
}

int32_t hipdnn_ep_state_destroy(hipdnn_ep_state_t* s) {
  long live = s->live;
  free(s);
  return live ? fail(HIPDNN_EP_STATUS_LEAK_DETECTED, "fake runtime: %ld live allocations", live) : HIPDNN_EP_STATUS_OK;
}

int32_t hipdnn_ep_synchronize(hipdnn_ep_state_t* s) { (void)s; return HIPDNN_EP_STATUS_OK; }

int32_t hipdnn_ep_malloc(hipdnn_ep_state_t* s, uint64_t size, void** out) {
  if (size == 0) return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "fake runtime: malloc of 0 bytes");
  *out = malloc(size);
  __atomic_add_fetch(&s->live, 1, __ATOMIC_RELAXED);
  return HIPDNN_EP_STATUS_OK;
}

int32_t hipdnn_ep_free(hipdnn_ep_state_t* s, void* p) {
  if (!p) return HIPDNN_EP_STATUS_OK;
  free(p);
  __atomic_sub_fetch(&s->live, 1, __ATOMIC_RELAXED);
  return HIPDNN_EP_STATUS_OK;
}

int32_t hipdnn_ep_memcpy(hipdnn_ep_state_t* s, void* dst, const void* src, uint64_t size, int32_t kind) {
  (void)s; (void)kind;
  memcpy(dst, src, size);
  return HIPDNN_EP_STATUS_OK;
}

int32_t hipdnn_ep_artifact_open(const char* path, hipdnn_ep_artifact_t** out) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return fail(HIPDNN_EP_STATUS_ABI_MISMATCH, "fake runtime: %s", dlerror());
  const char* meta = (const char*)dlsym(h, "hipdnn_fake_metadata");
  if (!meta) { dlclose(h); return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "fake runtime: %s has no metadata", path); }
  hipdnn_ep_artifact_t* a = calloc(1, sizeof *a);
  a->handle = h;
  a->metadata = strdup(meta);
  a->run = (hipdnn_ep_program_run_fn)dlsym(h, HIPDNN_EP_PROGRAM_ENTRY);
  *out = a;
  return HIPDNN_EP_STATUS_OK;
}

const char* hipdnn_ep_artifact_metadata(const hipdnn_ep_artifact_t* a) { return a->metadata; }

int32_t hipdnn_ep_artifact_run(hipdnn_ep_artifact_t* a, hipdnn_ep_state_t* s, const hipdnn_ep_tensor_ref_t* in,
                               hipdnn_ep_tensor_ref_t* out) {
  return a->run(s, in, out);
}

void hipdnn_ep_artifact_close(hipdnn_ep_artifact_t* a) {
  if (!a) return;
  dlclose(a->handle);
  free(a->metadata);
  free(a);
}
