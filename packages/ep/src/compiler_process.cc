#include "compiler_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "launcher_thread.h"

namespace hipdnn_ep {
namespace {

std::string Tail(const std::string& s, size_t n = 4000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

// How a process ended, from its wait status.
std::string Ended(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

// Waits until `fd` is ready for `events` or the deadline passes.
bool Wait(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let the read/write report it
  }
}

}  // namespace

CompilerProcess::~CompilerProcess() {
  Stop();
  if (err_ >= 0) close(err_);
}

std::string CompilerProcess::Request(const std::string& line, int64_t timeout_s, const std::string& where,
                                     const std::function<void(const std::string&)>& notice) {
  for (int attempt = 0;; ++attempt) {
    const bool fresh = !Alive();
    if (fresh) {
      Start(where);
      if (!ended_.empty() && notice) {
        notice("hipdnn-ep: the compiler process " + ended_ + "; a new one (pid " + std::to_string(pid_) +
               ") takes over");
      }
      ended_.clear();
    }
    try {
      return Exchange(line, timeout_s, where, fresh);
    } catch (const Died& e) {
      if (fresh && attempt > 0) {
        throw EpError(std::string(e.what()) + "\nIt was the second compiler process to end during this request " +
                      "(the first one " + first_end_ + "), so the request itself seems to break the compiler: " +
                      "please report it with the model.");
      }
      if (fresh) throw;
      first_end_ = ended_;
    }
  }
}

// `fresh`: the process was started for this request, so what it wrote to
// stderr while starting (an import that failed, say) belongs to the answer.
std::string CompilerProcess::Exchange(const std::string& line, int64_t timeout_s, const std::string& where,
                                      bool fresh) {
  const off_t err_start = fresh ? 0 : ErrOffset();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(std::min<int64_t>(timeout_s, int64_t{1} << 32));
  std::string out = line + "\n";
  size_t written = 0;
  bool broken = false;
  while (written < out.size() && !broken) {
    if (!Wait(in_, POLLOUT, deadline)) TimedOut(timeout_s, where, err_start);
    ssize_t n = write(in_, out.data() + written, out.size() - written);
    if (n > 0) written += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR && errno != EAGAIN) broken = true;  // EPIPE: it died
  }
  size_t newline;
  while (!broken && (newline = buffered_.find('\n')) == std::string::npos) {
    if (!Wait(out_, POLLIN, deadline)) TimedOut(timeout_s, where, err_start);
    char buf[65536];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n > 0) buffered_.append(buf, static_cast<size_t>(n));
    else if (n == 0 || (errno != EINTR && errno != EAGAIN)) broken = true;
  }
  if (broken) {
    const std::string partial = buffered_;
    const pid_t pid = pid_;
    const int code = Stop();
    ended_ = "(pid " + std::to_string(pid) + ") " +
             (code > 128 ? "was killed by signal " + std::to_string(code - 128)
                         : "exited with code " + std::to_string(code)) +
             " during a request";
    throw Died(where + " exited with code " + std::to_string(code) + " without a valid JSON response.\nstderr:\n" +
               ErrTail(err_start) + (partial.empty() ? "" : "\nstdout:\n" + Tail(partial)));
  }
  std::string response = buffered_.substr(0, newline);
  buffered_.erase(0, newline + 1);
  return response;
}

std::string CompilerProcess::ErrTail(off_t from) const {
  if (err_ < 0) return {};
  std::string s;
  char buf[65536];
  for (off_t at = from;;) {
    ssize_t n = pread(err_, buf, sizeof buf, at);
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return Tail(s);
}

off_t CompilerProcess::ErrOffset() const { return err_ < 0 ? 0 : lseek(err_, 0, SEEK_END); }

bool CompilerProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) ended_ = "(pid " + std::to_string(pid_) + ") " + Ended(status) + " while idle";
  pid_ = -1;  // reaped: it exited between requests
  Close();
  return false;
}

void CompilerProcess::Start(const std::string& where) {
  Close();
  if (err_ >= 0) close(err_);
  err_ = -1;
  buffered_.clear();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC)) throw EpError(std::string("hipdnn-ep: pipe failed: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC)) {
    const int e = errno;
    close(in[0]);
    close(in[1]);
    throw EpError(std::string("hipdnn-ep: pipe failed: ") + std::strerror(e));
  }
  // Its stderr goes to an unlinked temporary file, read back only to
  // explain a failure.
  const char* tmpdir = getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/hipdnn-ep-compiler-stderr-XXXXXX";
  err_ = mkostemp(tmpl.data(), O_CLOEXEC);
  if (err_ >= 0) unlink(tmpl.c_str());
  ChildSpec spec;
  spec.argv = {python_, "-m", "hipdnn_ep_compiler.protocol", "--serve"};
  spec.stdin_fd = in[0];
  spec.stdout_fd = out[1];
  spec.stderr_fd = err_;
  int error = 0;
  const pid_t pid = LaunchChild(spec, &error);
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    throw EpError("hipdnn-ep: cannot start the compiler with '" + python_ + "': " + std::strerror(error) + " (" +
                  where + ")");
  }
  pid_ = pid;
  in_ = in[1];
  out_ = out[0];
  // A process that dies while we write must not kill us with SIGPIPE:
  // writes to its pipe then fail with EPIPE instead.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] {
    struct sigaction old {};
    sigaction(SIGPIPE, nullptr, &old);
    if (old.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

// Kills and reaps the process; returns its exit code (128 + signal).
int CompilerProcess::Stop() {
  int code = -1;
  if (pid_ > 0) {
    if (in_ >= 0) {
      close(in_);
      in_ = -1;
    }
    int status = 0;
    // Give it a moment to exit on EOF before killing it.
    for (int i = 0; i < 20; ++i) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno != EINTR) break;
      if (i == 19) {
        kill(pid_, SIGKILL);
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      usleep(5000);
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    pid_ = -1;
  }
  Close();
  return code;
}

void CompilerProcess::Close() {
  for (int* fd : {&in_, &out_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void CompilerProcess::TimedOut(int64_t timeout_s, const std::string& where, off_t err_start) {
  const std::string err = ErrTail(err_start);
  if (pid_ > 0) kill(pid_, SIGKILL);
  Stop();
  throw CompilerTimeout(where + " did not answer within " + std::to_string(timeout_s) +
                        " s and was stopped. Raise the EP option compile_timeout (seconds) if the graph needs longer." +
                        (err.empty() ? "" : "\nstderr:\n" + err));
}

}  // namespace hipdnn_ep
