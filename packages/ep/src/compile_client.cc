#include "compile_client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ep_utils.h"
#include "runtime_api.h"

extern char** environ;

namespace hipdnn_ep {
namespace {

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs argv[0] (searched on PATH) with `input` on stdin, collecting stdout
// and stderr concurrently so that neither pipe can fill up and block it.
ProcessResult RunProcess(const std::vector<std::string>& args, const std::string& input) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    throw EpError(std::string("hipdnn-ep: pipe failed: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // `python -m` puts the working directory first on sys.path: run from "/"
  // so that a folder named like the compiler in the user's cwd cannot shadow it.
  posix_spawn_file_actions_addchdir_np(&fa, "/");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]); close(out[0]); close(err[0]);
    throw EpError("hipdnn-ep: cannot start the compiler with '" + args[0] + "': " + std::strerror(rc));
  }
  // A child that exits without reading stdin must not kill us with SIGPIPE.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  size_t written = 0;
  ProcessResult r;
  pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
  int open_fds = 3;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = written < input.size() ? write(in[1], input.data() + written, input.size() - written) : 0;
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || written == input.size()) {
        close(in[1]);
        fds[2].fd = -1;
        --open_fds;
      }
    }
  }
  sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
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

std::string Tail(const std::string& s, size_t n = 4000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

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
//  3. the running interpreter (/proc/self/exe) when the host is Python.  Not
//     first: the kernel resolves the venv's python symlink to the base
//     interpreter, which does not see the venv's packages;
//  4. python3 on PATH.
CompileClient::CompileClient(std::string python_option) {
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
    python_ = self;
    python_reason_ = "the host Python interpreter";
    return;
  }
  python_ = "python3";
  python_reason_ = "python3 on PATH";
}

json::Value CompileClient::Call(const std::string& request) const {
  ProcessResult r = RunProcess({python_, "-m", "hipdnn_ep_compiler.protocol"}, request);
  std::string where = "hipdnn-ep: compiler (" + python_ + " -m hipdnn_ep_compiler.protocol, chosen as " +
                      python_reason_ + ")";
  json::Value resp;
  try {
    resp = json::Parse(r.out);
  } catch (const std::exception& e) {
    throw EpError(where + " exited with code " + std::to_string(r.exit_code) +
                  " without a valid JSON response (" + e.what() + ").\nstderr:\n" + Tail(r.err) +
                  (r.out.empty() ? "" : "\nstdout:\n" + Tail(r.out)));
  }
  if (!resp.is_object()) throw EpError(where + " answered with JSON that is not an object");
  if (!resp["ok"].boolean) {
    const json::Value& e = resp["error"];
    std::string msg = e.is_string()   ? e.string
                      : e.is_object() ? e["kind"].string + ": " + e["message"].string
                                      : std::string("no error message");
    throw EpError(where + " reported an error: " + msg);
  }
  return resp;
}

CompilerCapabilities CompileClient::Capabilities() const {
  json::Value resp = Call("{\"protocol\":" + std::to_string(kCompilerProtocolVersion) +
                          ",\"action\":\"capabilities\"}");
  CompilerCapabilities caps;
  // Accepted shapes: "compiler": {"name", "version"} or "compiler_version";
  // "ops" as {domain: [op_type, ...]}, [op_type, ...] or [{"domain", "op_type"}].
  caps.name = resp["compiler"]["name"].is_string() ? resp["compiler"]["name"].string : "hipdnn-ep-compiler";
  caps.version = resp["compiler"]["version"].is_string() ? resp["compiler"]["version"].string
                                                        : resp["compiler_version"].string;
  if (caps.version.empty()) throw EpError("hipdnn-ep: the compiler's capabilities state no compiler version");
  auto domain = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  const json::Value& ops = resp["ops"];
  if (ops.is_object()) {
    for (const auto& [d, list] : ops.object) {
      for (const json::Value& op : list.array) caps.ops.insert({domain(d), op.string});
    }
  }
  for (const json::Value& op : ops.array) {
    if (op.is_string()) caps.ops.insert({"", op.string});
    else caps.ops.insert({domain(op["domain"].string), op["op_type"].string});
  }
  const json::Value& abi = resp["abi"];
  if (abi.is_object() && abi["major"].is_number()) {
    caps.abi_major = static_cast<int64_t>(abi["major"].number);
    for (const json::Value& m : abi["minors"].array) {
      if (m.is_number()) caps.abi_minors.push_back(static_cast<int64_t>(m.number));
    }
  }
  return caps;
}

CompileResult CompileClient::Compile(const std::string& model_path, const std::string& out_dir,
                                     const std::string& backend, const std::string& abi,
                                     const std::string& manifest) const {
  std::string req = "{\"protocol\":" + std::to_string(kCompilerProtocolVersion) +
                    ",\"action\":\"compile\",\"model\":" + json::Quote(model_path) +
                    ",\"out_dir\":" + json::Quote(out_dir) + ",\"output\":" + json::Quote(out_dir) + ",\"backend\":" + json::Quote(backend) +
                    ",\"abi\":" + json::Quote(abi) +
                    (manifest.empty() ? std::string() : ",\"manifest\":" + json::Quote(manifest)) + "}";
  json::Value resp = Call(req);
  CompileResult result;
  result.artifact = resp["artifact"].string;
  result.metadata = resp["metadata"];
  namespace fs = std::filesystem;
  if (!result.artifact.empty() && fs::is_directory(result.artifact)) {
    // The compiler may name its output directory; the artifact is its one .so.
    std::string found;
    int count = 0;
    for (const auto& e : fs::directory_iterator(result.artifact)) {
      if (e.path().extension() == ".so") {
        found = e.path().string();
        ++count;
      }
    }
    if (count != 1) {
      throw EpError("hipdnn-ep: the compiler's output directory " + result.artifact + " holds " +
                    std::to_string(count) + " .so files; expected exactly one artifact");
    }
    result.artifact = found;
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
  std::string models;
  for (const std::string& m : model_paths) models += (models.empty() ? "" : ",") + json::Quote(m);
  std::string req = "{\"protocol\":" + std::to_string(kCompilerProtocolVersion) +
                    ",\"action\":\"support\",\"models\":[" + models + "],\"backend\":" + json::Quote(backend) +
                    (abi.empty() ? std::string() : ",\"abi\":" + json::Quote(abi)) +
                    (manifest.empty() ? std::string() : ",\"manifest\":" + json::Quote(manifest)) + "}";
  json::Value resp = Call(req);
  const json::Value& answers = resp["models"];
  if (!answers.is_array() || answers.array.size() != model_paths.size()) {
    throw EpError("hipdnn-ep: the compiler's support answer does not have one entry per model");
  }
  std::vector<std::vector<NodeVerdict>> out;
  for (const json::Value& a : answers.array) {
    out.emplace_back();
    for (const json::Value& n : a["nodes"].array) {
      NodeVerdict v;
      v.index = n["index"].is_number() ? static_cast<int64_t>(n["index"].number) : -1;
      v.supported = n["supported"].boolean;
      v.reason = n["reason"].is_string() ? n["reason"].string : "refused by the compiler";
      out.back().push_back(v);
    }
  }
  return out;
}

}  // namespace hipdnn_ep
