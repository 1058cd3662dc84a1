#include "compile_client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ep_utils.h"
#include "runtime_api.h"

extern char** environ;

namespace hipdnn_ep {
namespace {

std::string Tail(const std::string& s, size_t n = 4000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

// How a process ended, from its wait status.
std::string Ended(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}


// A compiler process answering requests, one JSON line each way
// (`PYTHON -m hipdnn_ep_compiler.protocol --serve`), kept for the life of
// this process and shared by every session that uses the same interpreter:
// starting Python and importing the compiler costs seconds, a request
// milliseconds.  Its stderr goes to an unlinked temporary file, read back
// only to explain a failure.
class CompilerServer {
 public:
  explicit CompilerServer(std::string python) : python_(std::move(python)) {}
  ~CompilerServer() { Stop(); }

  // Sends one request line and returns the response line; starts the
  // process when it is not running (first use, or after it died or was
  // stopped).  Throws with what went wrong and the process's stderr.
  // `notice`, when set, hears of a process that ended on its own and was
  // replaced.
  std::string Request(const std::string& line, int64_t timeout_s, const std::string& where,
                      const std::function<void(const std::string&)>& notice) {
    std::lock_guard<std::mutex> lock(mu_);
    // A process that died (killed, out of memory) while idle or during this
    // request is replaced, and the request, which has no effect until
    // answered, is sent again once.
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

 private:
  // Thrown when the process was gone before answering; Request may retry.
  struct Died : EpError {
    using EpError::EpError;
  };

  // `fresh`: the process was started for this request, so what it wrote to
  // stderr while starting (an import that failed, say) belongs to the answer.
  std::string Exchange(const std::string& line, int64_t timeout_s, const std::string& where, bool fresh) {
    const off_t err_start = fresh ? 0 : lseek(err_, 0, SEEK_END);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(std::min<int64_t>(timeout_s, int64_t{1} << 32));
    std::string out = line + "\n";
    size_t written = 0;
    bool broken = false;
    while (written < out.size() && !broken) {
      if (!Wait(in_, POLLOUT, deadline)) return TimedOut(timeout_s, where, err_start);
      ssize_t n = write(in_, out.data() + written, out.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      else if (n < 0 && errno != EINTR && errno != EAGAIN) broken = true;  // EPIPE: it died
    }
    size_t newline;
    while (!broken && (newline = buffered_.find('\n')) == std::string::npos) {
      if (!Wait(out_, POLLIN, deadline)) return TimedOut(timeout_s, where, err_start);
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
               (code > 128 ? "was killed by signal " + std::to_string(code - 128) : "exited with code " + std::to_string(code)) +
               " during a request";
      throw Died(where + " exited with code " + std::to_string(code) + " without a valid JSON response.\nstderr:\n" +
                    ErrTail(err_start) + (partial.empty() ? "" : "\nstdout:\n" + Tail(partial)));
    }
    std::string response = buffered_.substr(0, newline);
    buffered_.erase(0, newline + 1);
    return response;
  }

 public:
  // Stops the process after a reply that cannot be trusted (not JSON: the
  // two sides no longer agree where a message starts); the next request
  // starts a new one.
  void Discard() {
    std::lock_guard<std::mutex> lock(mu_);
    Stop();
  }

  // The stderr the process wrote since offset `from`.
  std::string ErrTail(off_t from) const {
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

  off_t ErrOffset() const { return err_ < 0 ? 0 : lseek(err_, 0, SEEK_END); }

 private:
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    if (r == pid_) ended_ = "(pid " + std::to_string(pid_) + ") " + Ended(status) + " while idle";
    pid_ = -1;  // reaped: it exited between requests
    Close();
    return false;
  }

  void Start(const std::string& where) {
    Close();
    buffered_.clear();
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
      throw EpError(std::string("hipdnn-ep: pipe failed: ") + std::strerror(errno));
    }
    const char* tmpdir = getenv("TMPDIR");
    std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/hipdnn-ep-compiler-stderr-XXXXXX";
    err_ = mkostemp(tmpl.data(), O_CLOEXEC);
    if (err_ >= 0) unlink(tmpl.c_str());
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (err_ >= 0) posix_spawn_file_actions_adddup2(&fa, err_, 2);
    // `python -m` puts the working directory first on sys.path: run from "/"
    // so that a folder named like the compiler in the user's cwd cannot shadow it.
    posix_spawn_file_actions_addchdir_np(&fa, "/");
    std::vector<std::string> args = {python_, "-m", "hipdnn_ep_compiler.protocol", "--serve"};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      throw EpError("hipdnn-ep: cannot start the compiler with '" + python_ + "': " + std::strerror(rc) + " (" +
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
  int Stop() {
    int code = -1;
    if (pid_ > 0) {
      if (in_ >= 0) { close(in_); in_ = -1; }
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

  void Close() {
    for (int* fd : {&in_, &out_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }

  // Waits until `fd` is ready for `events` or the deadline passes.
  static bool Wait(int fd, short events, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd, events, 0};
      int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return true;  // let the read/write report it
    }
  }

  std::string TimedOut(int64_t timeout_s, const std::string& where, off_t err_start) {
    const std::string err = ErrTail(err_start);
    if (pid_ > 0) kill(pid_, SIGKILL);
    Stop();
    throw EpError(where + " did not answer within " + std::to_string(timeout_s) +
                  " s and was stopped. Raise the EP option compile_timeout (seconds) if the graph needs longer." +
                  (err.empty() ? "" : "\nstderr:\n" + err));
  }

  std::string python_;
  std::mutex mu_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string buffered_;
  // How the last process ended when it ended on its own ("" when it did
  // not, or once its successor was announced), and how the first of two
  // processes ended that both failed one request.
  std::string ended_, first_end_;
};

// One server per interpreter for the whole process (never destroyed: at
// exit the pipes close and each server ends on EOF).  At most kMaxServers
// run at once; starting another stops the least recently used idle one.
constexpr size_t kMaxServers = 4;

std::shared_ptr<CompilerServer> ServerFor(const std::string& python) {
  static std::mutex mu;
  static auto* servers = new std::map<std::string, std::pair<std::shared_ptr<CompilerServer>, uint64_t>>();
  static uint64_t clock = 0;
  std::lock_guard<std::mutex> lock(mu);
  auto it = servers->find(python);
  if (it != servers->end()) {
    it->second.second = ++clock;
    return it->second.first;
  }
  while (servers->size() >= kMaxServers) {
    auto oldest = servers->end();
    for (auto s = servers->begin(); s != servers->end(); ++s) {
      if (s->second.first.use_count() == 1 && (oldest == servers->end() || s->second.second < oldest->second.second)) {
        oldest = s;
      }
    }
    if (oldest == servers->end()) break;  // all busy: run one more for now
    servers->erase(oldest);               // its destructor stops the process
  }
  auto server = std::make_shared<CompilerServer>(python);
  (*servers)[python] = {server, ++clock};
  return server;
}

// True when this process is a Python interpreter (the symbol is found in the
// executable or a library it loaded, and the interpreter is running).
bool HostIsPython() {
  using IsInit = int (*)();
  auto fn = reinterpret_cast<IsInit>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  return fn != nullptr && fn() != 0;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

// The path the host interpreter was started as (argv[0], looked up on PATH
// when it has no slash, as Python itself does for sys.executable), if it is
// the same file as /proc/self/exe.  Unlike /proc/self/exe it keeps a virtual
// environment's bin/python symlink, and with it the environment's packages.
std::string InvokedInterpreter() {
  namespace fs = std::filesystem;
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string argv0;
  if (!std::getline(cmdline, argv0, '\0') || argv0.empty()) return {};
  std::error_code ec;
  const fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) return {};
  auto is_self = [&](const fs::path& p) {
    std::error_code e;
    const fs::path real = fs::canonical(p, e);
    return !e && real == self;
  };
  if (argv0.find('/') != std::string::npos) {
    const fs::path p = fs::absolute(argv0, ec);  // relative to the cwd: checked below
    return !ec && is_self(p) ? p.string() : std::string();
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && is_self(fs::path(dir) / argv0)) return (fs::path(dir) / argv0).string();
    start = end + 1;
  }
  return {};
}

// The interpreter of the Python environment this plugin is installed in:
// the plugin lives in <prefix>/lib/pythonX.Y/site-packages/hipdnn_ep/, and
// hipdnn-ep-compiler, a dependency of the same wheel, is installed beside it.
std::string PythonOfOwnEnvironment() {
  namespace fs = std::filesystem;
  fs::path pkg = PluginDirectory();
  if (pkg.empty()) return {};
  fs::path site = pkg.parent_path();       // site-packages (or dist-packages)
  fs::path pyver = site.parent_path();     // pythonX.Y (or python3)
  fs::path lib = pyver.parent_path();      // lib or lib64
  if (pyver.filename().string().rfind("python", 0) != 0 || lib.filename().string().rfind("lib", 0) != 0) return {};
  fs::path bin = lib.parent_path() / "bin";
  for (const fs::path& exe : {bin / pyver.filename(), bin / "python3", bin / "python"}) {
    if (access(exe.c_str(), X_OK) == 0) return exe.string();
  }
  return {};
}

}  // namespace

// Interpreter choice, in this order:
//  1. the EP option compiler_python: the user said so explicitly;
//  2. the interpreter of the environment hipdnn-ep is installed in (derived
//     from the plugin's own path): hipdnn-ep-compiler is a dependency of the
//     same wheel, so it is importable there, whatever PATH says and whether
//     or not the host is Python;
//  3. the running interpreter when the host is Python, as it was started
//     (argv[0], so a venv's python keeps its packages) or else
//     /proc/self/exe (which the kernel resolves to the base interpreter).
//     Not first: the host may not be the environment hipdnn-ep is in;
//  4. python3 on PATH.
CompileClient::CompileClient(std::string python_option, int64_t timeout_s) : timeout_s_(timeout_s) {
  if (!python_option.empty()) {
    python_ = std::move(python_option);
    python_reason_ = "EP option compiler_python";
    return;
  }
  std::string own = PythonOfOwnEnvironment();
  if (!own.empty()) {
    python_ = own;
    python_reason_ = "the Python environment hipdnn-ep is installed in";
    return;
  }
  std::string self = SelfExe();
  if (HostIsPython() && std::filesystem::path(self).filename().string().rfind("python", 0) == 0) {
    const std::string invoked = InvokedInterpreter();
    python_ = invoked.empty() ? self : invoked;
    python_reason_ = "the host Python interpreter";
    return;
  }
  python_ = "python3";
  python_reason_ = "python3 on PATH";
}

json::Json CompileClient::Call(const json::Json& request, std::string* raw) const {
  std::string where = "hipdnn-ep: compiler (" + python_ + " -m hipdnn_ep_compiler.protocol --serve, chosen as " +
                      python_reason_ + ")";
  std::shared_ptr<CompilerServer> server = ServerFor(python_);
  const off_t err_start = server->ErrOffset();
  const std::string line = server->Request(json::Dump(request, "a request to the compiler"), timeout_s_, where,
                                           notice_);
  json::Json resp;
  try {
    resp = json::Parse(line, json::kMaxAnswerBytes, "the compiler's answer");
  } catch (const std::exception& e) {
    const std::string err = server->ErrTail(err_start);
    server->Discard();
    throw EpError(where + " answered without a valid JSON response (" + e.what() + ").\nstdout:\n" + Tail(line) +
                  (err.empty() ? "" : "\nstderr:\n" + err));
  }
  if (!resp.is_object()) throw EpError(where + " answered with JSON that is not an object");
  if (!json::Bool(json::Member(resp, "ok"))) {
    const json::Json& e = json::Member(resp, "error");
    std::string msg = e.is_string()   ? json::String(e)
                      : e.is_object() ? json::String(json::Member(e, "kind")) + ": " +
                                            json::String(json::Member(e, "message"))
                                      : std::string("no error message");
    throw EpError(where + " reported an error: " + msg);
  }
  // Each protocol version is its own contract: an answer in another one is
  // not read, whatever it looks like.
  const json::Json& protocol = json::Member(resp, "protocol");
  if (!protocol.is_number() || protocol.get<double>() != kCompilerProtocolVersion) {
    throw EpError(where + " answered in compiler protocol " +
                  (protocol.is_number() ? protocol.dump() : std::string("(none stated)")) +
                  ", but this EP speaks protocol " + std::to_string(kCompilerProtocolVersion) +
                  ". Install a hipdnn-ep-compiler that speaks it: pip install --upgrade hipdnn-ep hipdnn-ep-compiler");
  }
  if (raw) *raw = line;
  return resp;
}

CompilerCapabilities CompileClient::Capabilities(std::string* raw) const {
  return ParseCapabilities(Call({{"protocol", kCompilerProtocolVersion}, {"action", "capabilities"}}, raw));
}

CompilerCapabilities CompileClient::ParseCapabilities(const json::Json& resp) {
  using json::Member;
  CompilerCapabilities caps;
  // Accepted shapes: "compiler": {"name", "version"} or "compiler_version";
  // "ops" as {domain: [op_type, ...]}, [op_type, ...] or [{"domain", "op_type"}].
  const json::Json& compiler = Member(resp, "compiler");
  caps.name = json::String(Member(compiler, "name"), "hipdnn-ep-compiler");
  caps.version = json::String(Member(compiler, "version"), json::String(Member(resp, "compiler_version")));
  if (caps.version.empty()) throw EpError("hipdnn-ep: the compiler's capabilities state no compiler version");
  caps.build_id = json::String(Member(resp, "build_id"));
  auto domain = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  const json::Json& ops = Member(resp, "ops");
  if (ops.is_object()) {
    for (const auto& [d, list] : ops.items()) {
      for (const json::Json& op : json::Items(list)) caps.ops.insert({domain(d), json::String(op)});
    }
  }
  for (const json::Json& op : json::Items(ops)) {
    if (op.is_string()) caps.ops.insert({"", json::String(op)});
    else caps.ops.insert({domain(json::String(Member(op, "domain"))), json::String(Member(op, "op_type"))});
  }
  const json::Json& abi = Member(resp, "abi");
  if (Member(abi, "major").is_number()) {
    caps.abi_major = json::Int(Member(abi, "major"), -1);
    for (const json::Json& m : json::Items(Member(abi, "minors"))) {
      if (m.is_number()) caps.abi_minors.push_back(json::Int(m, -1));
    }
  }
  for (const json::Json& f : json::Items(Member(resp, "install_files"))) {
    if (f.is_string()) caps.install_files.push_back(json::String(f));
  }
  return caps;
}

CompileResult CompileClient::Compile(const std::string& model_path, const std::string& out_dir,
                                     const std::string& backend, const std::string& abi,
                                     const std::string& manifest) const {
  json::Json req = {{"protocol", kCompilerProtocolVersion}, {"action", "compile"}, {"model", model_path},
                    {"out_dir", out_dir}, {"output", out_dir}, {"backend", backend}, {"abi", abi}};
  if (!manifest.empty()) req["manifest"] = manifest;
  json::Json resp = Call(req);
  CompileResult result;
  result.artifact = json::String(json::Member(resp, "artifact"));
  result.metadata = json::Member(resp, "metadata");
  namespace fs = std::filesystem;
  if (!result.artifact.empty() && fs::is_directory(result.artifact)) {
    // An artifact folder holds the file the manifest's [artifact] table names.
    const fs::path file = fs::path(result.artifact) / HIPDNN_EP_ARTIFACT_FILE;
    if (!fs::is_regular_file(file)) {
      std::string held;
      for (const auto& e : fs::directory_iterator(result.artifact)) {
        held += (held.empty() ? "" : ", ") + e.path().filename().string();
      }
      throw EpError("hipdnn-ep: the compiler's artifact folder " + result.artifact + " has no " +
                    HIPDNN_EP_ARTIFACT_FILE + " (it holds: " + (held.empty() ? "nothing" : held) +
                    "); the compiler and the runtime disagree on the artifact format: install matching "
                    "hipdnn-ep-compiler and hipdnn-ep-runtime versions");
    }
    result.artifact = file.string();
  }
  if (result.artifact.empty() || !fs::is_regular_file(result.artifact)) {
    throw EpError("hipdnn-ep: the compiler reported success but no artifact file exists at '" +
                  result.artifact + "'");
  }
  return result;
}

std::vector<std::vector<NodeVerdict>> CompileClient::Support(const std::vector<std::string>& model_paths,
                                                             const std::string& backend,
                                                             const std::string& abi,
                                                             const std::string& manifest) const {
  json::Json req = {{"protocol", kCompilerProtocolVersion}, {"action", "support"}, {"models", model_paths},
                    {"backend", backend}};
  if (!abi.empty()) req["abi"] = abi;
  if (!manifest.empty()) req["manifest"] = manifest;
  json::Json resp = Call(req);
  const json::Json& answers = json::Member(resp, "models");
  if (!answers.is_array() || answers.size() != model_paths.size()) {
    throw EpError("hipdnn-ep: the compiler's support answer does not have one entry per model");
  }
  std::vector<std::vector<NodeVerdict>> out;
  for (const json::Json& a : json::Items(answers)) {
    out.emplace_back();
    for (const json::Json& n : json::Items(json::Member(a, "nodes"))) {
      NodeVerdict v;
      v.index = json::Int(json::Member(n, "index"), -1);
      v.supported = json::Bool(json::Member(n, "supported"));
      v.reason = json::String(json::Member(n, "reason"), "refused by the compiler");
      out.back().push_back(v);
    }
  }
  return out;
}

}  // namespace hipdnn_ep
