#include "ep_context_io.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>
#include <vector>

#include <hipdnn_ep/runtime_abi.h>

#include "ep_context.h"
#include "ep_options.h"
#include "json.h"
#include "ort_graph.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEpContextOp = "EPContext";
// In the folder beside a non-embedded EPContext model: the artifact file the manifest declares.
constexpr const char* kArtifactFileName = HIPDNN_EP_ARTIFACT_FILE;
constexpr const char* kMsDomain = "com.microsoft";

}  // namespace

bool IsOurEpContextNode(const OrtApi& ort, const OrtNode* node) {
  const char *op = nullptr, *domain = nullptr;
  ThrowIfError(ort, ort.Node_GetOperatorType(node, &op));
  ThrowIfError(ort, ort.Node_GetDomain(node, &domain));
  if (std::string(op) != kEpContextOp || std::string(domain ? domain : "") != kMsDomain) return false;
  std::string source;
  return ReadStringAttr(ort, node, "source", &source) && source == kEpName;
}

OrtNode* WriteEpContextNode(const ApiPtrs& api, const OrtGraph* graph, const std::string& name,
                            const LoadedArtifact& artifact, const SubgraphModel& model, const EpContextWrite& how) {
  const OrtApi& ort = api.ort;
  const OrtModelEditorApi* editor = api.editor;
  if (editor == nullptr) throw EpError("hipdnn-ep: this ONNX Runtime has no model editor API; EPContext unavailable");
  const std::string& bytes = artifact.bytes();
  const std::string tag = SignArtifact(how.install_key(), bytes);
  std::string context;  // ep_cache_context: the code itself, or a path relative to the EPContext model
  if (how.embed) {
    context = bytes;
  } else {
    fs::path ctx_model = how.file_path;
    if (ctx_model.empty()) {
      fs::path src = ModelPath(ort, graph);
      ctx_model = src.parent_path() / (src.stem().string() + "_ctx.onnx");
    }
    std::string safe_name;
    for (char c : name) safe_name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    fs::path folder = ctx_model.stem().string() + "_" + safe_name + ".hipdnn";
    fs::path dest = ctx_model.parent_path() / folder;
    std::error_code ec;
    fs::remove_all(dest, ec);
    fs::create_directories(dest);
    const fs::path file = dest / kArtifactFileName;
    std::ofstream out(file, std::ios::binary);
    out << bytes;
    if (!out.flush()) throw EpError("hipdnn-ep: cannot write the EPContext artifact " + file.string());
    context = (folder / kArtifactFileName).string();
  }
  const std::string notes =
      json::Dump(json::Json{{"tag", tag}, {"compatibility", how.compatibility}},
                 "the notes of EPContext node '" + name + "'");

  std::vector<OrtOpAttr*> attrs;
  auto add_int = [&](const char* key, int64_t v) {
    OrtOpAttr* a = nullptr;
    ThrowIfError(ort, ort.CreateOpAttr(key, &v, 1, ORT_OP_ATTR_INT, &a));
    attrs.push_back(a);
  };
  auto add_str = [&](const char* key, const std::string& v) {
    OrtOpAttr* a = nullptr;
    ThrowIfError(ort, ort.CreateOpAttr(key, v.data(), static_cast<int>(v.size()), ORT_OP_ATTR_STRING, &a));
    attrs.push_back(a);
  };
  OrtNode* node = nullptr;
  try {
    add_int("main_context", 1);
    add_int("embed_mode", how.embed ? 1 : 0);
    add_str("ep_cache_context", context);
    add_str("source", kEpName);
    add_str("partition_name", name);
    add_str("ep_sdk_version", HIPDNN_EP_VERSION);
    add_str("notes", notes);
    std::vector<const char*> ins, outs;
    for (const std::string& n : model.kernel_inputs) ins.push_back(n.c_str());
    for (const std::string& n : model.outputs) outs.push_back(n.c_str());
    ThrowIfError(ort, editor->CreateNode(kEpContextOp, kMsDomain, name.c_str(), ins.data(), ins.size(), outs.data(),
                                         outs.size(), attrs.data(), attrs.size(), &node));
  } catch (...) {
    for (OrtOpAttr* a : attrs) ort.ReleaseOpAttr(a);
    throw;
  }
  for (OrtOpAttr* a : attrs) ort.ReleaseOpAttr(a);
  return node;
}

