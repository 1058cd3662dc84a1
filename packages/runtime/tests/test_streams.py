"""Streams and events the caller owns (ABI 1.3): create/destroy, copies on a given stream, events,
and hipdnn_ep_stream_synchronize, which synchronizes the state on one stream when the state's work
is all there. CPU behaviour runs everywhere; the GPU tests need --gpu (they skip without a GPU)."""

from __future__ import annotations

import ctypes

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from hipdnn_ep_runtime import _core

STATUS = rt.abi_manifest()["enums"][0]["values"]
KIND = {"HOST_TO_HOST": 0, "HOST_TO_DEVICE": 1, "DEVICE_TO_HOST": 2, "DEVICE_TO_DEVICE": 3}
u64 = ctypes.c_uint64


class Streams:
    """The stream and event entry points of one state, through ctypes (Python does not wrap them)."""

    def __init__(self, lib: ctypes.CDLL, state: rt.State) -> None:
        self.lib, self.handle = lib, ctypes.c_void_p(state._handle())
        signatures = {
            "hipdnn_ep_stream_create": [ctypes.c_void_p, ctypes.POINTER(u64)],
            "hipdnn_ep_stream_destroy": [ctypes.c_void_p, u64],
            "hipdnn_ep_stream_synchronize": [ctypes.c_void_p, u64],
            "hipdnn_ep_memcpy_on_stream": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, u64, ctypes.c_int32,
                                           u64],
            "hipdnn_ep_event_create": [ctypes.c_void_p, ctypes.POINTER(u64)],
            "hipdnn_ep_event_record": [ctypes.c_void_p, u64, u64],
            "hipdnn_ep_stream_wait_event": [ctypes.c_void_p, u64, u64],
            "hipdnn_ep_event_synchronize": [ctypes.c_void_p, u64],
            "hipdnn_ep_event_destroy": [ctypes.c_void_p, u64],
        }
        for name, args in signatures.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = ctypes.c_int32
        lib.hipdnn_ep_last_error.restype = ctypes.c_char_p

    def call(self, name: str, *args) -> int:
        return getattr(self.lib, f"hipdnn_ep_{name}")(self.handle, *args)

    def ok(self, name: str, *args) -> None:
        status = self.call(name, *args)
        assert status == STATUS["OK"], f"{name}: status {status}: {self.error()}"

    def error(self) -> str:
        return self.lib.hipdnn_ep_last_error().decode()

    def create(self, what: str) -> int:
        out = u64()
        self.ok(f"{what}_create", ctypes.byref(out))
        assert out.value != 0
        return out.value


@pytest.fixture
def streams(runtime_lib: ctypes.CDLL, state: rt.State) -> Streams:
    return Streams(runtime_lib, state)


def test_cpu_streams_and_events_are_logical(streams: Streams) -> None:
    a, b = streams.create("stream"), streams.create("stream")
    e, f = streams.create("event"), streams.create("event")
    assert len({a, b, e, f}) == 4, "fresh ids"
    streams.ok("event_record", e, a)
    streams.ok("stream_wait_event", b, e)
    streams.ok("event_synchronize", e)
    streams.ok("event_synchronize", f)  # never recorded: complete
    streams.ok("stream_synchronize", a)
    for event in (e, f):
        streams.ok("event_destroy", event)
    for stream in (a, b):
        streams.ok("stream_destroy", stream)


def test_invalid_stream_and_event_arguments(runtime_lib: ctypes.CDLL, streams: Streams) -> None:
    assert streams.call("stream_destroy", 0) == STATUS["INVALID_ARGUMENT"]
    assert "stream 0 is the state's own stream" in streams.error()
    for name, args in (("event_record", (0, 0)), ("stream_wait_event", (0, 0)), ("event_synchronize", (0,)),
                       ("event_destroy", (0,))):
        assert streams.call(name, *args) == STATUS["INVALID_ARGUMENT"], name
        assert "must come from hipdnn_ep_event_create" in streams.error()
    assert runtime_lib.hipdnn_ep_stream_create(None, ctypes.byref(u64())) == STATUS["INVALID_ARGUMENT"]
    assert runtime_lib.hipdnn_ep_stream_synchronize(None, 0) == STATUS["INVALID_ARGUMENT"]
    assert streams.call("memcpy_on_stream", None, None, 4, 7, 0) == STATUS["INVALID_ARGUMENT"]
    assert "unknown copy kind 7" in streams.error()
    assert streams.call("memcpy_on_stream", None, None, 4, KIND["HOST_TO_HOST"], 0) == STATUS["INVALID_ARGUMENT"]
    assert "NULL pointer" in streams.error()
    assert streams.call("memcpy_on_stream", None, None, 4, KIND["HOST_TO_HOST"], 2**64 - 1) == \
        STATUS["INVALID_ARGUMENT"]


