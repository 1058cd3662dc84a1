// State memory methods: malloc/free, statistics, cache, host scratch, pool.
#include "bindings.h"

namespace hipdnn_ep::python {

void bind_memory(nb::class_<PyState>& cls) {
  // The GIL is released around the allocator calls so that threads really run them concurrently.
  cls.def(
         "malloc",
         [](PyState& self, uint64_t size) {
           hipdnn_ep_state_t* state = self.get();
           void* ptr = nullptr;
           int32_t status;
           {
             nb::gil_scoped_release release;
             status = hipdnn_ep_malloc(state, size, &ptr);
           }
           check(status);
           return reinterpret_cast<uintptr_t>(ptr);
         },
         nb::arg("size"), "Allocates size bytes of device memory; returns the address.")
      .def(
          "free",
          [](PyState& self, uintptr_t ptr) {
            hipdnn_ep_state_t* state = self.get();
            int32_t status;
            {
              nb::gil_scoped_release release;
              status = hipdnn_ep_free(state, reinterpret_cast<void*>(ptr));
            }
            check(status);
          },
          nb::arg("ptr"), "Returns a block from malloc to the cache (NotFoundError if it is not live).")
      .def(
          "memory_stats",
          [](PyState& self) {
            hipdnn_ep_memory_stats_t s{};
            s.struct_size = sizeof s;
            hipdnn_ep_state_t* state = self.get();
            int32_t status;
            {
              nb::gil_scoped_release release;
              status = hipdnn_ep_memory_stats(state, &s);
            }
            check(status);
            nb::dict d;
            d["bytes_in_use"] = s.bytes_in_use;
            d["bytes_reserved"] = s.bytes_reserved;
            d["peak_bytes_in_use"] = s.peak_bytes_in_use;
            d["allocation_count"] = s.allocation_count;
            d["live_allocations"] = s.live_allocations;
            d["memory_limit_bytes"] = s.memory_limit_bytes;
            d["host_scratch_bytes"] = s.host_scratch_bytes;
            d["pool_bytes"] = s.pool_bytes;
            return d;
          },
          "Allocator statistics: bytes in use / reserved / peak, counts, limit, scratch and pool bytes.")
      .def("empty_cache", [](PyState& self) { check(hipdnn_ep_empty_cache(self.get())); },
           "Releases cached blocks that are not in use back to the device.")
      .def(
          "host_scratch",
          [](PyState& self, uint64_t size) {
            void* base = nullptr;
            check(hipdnn_ep_get_host_scratch_base(self.get(), size, &base));
            return reinterpret_cast<uintptr_t>(base);
          },
          nb::arg("size"), "Base address of a host scratch block of at least size bytes (see pointer rules).")
      .def(
          "pool",
          [](PyState& self, uint64_t size) {
            void* base = nullptr;
            check(hipdnn_ep_get_pool_base(self.get(), size, &base));
            return reinterpret_cast<uintptr_t>(base);
          },
          nb::arg("size"), "Base address of the device pool of at least size bytes (see pointer rules).")
      .def(
          "memcpy",
          [](PyState& self, uintptr_t dst, uintptr_t src, uint64_t size, int32_t kind) {
            check(hipdnn_ep_memcpy(self.get(), reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src),
                                   size, kind));
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("size"), nb::arg("kind"),
          "Copies size bytes between addresses; kind is a hipdnn_ep_memcpy_kind value.");
}

}  // namespace hipdnn_ep::python
