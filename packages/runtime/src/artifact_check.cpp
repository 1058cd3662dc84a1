#include "artifact_check.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <vector>

#include "hipdnn_ep/metadata_schema.h"  // generated from packages/abi/metadata.toml
#include "runtime_internal.h"

namespace hipdnn_ep {
namespace {

std::string string_or(const json::Value* v, const char* fallback) {
  return v != nullptr && v->is_string() ? json::as_string(*v) : fallback;
}

// The metadata fields the ABI check reads, through the schema's generated readers (metadata.toml).
// They are read before the whole metadata is, field by field: the check must word its refusal for
// an artifact built against another manifest too (an import that states no `since`, say).
struct Import {
  std::string name;
  std::string hash;
  std::optional<int64_t> since;  // absent (or not an integer): no release is known to have it
};

struct AbiFields {
  metadata::Abi abi;
  std::vector<Import> imports;
  std::string built_by;  // "NAME VERSION" of the compiler, as far as the metadata says
};

// INVALID_ARGUMENT naming the field when abi, imports or an import's name or hash does not read.
int32_t read_abi_fields(const std::string& path, const json::Value& meta, AbiFields* out) {
  std::string error;
  std::vector<metadata::Json> items;
  if (!metadata::detail::Required(meta, "abi", &out->abi, "", &error) ||
      !metadata::detail::Required(meta, "imports", &items, "", &error)) {
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     path + ": metadata lacks abi.major, abi.min_minor or imports (" + error + ")");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = "imports[" + std::to_string(i) + "]";
    Import imp;
    std::string ignored;
    if (!items[i].is_object() || !metadata::detail::Required(items[i], "name", &imp.name, where, &error) ||
        !metadata::detail::Required(items[i], "hash", &imp.hash, where, &error)) {
      if (!items[i].is_object()) error = "field '" + where + "': expected an object";
      return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                       path + ": metadata import without a name and hash (" + error + ")");
    }
    if (!metadata::detail::Optional(items[i], "since", &imp.since, where, &ignored)) imp.since.reset();
    out->imports.push_back(std::move(imp));
  }
  // Only for messages: each of the compiler's fields that does not read is unknown.
  std::optional<metadata::Json> compiler;
  std::string name = "an unknown compiler", version = "(unknown version)", ignored;
  if (metadata::detail::Optional(meta, "compiler", &compiler, "", &ignored) && compiler && compiler->is_object()) {
    if (!metadata::detail::Required(*compiler, "name", &name, "compiler", &ignored)) name = "an unknown compiler";
    if (!metadata::detail::Required(*compiler, "version", &version, "compiler", &ignored)) version = "(unknown version)";
  }
  out->built_by = name + " " + version;
  return HIPDNN_EP_STATUS_OK;
}

// Reads of the manifest and of fields checked before (absent ones read as empty or 0).
const json::Value::array_t& manifest_items(const json::Value& v, const char* key) {
  static const json::Value::array_t kNone;
  const json::Value* list = json::find(v, key);
  return list ? json::items(*list) : kNone;
}
std::string manifest_string(const json::Value& v, const char* key) { return string_or(json::find(v, key), ""); }
int64_t manifest_int(const json::Value& v, const char* table, const char* key) {
  const json::Value* t = json::find(v, table);
  const json::Value* value = t ? json::find(*t, key) : nullptr;
  return value ? json::as_int(*value) : 0;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// This library, as the dynamic loader sees it (the object that defines
// hipdnn_ep_abi_version), and its file name. Never closed: it is this code.
struct SelfLibrary {
  void* handle = nullptr;
  std::string path;
};

const SelfLibrary& self_library() {
  static const SelfLibrary self = [] {
    SelfLibrary s;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&hipdnn_ep_abi_version), &info) != 0 && info.dli_fname != nullptr) {
      s.path = info.dli_fname;
      s.handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    return s;
  }();
  return self;
}