def test_memcpy_on_stream_leaves_the_current_stream(state: rt.State, streams: Streams) -> None:
    src = ctypes.create_string_buffer(b"on a stream", 16)
    dst = ctypes.create_string_buffer(16)
    state.set_stream(5)
    p = state.malloc(16)
    streams.ok("memcpy_on_stream", p, ctypes.addressof(src), 16, KIND["HOST_TO_DEVICE"], 9)
    streams.ok("memcpy_on_stream", ctypes.addressof(dst), p, 16, KIND["DEVICE_TO_HOST"], 9)
    assert dst.value == b"on a stream"
    state.free(p)
    assert state.malloc(16) == p, "still on stream 5: the block freed there is reused at once"
    state.free(p)


def test_stream_synchronize_on_the_current_stream_synchronizes_the_state(state: rt.State,
                                                                        streams: Streams) -> None:
    s = streams.create("stream")
    state.set_stream(s)
    p = state.malloc(256)
    state.free(p)  # reusable on s only
    streams.ok("stream_synchronize", s)  # all of the state's work was on s
    state.set_stream(7)
    q = state.malloc(256)
    assert q == p, "after the state's synchronization a block freed on s is reusable on every stream"
    state.free(q)
    streams.ok("stream_destroy", s)


def test_stream_synchronize_on_another_stream_only_waits(state: rt.State, streams: Streams) -> None:
    state.set_stream(1)
    p = state.malloc(256)
    state.free(p)
    streams.ok("stream_synchronize", 2)  # not the state's current stream: a wait, not a synchronization
    state.set_stream(2)
    q = state.malloc(256)
    assert q != p, "a block freed on stream 1 must wait for the state's synchronization"
    state.free(q)


def test_stream_synchronize_after_a_stream_change_covers_every_stream(state: rt.State, streams: Streams) -> None:
    # Work on stream 1, then on 2: a wait on 2 alone would not cover 1, so the runtime waits for the
    # device; either way the state is synchronized.
    state.set_stream(1)
    p = state.malloc(256)
    state.free(p)
    state.set_stream(2)
    streams.ok("stream_synchronize", 2)
    state.set_stream(3)
    assert state.malloc(256) == p
    state.free(p)


# ---------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_gpu_streams_events_and_copies(runtime_lib: ctypes.CDLL, gpu_backend: str) -> None:
    """A copy queued on one created stream, made visible to another through an event, read back."""
    with rt.State(backend=gpu_backend) as state:
        st = Streams(runtime_lib, state)
        a, b = st.create("stream"), st.create("stream")
        event = st.create("event")
        data = np.arange(1 << 20, dtype=np.float32)
        nbytes = data.nbytes
        state.set_stream(a)
        x, y, z = state.malloc(nbytes), state.malloc(nbytes), state.malloc(nbytes)
        st.ok("memcpy_on_stream", x, data.ctypes.data, nbytes, KIND["HOST_TO_DEVICE"], a)
        for _ in range(8):  # queued on a, not waited for
            st.ok("memcpy_on_stream", y, x, nbytes, KIND["DEVICE_TO_DEVICE"], a)
        st.ok("event_record", event, a)
        st.ok("stream_wait_event", b, event)  # b's later work follows a's copies
        st.ok("memcpy_on_stream", z, y, nbytes, KIND["DEVICE_TO_DEVICE"], b)
        out = np.zeros_like(data)
        st.ok("memcpy_on_stream", out.ctypes.data, z, nbytes, KIND["DEVICE_TO_HOST"], b)
        np.testing.assert_array_equal(out, data)
        st.ok("event_synchronize", event)
        st.ok("stream_synchronize", a)
        for p in (x, y, z):
            state.free(p)
        st.ok("stream_synchronize", a)  # the state's synchronization (its work is on a)
        state.set_stream(0)
        st.ok("event_destroy", event)
        st.ok("stream_destroy", a)
        st.ok("stream_destroy", b)


@pytest.mark.gpu
def test_gpu_state_on_a_created_stream_runs_kernels(runtime_lib: ctypes.CDLL, gpu_backend: str, dev) -> None:
    """A state set to a created stream runs its kernels there, and synchronizes on it."""
    with rt.State(backend=gpu_backend) as state:
        st = Streams(runtime_lib, state)
        s = st.create("stream")
        state.set_stream(s)
        a = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
        b = np.random.default_rng(1).standard_normal((96, 32)).astype(np.float32)
        out = dev.to_device(np.zeros((64, 32), np.float32))
        _core.call_kernel(state, "hipdnn_ep_kernel_matmul", [dev.to_device(a), dev.to_device(b)], [out], [], [])
        st.ok("stream_synchronize", s)
        np.testing.assert_allclose(dev.to_host(out), a @ b, rtol=1e-4, atol=1e-4)
        state.set_stream(0)
        st.ok("stream_destroy", s)