EpContextCode ReadEpContextNode(const OrtApi& ort, const OrtGraph* graph, const OrtNode* node, const std::string& name,
                                bool trust_code, const std::function<std::string()>& install_key) {
  std::string context, notes_text;
  if (!ReadStringAttr(ort, node, "ep_cache_context", &context) || context.empty()) {
    throw EpError("hipdnn-ep: EPContext node '" + name + "' has no ep_cache_context");
  }
  ReadStringAttr(ort, node, "notes", &notes_text);
  const bool embedded = ReadIntAttr(ort, node, "embed_mode", 0) == 1;
  // The notes are read before any trust decision: a hostile model reaches this parse.
  const json::Json notes = json::Parse(notes_text.empty() ? "{}" : notes_text, json::kMaxNotesBytes,
                                       "the notes attribute of EPContext node '" + name + "'");
  const std::string tag = json::String(json::Member(notes, "tag"));
  // Native code runs only if this install produced it (the tag verifies with
  // the per-install key) or the user explicitly trusts EPContext code.  The
  // bytes checked are the bytes loaded (verified_artifact.h).
  auto verify = [&](const std::string& bytes) {
    if (trust_code) return;
    if (!tag.empty() && VerifyArtifactTag(install_key(), bytes, tag)) return;
    throw EpError("hipdnn-ep: EPContext node '" + name + "' carries native code that this installation did not "
                  "produce; refusing to run it. If you trust the model, set the EP option " +
                  std::string(options::kTrustEpContextCode) + "=1", ORT_NOT_IMPLEMENTED);
  };
  std::unique_ptr<LoadedArtifact> artifact;
  if (embedded) {
    verify(context);  // refused code is never written anywhere
    artifact = LoadedArtifact::FromBytes(context, "embedded in EPContext node '" + name + "'");
  } else {
    fs::path rel = context;
    if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0) {
      throw EpError("hipdnn-ep: EPContext node '" + name + "' points outside its model's folder: " + context);
    }
    const std::string model_path = ModelPath(ort, graph);
    if (model_path.empty()) {
      // Resolved against nothing, the relative path would name a file in
      // whatever folder the process happens to run in.
      throw EpError("hipdnn-ep: EPContext node '" + name + "' keeps its code in the file " + context +
                    " beside its model, but the model was loaded from bytes, so it has no folder to find it in; "
                    "load the model from its file, or compile it with ep.context_embed_mode=1 to embed the code");
    }
    const fs::path folder = fs::path(model_path).parent_path();
    const fs::path path = folder / rel;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw EpError("hipdnn-ep: the artifact of EPContext node '" + name + "' is missing: " + path.string());
    }
    // Symbolic links must not lead out of the model's folder either.
    const fs::path real = fs::canonical(path, ec);
    const fs::path real_folder = fs::canonical(folder.empty() ? fs::path(".") : folder, ec);
    const std::string inside = real_folder.string() + (real_folder.string() == "/" ? "" : "/");
    if (ec || real.string().rfind(inside, 0) != 0) {
      throw EpError("hipdnn-ep: EPContext node '" + name + "' points outside its model's folder: " + context +
                    " resolves to " + real.string() + " through a symbolic link; copy the artifact into " +
                    real_folder.string());
    }
    artifact = LoadedArtifact::FromFile(real.string(), verify);
  }
  EpContextCode code;
  code.artifact = std::move(artifact);
  const json::Json& compatibility = json::Member(notes, "compatibility");
  if (compatibility.is_string()) code.compatibility = json::String(compatibility);
  return code;
}

}  // namespace hipdnn_ep