// The ABI manifest JSON the runtime wheel ships beside its library (<package>/lib/<library>).
std::string manifest_file() {
  const std::string& lib = self_library().path;
  const size_t lib_dir = lib.rfind('/');
  const size_t package_dir = lib_dir == std::string::npos || lib_dir == 0 ? std::string::npos : lib.rfind('/', lib_dir - 1);
  if (package_dir == std::string::npos) return "<site-packages>/hipdnn_ep_runtime/abi_manifest.json";
  return lib.substr(0, package_dir) + "/abi_manifest.json";
}

}  // namespace

const json::Value& runtime_manifest() {
  static const json::Value parsed = [] {
    json::Value v;
    std::string error;
    // generated by json.dumps at build time: always valid
    json::parse(hipdnn_ep_abi_manifest(), json::kMaxMetadataBytes, &v, &error);
    return v;
  }();
  return parsed;
}

int32_t check_artifact_abi(const std::string& path, const json::Value& metadata, const json::Value& manifest) {
  AbiFields fields;
  if (int32_t status = read_abi_fields(path, metadata, &fields); status != HIPDNN_EP_STATUS_OK) return status;
  const std::string& built_by = fields.built_by;
  const int64_t want_major = fields.abi.major;
  const int64_t want_minor = fields.abi.min_minor;
  const int64_t have_major = manifest_int(manifest, "abi", "major");
  const int64_t have_minor = manifest_int(manifest, "abi", "minor");
  const std::string want = std::to_string(want_major) + "." + std::to_string(want_minor);
  const std::string have = std::to_string(have_major) + "." + std::to_string(have_minor);
  const std::string head = "artifact " + path + " built by " + built_by + " for runtime ABI " + want +
                           " (needs >= " + want + ") cannot run on runtime ABI " + have + ": ";
  // Each refusal names what is wrong and the one thing that fixes it.
  const std::string recompile_here =
      "Fix: recompile the model against this runtime: hipdnn-ep-compile MODEL.onnx -o DIR --manifest " +
      manifest_file() + " (the EP does this itself when it compiles)";

  if (want_major != have_major) {
    return set_error(HIPDNN_EP_STATUS_ABI_MISMATCH,
                     head + "the ABI major versions differ (" + std::to_string(want_major) + " vs " +
                         std::to_string(have_major) + "): no runtime " + std::to_string(have_major) +
                         ".x can run code built for major " + std::to_string(want_major) +
                         ". Fix: recompile the model with a hipdnn-ep-compiler for runtime ABI major " +
                         std::to_string(have_major) + " (hipdnn-ep-compile MODEL.onnx -o DIR --abi " + have + ")");
  }

  std::map<std::string, std::string> runtime_hashes;
  for (const json::Value& fn : manifest_items(manifest, "functions")) {
    runtime_hashes[manifest_string(fn, "name")] = manifest_string(fn, "hash");
  }
  // Missing imports that a newer minor introduced (a newer runtime fixes them), and the rest
  // (an artifact built against a manifest that is not this runtime's: only recompiling fixes them).
  std::vector<std::string> newer, unknown, mismatched;
  int64_t needed_minor = want_minor;
  for (const Import& imp : fields.imports) {
    auto it = runtime_hashes.find(imp.name);
    if (it == runtime_hashes.end()) {
      // The runtime cannot know when a function it lacks was added; the artifact may say.
      std::string entry = imp.name;
      if (imp.since) entry += " (since " + std::to_string(want_major) + "." + std::to_string(*imp.since) + ")";
      if (imp.since && *imp.since > have_minor) {
        needed_minor = std::max(needed_minor, *imp.since);
        newer.push_back(entry);
      } else {
        unknown.push_back(entry);
      }
    } else if (it->second != imp.hash) {
      mismatched.push_back(imp.name + ": artifact expects " + imp.hash + ", runtime has " + it->second);
    }
  }
  if (want_minor <= have_minor && newer.empty() && unknown.empty() && mismatched.empty()) return HIPDNN_EP_STATUS_OK;

  std::vector<std::string> problems;
  if (want_minor > have_minor) {
    problems.push_back("the runtime's ABI minor " + std::to_string(have_minor) + " is older than the required " +
                       std::to_string(want_minor));
  }
  std::vector<std::string> missing = newer;
  missing.insert(missing.end(), unknown.begin(), unknown.end());
  if (!missing.empty()) {
    problems.push_back("missing " + std::to_string(missing.size()) + " required import" +
                       (missing.size() == 1 ? "" : "s") + ": [" + join(missing, ", ") + "]");
  }
  if (!mismatched.empty()) problems.push_back("signature mismatch: [" + join(mismatched, ", ") + "]");
  std::string fix;
  if (unknown.empty() && mismatched.empty()) {
    // Only newer: everything the artifact needs exists from needed_minor on.
    fix = ". Fix: pip install 'hipdnn-ep-runtime>=" + std::to_string(want_major) + "." +
          std::to_string(needed_minor) + ",<" + std::to_string(want_major + 1) + "'";
  } else {
    // Functions this minor should have but does not, or different signatures: the artifact was
    // built against another manifest of the same ABI (an unreleased compiler or runtime).
    fix = ": it was compiled against an ABI manifest that differs from this runtime's within the same "
          "version (an unreleased compiler or runtime). " + recompile_here;
  }
  return set_error(HIPDNN_EP_STATUS_ABI_MISMATCH, head + join(problems, "; ") + fix);
}

