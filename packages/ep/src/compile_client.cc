#include "compile_client.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "compiler_pool.h"
#include "ep_utils.h"
#include "runtime_api.h"

namespace hipdnn_ep {
namespace {

std::string Tail(const std::string& s, size_t n = 4000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

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

template <class Response>
Response CompileClient::Call(const json::Json& request, const std::string& action, bool compile,
                             std::string* raw) const {
  std::string where = "hipdnn-ep: compiler (" + python_ + " -m hipdnn_ep_compiler.protocol --serve, chosen as " +
                      python_reason_ + ")";
  CompilerPool::Lease process = CompilerPool::For(python_)->Acquire(compile);
  const off_t err_start = process->ErrOffset();
  const std::string line = process->Request(json::Dump(request, "a request to the compiler"), timeout_s_, where,
                                            notice_);
  json::Json resp;
  try {
    resp = json::Parse(line, json::kMaxAnswerBytes, "the compiler's answer");
  } catch (const std::exception& e) {
    const std::string err = process->ErrTail(err_start);
    process->Discard();
    throw EpError(where + " answered without a valid JSON response (" + e.what() + ").\nstdout:\n" + Tail(line) +
                  (err.empty() ? "" : "\nstderr:\n" + err));
  }
  if (!resp.is_object()) throw EpError(where + " answered with JSON that is not an object");
  if (!json::Bool(json::Member(resp, "ok"))) {
    // An error_response (protocol.toml); its error is read only as far as it is well formed.
    std::string msg = "no error message";
    const json::Json& e = json::Member(resp, "error");
    protocol::ErrorResponseError error;
    std::string malformed;
    if (e.is_string()) {
      msg = json::String(e);
    } else if (!e.is_null() && protocol::Read(e, &error, "error", &malformed)) {
      msg = error.kind + ": " + error.message;
    } else if (!e.is_null()) {
      msg = "an error the compiler did not word (malformed error_response: " + malformed + ")";
    }
    throw EpError(where + " reported an error: " + msg);
  }
  // Each protocol version is its own contract: an answer in another one is
  // not read, whatever it looks like.
  const json::Json& version = json::Member(resp, "protocol");
  if (!version.is_number() || version.get<double>() != kCompilerProtocolVersion) {
    throw EpError(where + " answered in compiler protocol " +
                  (version.is_number() ? version.dump() : std::string("(none stated)")) +
                  ", but this EP speaks protocol " + std::to_string(kCompilerProtocolVersion) +
                  ". Install a hipdnn-ep-compiler that speaks it: pip install --upgrade hipdnn-ep hipdnn-ep-compiler");
  }
  Response typed;
  std::string malformed;
  if (!protocol::Read(resp, &typed, &malformed)) {
    throw EpError(where + " answered a " + action + " request with a malformed " + action + "_response (" +
                  malformed + "; packages/abi/protocol.toml declares it): install matching hipdnn-ep and "
                  "hipdnn-ep-compiler versions");
  }
  if (raw) *raw = line;
  return typed;
}

CompilerCapabilities CompileClient::Capabilities(std::string* raw) const {
  protocol::CapabilitiesRequest request;
  request.protocol = kCompilerProtocolVersion;
  request.action = "capabilities";
  return FromResponse(Call<protocol::CapabilitiesResponse>(protocol::ToJson(request), "capabilities", false, raw));
}

CompilerCapabilities CompileClient::ParseCapabilities(const json::Json& resp) {
  protocol::CapabilitiesResponse typed;
  std::string malformed;
  if (!protocol::Read(resp, &typed, &malformed)) {
    throw EpError("hipdnn-ep: the compiler's capabilities are malformed (" + malformed + ")");
  }
  return FromResponse(typed);
}

CompilerCapabilities CompileClient::FromResponse(const protocol::CapabilitiesResponse& resp) {
  CompilerCapabilities caps;
  caps.name = "hipdnn-ep-compiler";
  caps.version = resp.compiler_version;
  if (caps.version.empty()) throw EpError("hipdnn-ep: the compiler's capabilities state no compiler version");
  caps.build_id = resp.build_id;
  // "ops" is {domain: [op_type, ...]} ("any" in protocol.toml: the schema has no map type); anything
  // else in it is not an op.
  auto domain = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  if (resp.ops.is_object()) {
    for (const auto& [d, list] : resp.ops.items()) {
      for (const json::Json& op : json::Items(list)) {
        if (op.is_string()) caps.ops.insert({domain(d), json::String(op)});
      }
    }
  }
  caps.abi_major = resp.abi.major;
  caps.abi_minors = resp.abi.minors;
  caps.install_files = resp.install_files;
  return caps;
}

CompileResult CompileClient::Compile(const std::string& model_path, const std::string& out_dir,
                                     const std::string& backend, const std::string& abi,
                                     const std::string& manifest) const {
  protocol::CompileRequest request;
  request.protocol = kCompilerProtocolVersion;
  request.action = "compile";
  request.model = model_path;
  request.output = out_dir;
  request.backend = backend;
  request.abi = abi;
  if (!manifest.empty()) request.manifest = manifest;
  protocol::CompileResponse resp = Call<protocol::CompileResponse>(protocol::ToJson(request), "compile", true);
  CompileResult result;
  result.artifact = resp.artifact;
  result.metadata = std::move(resp.metadata);
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
  protocol::SupportRequest request;
  request.protocol = kCompilerProtocolVersion;
  request.action = "support";
  request.models = model_paths;
  request.backend = backend;
  if (!abi.empty()) request.abi = abi;
  if (!manifest.empty()) request.manifest = manifest;
  const protocol::SupportResponse resp =
      Call<protocol::SupportResponse>(protocol::ToJson(request), "support", false);
  if (resp.models.size() != model_paths.size()) {
    throw EpError("hipdnn-ep: the compiler's support answer does not have one entry per model");
  }
  std::vector<std::vector<NodeVerdict>> out;
  for (const protocol::SupportResponseModels& a : resp.models) {
    out.emplace_back();
    for (const protocol::SupportResponseModelsNodes& n : a.nodes) {
      NodeVerdict v;
      v.index = n.index;
      v.supported = n.supported;
      v.reason = n.reason.value_or("refused by the compiler");
      out.back().push_back(v);
    }
  }
  return out;
}

}  // namespace hipdnn_ep
