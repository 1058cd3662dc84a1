// One thread of the plugin that lives as long as the process: it starts
// the compiler processes, and runs periodic housekeeping (reaping idle ones).
//
// A child started with PR_SET_PDEATHSIG is signalled when the *thread* that
// started it ends, not the process; ONNX Runtime may create sessions from
// short-lived threads, so children are started from this thread instead.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace hipdnn_ep {

// How a child is started: `argv[0]` is looked up on PATH when it has no
// slash; its stdin, stdout and stderr are the given descriptors; it runs in
// "/" with an empty signal mask, and is killed (SIGKILL) when this process
// ends, however it ends.
struct ChildSpec {
  std::vector<std::string> argv;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // stderr_fd < 0: inherited
};

// Starts the child from the launcher thread and returns its pid; on failure
// returns -1 and sets *error to the errno value (ENOENT: not found, ...).
pid_t LaunchChild(const ChildSpec& spec, int* error);

// Has `fn` run on the launcher thread about every `period_s` seconds, for
// the life of the process.
void EveryFewSeconds(std::function<void()> fn, int period_s);

}  // namespace hipdnn_ep
