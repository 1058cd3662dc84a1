// State memory methods: malloc/free, statistics, cache, host scratch, pool,
// and DLPack views of the state's memory.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "bindings.h"

namespace hipdnn_ep::python {
namespace {

// What State.view returns: memory of a state described for DLPack consumers.
// Each __dlpack__ call hands out a new capsule (a capsule is consumed once).
struct TensorView {
  nb::object owner;  // the State: alive while the view is
  void* data;
  std::vector<size_t> shape;
  nb::dlpack::dtype dtype;
  int32_t device_type;
  int32_t device_id;
};

}  // namespace

void bind_tensor_view(nb::module_& m) {
  nb::class_<TensorView>(m, "TensorView",
                         "A view of a State's memory for DLPack consumers (torch/cupy/numpy .from_dlpack).")
      .def(
          "__dlpack__",
          [](const TensorView& v, nb::kwargs) {
            return nb::ndarray<>(v.data, v.shape.size(), v.shape.data(), v.owner, nullptr, v.dtype, v.device_type,
                                 v.device_id);
          },
          "A DLPack capsule of the memory (the stream argument is ignored: synchronize the State first).")
      .def("__dlpack_device__", [](const TensorView& v) { return nb::make_tuple(v.device_type, v.device_id); })
      .def_prop_ro("shape", [](const TensorView& v) {
        nb::list out;
        for (size_t d : v.shape) out.append(d);
        return nb::tuple(out);
      })
      .def_prop_ro("ptr", [](const TensorView& v) { return reinterpret_cast<uintptr_t>(v.data); });
}

void bind_device_memory(nb::module_& m) {
  m.def(
      "device_memory_stats",
      [](const std::string& backend, int32_t device) {
        hipdnn_ep_device_memory_stats_t s{};
        s.struct_size = sizeof s;
        check(hipdnn_ep_device_memory_stats(backend_code(backend), device, &s));
        nb::dict d;
        d["bytes_in_use"] = s.bytes_in_use;
        d["peak_bytes_in_use"] = s.peak_bytes_in_use;
        d["bytes_reserved"] = s.bytes_reserved;
        d["peak_bytes_reserved"] = s.peak_bytes_reserved;
        d["states"] = s.states;
        return d;
      },
      nb::arg("backend") = "cpu", nb::arg("device") = 0,
      "Device memory of one device across every state of this process (an EP's too, when it loaded this "
      "runtime library): bytes in use and reserved by the states' allocators, now and at most at once, and "
      "the states open on it.");
}

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
          "view",
          [](nb::handle self_obj, uintptr_t ptr, const std::vector<size_t>& shape, const std::string& dtype) {
            PyState& self = nb::cast<PyState&>(self_obj);
            self.get();  // raises if closed
            const nb::dlpack::dtype dt = dlpack_dtype(dtype);
            const int32_t device_type = self.backend == HIPDNN_EP_BACKEND_CPU    ? nb::device::cpu::value
                                        : self.backend == HIPDNN_EP_BACKEND_CUDA ? nb::device::cuda::value
                                                                                  : nb::device::rocm::value;
            const int32_t device_id = self.backend == HIPDNN_EP_BACKEND_CPU ? 0 : self.device;
            // The State is the view's owner: it stays alive while a view does (the block does not).
            return TensorView{nb::borrow<nb::object>(self_obj), reinterpret_cast<void*>(ptr), shape, dt, device_type,
                              device_id};
          },
          nb::arg("ptr"), nb::arg("shape"), nb::arg("dtype"),
          "A C-contiguous view of `shape` elements of `dtype` (numpy name) at ptr in this state's memory\n"
          "(device memory on a GPU state), exported through DLPack: torch.from_dlpack, cupy.from_dlpack and\n"
          "numpy.from_dlpack (cpu states) share the memory without a copy. The view keeps the State alive but\n"
          "not the block: free it only once the consumer is done; synchronize() before reading what kernels wrote.")
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