int32_t check_artifact_exports(const std::string& path, const json::Value& metadata, const json::Value& manifest) {
  const SelfLibrary& self = self_library();
  if (self.handle == nullptr) {
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     "hipdnn_ep_artifact_open: cannot find the runtime library's own handle to check the imports of " +
                         path + " (dladdr/dlopen of the runtime failed)");
  }
  std::map<std::string, int64_t> since;
  for (const json::Value& fn : manifest_items(manifest, "functions")) {
    const json::Value* fn_since = json::find(fn, "since");
    since[manifest_string(fn, "name")] = fn_since ? json::as_int(*fn_since) : 0;
  }
  const json::Value* nodes = json::find(manifest, "version_nodes");
  AbiFields fields;  // check_artifact_abi read them already
  if (int32_t status = read_abi_fields(path, metadata, &fields); status != HIPDNN_EP_STATUS_OK) return status;
  std::vector<std::string> unresolved;
  for (const Import& imp : fields.imports) {
    const std::string& name = imp.name;
    auto it = since.find(name);
    if (it == since.end()) continue;  // check_artifact_abi refused it already
    const json::Value* node = nodes ? json::find(*nodes, std::to_string(it->second)) : nullptr;
    const std::string version = node != nullptr ? json::as_string(*node) : "";
    if (version.empty() || dlvsym(self.handle, name.c_str(), version.c_str()) == nullptr) {
      unresolved.push_back(name + "@" + (version.empty() ? "(no version node)" : version));
    }
  }
  if (unresolved.empty()) return HIPDNN_EP_STATUS_OK;
  const int64_t have_major = manifest_int(manifest, "abi", "major");
  const std::string have = std::to_string(have_major) + "." + std::to_string(manifest_int(manifest, "abi", "minor"));
  const std::string n = std::to_string(unresolved.size());
  return set_error(HIPDNN_EP_STATUS_ABI_MISMATCH,
                   "artifact " + path + " cannot run on runtime ABI " + have + ": the runtime library " + self.path +
                       " does not export " + n + " function" + (unresolved.size() == 1 ? "" : "s") +
                       " that its own ABI manifest declares and the artifact imports: [" + join(unresolved, ", ") +
                       "]. The artifact is fine; this runtime build is broken (its exports differ from its "
                       "manifest). Fix: reinstall a released runtime wheel, e.g. pip install --force-reinstall "
                       "'hipdnn-ep-runtime>=" + have + "," + "<" + std::to_string(have_major + 1) +
                       "'");
}

}  // namespace hipdnn_ep
