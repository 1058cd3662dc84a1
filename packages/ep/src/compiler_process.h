// One compiler process (`PYTHON -m hipdnn_ep_compiler.protocol --serve`):
// one JSON request line in, one response line out.  Started on first use
// and again after it died; killed when a request runs past its timeout.
// Not thread safe: CompilerPool hands each process to one caller at a time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ep_utils.h"

namespace hipdnn_ep {

// A request that did not answer within its timeout (the process was
// killed).  Not a verdict on the compiler or the graph: a later request with
// a longer timeout may succeed, so nothing remembers it.
struct CompilerTimeout : EpError {
  using EpError::EpError;
};

class CompilerProcess {
 public:
  explicit CompilerProcess(std::string python) : python_(std::move(python)) {}
  ~CompilerProcess();
  CompilerProcess(const CompilerProcess&) = delete;
  CompilerProcess& operator=(const CompilerProcess&) = delete;

  // Sends one request line and returns the response line; starts the
  // process when it is not running (first use, or after it died or was
  // stopped).  A process that died while idle or during this request is
  // replaced and the request, which has no effect until answered, sent
  // again once.  Throws CompilerTimeout past `timeout_s`, EpError with
  // what went wrong and the process's stderr otherwise.  `notice`, when
  // set, hears of a process that ended on its own and was replaced.
  std::string Request(const std::string& line, int64_t timeout_s, const std::string& where,
                      const std::function<void(const std::string&)>& notice);

  // Stops the process after a reply that cannot be trusted (not JSON: the
  // two sides no longer agree where a message starts); the next request
  // starts a new one.
  void Discard() { Stop(); }

  // The stderr the process wrote since offset `from` (its tail), and the
  // offset it has reached.
  std::string ErrTail(off_t from) const;
  off_t ErrOffset() const;

  // Whether a process is running now (it may have ended unnoticed).
  bool Started() const { return pid_ > 0; }

 private:
  // Thrown when the process was gone before answering; Request may retry.
  struct Died : EpError {
    using EpError::EpError;
  };

  std::string Exchange(const std::string& line, int64_t timeout_s, const std::string& where, bool fresh);
  bool Alive();
  void Start(const std::string& where);
  int Stop();
  void Close();
  [[noreturn]] void TimedOut(int64_t timeout_s, const std::string& where, off_t err_start);

  std::string python_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string buffered_;
  // How the last process ended when it ended on its own ("" when it did
  // not, or once its successor was announced), and how the first of two
  // processes ended that both failed one request.
  std::string ended_, first_end_;
};

}  // namespace hipdnn_ep
