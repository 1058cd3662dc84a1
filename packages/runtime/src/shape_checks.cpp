#include "shape_checks.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace hipdnn_ep {
namespace {

// One evaluation: ok is false when the arithmetic left int64 or the text is malformed.
struct Result {
  bool ok = true;
  int64_t value = 0;
};

class Evaluator {
 public:
  // symbols: the metadata's `symbols` ({s3, expression}, ...), each defined over input symbols and the
  // named symbols listed before it.
  Evaluator(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs, size_t n_inputs,
            const std::vector<metadata::Symbols>& symbols)
      : state_(state), inputs_(inputs), n_inputs_(n_inputs) {
    for (const metadata::Symbols& s : symbols) {
      named_index_.emplace(s.name, named_.size());
      named_.push_back(&s.value);
    }
  }

  // An int, or an S-expression such as "(mul 4 d0_1)" (see the compiler's symbolic.py).
  Result evaluate(const metadata::Size& v) { return v.is_int ? Result{true, v.value} : evaluate(v.text); }

  Result evaluate(const std::string& text) {
    const std::string* saved_text = text_;
    const size_t saved_pos = pos_;
    text_ = &text;
    pos_ = 0;
    Result r = expr();
    skip_space();
    if (pos_ != text_->size()) r.ok = false;
    text_ = saved_text;
    pos_ = saved_pos;
    return r;
  }

 private:
  // A named symbol "s<k>": the value of its definition. Definitions are evaluated in list order, each
  // once, and may only use names listed before them: no cycle, and no recursion deeper than one.
  Result named(const std::string& tok) {
    auto it = named_index_.find(tok);
    if (it == named_index_.end() || it->second >= limit_) return {false, 0};
    while (named_values_.size() <= it->second) {
      const size_t saved_limit = limit_;
      limit_ = named_values_.size();
      Result r = evaluate(*named_[limit_]);
      limit_ = saved_limit;
      named_values_.push_back(r);
    }
    return named_values_[it->second];
  }

  void skip_space() {
    while (pos_ < text_->size() && (*text_)[pos_] == ' ') ++pos_;
  }

  std::string token() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_->size() && (*text_)[pos_] != ' ' && (*text_)[pos_] != '(' && (*text_)[pos_] != ')') ++pos_;
    return text_->substr(start, pos_ - start);
  }

  Result expr() {
    skip_space();
    if (pos_ >= text_->size()) return {false, 0};
    if ((*text_)[pos_] != '(') return atom(token());
    ++pos_;
    const std::string op = token();
    std::vector<Result> args;
    for (skip_space(); pos_ < text_->size() && (*text_)[pos_] != ')'; skip_space()) {
      args.push_back(expr());
      if (args.size() > 64) return {false, 0};
    }
    if (pos_ >= text_->size()) return {false, 0};
    ++pos_;  // ')'
    Result out;
    for (const Result& a : args) out.ok = out.ok && a.ok;  // every argument counts, selected or not
    if (!out.ok || args.empty()) return {false, 0};
    const int64_t a = args[0].value;
    const int64_t b = args.size() > 1 ? args[1].value : 0;
    if (op == "add" || op == "mul") {
      out.value = a;
      for (size_t k = 1; k < args.size() && out.ok; ++k) {
        out.ok = op == "add" ? !__builtin_add_overflow(out.value, args[k].value, &out.value)
                             : !__builtin_mul_overflow(out.value, args[k].value, &out.value);
      }
      return out;
    }
    if (args.size() == 2 && (op == "div" || op == "ceildiv")) {
      int64_t num = a;
      if (op == "ceildiv" &&
          (__builtin_add_overflow(b, int64_t{-1}, &num) || __builtin_add_overflow(a, num, &num))) {
        return {false, 0};
      }
      if (b == 0) return {true, 0};
      if (num == std::numeric_limits<int64_t>::min() && b == -1) return {false, 0};
      return {true, num / b};
    }
    if (args.size() == 2 && op == "max") return {true, a > b ? a : b};
    if (args.size() == 2 && op == "min") return {true, a < b ? a : b};
    if (args.size() == 3 && op == "selneg") return {true, a < 0 ? args[1].value : args[2].value};
    if (args.size() == 3 && op == "selzero") return {true, a == 0 ? args[1].value : args[2].value};
    return {false, 0};
  }

  // An integer literal, "d<input>_<axis>" (a dim), "v<input>_<element>" (a small integer input's element)
  // or "s<k>" (a named symbol).
  Result atom(const std::string& tok) {
    if (tok.empty()) return {false, 0};
    if (tok[0] == 's') return named(tok);
    if (tok[0] == 'd' || tok[0] == 'v') {
      size_t sep = tok.find('_');
      if (sep == std::string::npos) return {false, 0};
      Result i = number(tok.substr(1, sep - 1));
      Result j = number(tok.substr(sep + 1));
      if (!i.ok || !j.ok || i.value < 0 || j.value < 0 || static_cast<size_t>(i.value) >= n_inputs_) return {false, 0};
      const hipdnn_ep_tensor_ref_t& t = inputs_[i.value];
      if (tok[0] == 'd') {
        if (j.value >= t.rank || t.dims == nullptr) return {false, 0};
        return {true, t.dims[j.value]};
      }
      return element(t, i.value, j.value);
    }
    return number(tok);
  }

  static Result number(const std::string& tok) {
    if (tok.empty() || tok.size() > 20) return {false, 0};
    size_t k = tok[0] == '-' ? 1 : 0;
    if (k == tok.size()) return {false, 0};
    int64_t v = 0;
    for (; k < tok.size(); ++k) {
      if (tok[k] < '0' || tok[k] > '9') return {false, 0};
      const int64_t digit = tok[k] - '0';
      if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
          __builtin_add_overflow(v, tok[0] == '-' ? -digit : digit, &v)) {
        return {false, 0};
      }
    }
    return {true, v};
  }

  Result element(const hipdnn_ep_tensor_ref_t& t, int64_t input, int64_t k) {
    const uint64_t width = t.dtype == HIPDNN_EP_DTYPE_INT64 ? 8 : t.dtype == HIPDNN_EP_DTYPE_INT32 ? 4 : 0;
    int64_t count = 1;
    for (int32_t d = 0; d < t.rank && t.dims != nullptr; ++d) {
      if (t.dims[d] < 0 || __builtin_mul_overflow(count, t.dims[d], &count)) return {false, 0};
    }
    if (width == 0 || k >= count || t.data == nullptr) return {false, 0};
    auto cached = values_.find({input, k});
    if (cached != values_.end()) return {true, cached->second};
    int64_t v64 = 0;
    int32_t v32 = 0;
    void* dst = width == 8 ? static_cast<void*>(&v64) : static_cast<void*>(&v32);
    const void* src = static_cast<const char*>(t.data) + k * width;
    if (hipdnn_ep_memcpy(state_, dst, src, width, HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST) != HIPDNN_EP_STATUS_OK ||
        hipdnn_ep_synchronize(state_) != HIPDNN_EP_STATUS_OK) {
      return {false, 0};
    }
    const int64_t v = width == 8 ? v64 : v32;
    values_[{input, k}] = v;
    return {true, v};
  }

  hipdnn_ep_state_t* state_;
  const hipdnn_ep_tensor_ref_t* inputs_;
  size_t n_inputs_;
  const std::string* text_ = nullptr;
  size_t pos_ = 0;
  std::map<std::pair<int64_t, int64_t>, int64_t> values_;
  std::vector<const std::string*> named_;
  std::map<std::string, size_t> named_index_;
  std::vector<Result> named_values_;
  size_t limit_ = SIZE_MAX;  // names at this position or later are not defined yet
};

// text with each "{k}" replaced by values[k] ("overflow" where it leaves int64).
std::string format(const std::string& text, const std::vector<Result>& values) {
  std::string out;
  for (size_t k = 0; k < text.size(); ++k) {
    size_t close = text[k] == '{' ? text.find('}', k) : std::string::npos;
    if (close != std::string::npos) {
      size_t index = 0;
      bool digits = close > k + 1;
      for (size_t p = k + 1; p < close && digits; ++p) {
        digits = text[p] >= '0' && text[p] <= '9';
        index = index * 10 + static_cast<size_t>(text[p] - '0');
      }
      if (digits && index < values.size()) {
        out += values[index].ok ? std::to_string(values[index].value) : "overflow";
        k = close;
        continue;
      }
    }
    out += text[k];
  }
  return out;
}

}  // namespace

std::string first_failed_check(const std::vector<metadata::Checks>& checks,
                               const std::vector<metadata::Symbols>& symbols, hipdnn_ep_state_t* state,
                               const hipdnn_ep_tensor_ref_t* inputs, size_t n_inputs) {
  Evaluator eval(state, inputs, n_inputs, symbols);
  for (const metadata::Checks& check : checks) {
    const std::string& k = check.kind;
    const size_t arity = k == "eq" || k == "le" ? 2 : 1;
    if (check.values.size() < arity) continue;
    std::vector<Result> values;
    for (const metadata::Size& v : check.values) values.push_back(eval.evaluate(v));
    bool operands_ok = true;
    for (size_t a = 0; a < arity; ++a) operands_ok = operands_ok && values[a].ok;
    bool holds = operands_ok;
    if (holds && k == "eq") holds = values[0].value == values[1].value;
    if (holds && k == "le") holds = values[0].value <= values[1].value;
    if (holds && k == "nonneg") holds = values[0].value >= 0;
    if (holds) continue;
    std::string message = check.where + ": " + format(check.text, values);
    if (!operands_ok && message.find("overflows int64") == std::string::npos) {
      message += " (the shape arithmetic overflows int64)";
    }
    return message;
  }
  return "";
}

}  // namespace hipdnn_ep
