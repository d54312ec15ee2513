// A small structural JSON scanner: enough to find value boundaries and an object's top-level
// keys. Keys are compared in their raw (escaped) form, which is exact for "error" and "id".
#include "runtime/gateway/batch_response.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

class Scanner {
 public:
  explicit Scanner(absl::string_view s) : s_(s) {}
  size_t pos() const { return pos_; }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != c)
      return false;
    ++pos_;
    return true;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  // A string starting at pos_; its raw contents (between the quotes) go to `out`.
  bool String(absl::string_view* out) {
    if (!Eat('"'))
      return false;
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != '"')
      pos_ += s_[pos_] == '\\' ? 2 : 1;
    if (pos_ >= s_.size())
      return false;
    *out = s_.substr(start, pos_ - start);
    ++pos_;
    return true;
  }
  // Any value; for an object, `keys` (when not null) receives its top-level keys.
  bool Value(std::vector<absl::string_view>* keys = nullptr) {
    SkipSpace();
    if (pos_ >= s_.size())
      return false;
    const char c = s_[pos_];
    absl::string_view ignored;
    if (c == '"')
      return String(&ignored);
    if ((c == '{' || c == '[') && depth_ >= kMaxDepth)
      return false;  // bounded recursion: a function's answer cannot exhaust the stack
    if (c == '{') {
      ++depth_;
      const bool ok = Object(keys);
      --depth_;
      return ok;
    }
    if (c == '[') {
      ++depth_;
      const bool ok = Array();
      --depth_;
      return ok;
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']' &&
           s_[pos_] != ' ' && s_[pos_] != '\n' && s_[pos_] != '\r' && s_[pos_] != '\t')
      ++pos_;
    return pos_ > start;
  }
  bool Object(std::vector<absl::string_view>* keys) {
    if (!Eat('{'))
      return false;
    if (Eat('}'))
      return true;
    do {
      absl::string_view key;
      if (!String(&key) || !Eat(':') || !Value())
        return false;
      if (keys != nullptr)
        keys->push_back(key);
    } while (Eat(','));
    return Eat('}');
  }
  bool Array() {
    if (!Eat('['))
      return false;
    if (Eat(']'))
      return true;
    do {
      if (!Value())
        return false;
    } while (Eat(','));
    return Eat(']');
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  static constexpr int kMaxDepth = 128;
  absl::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

absl::Status Malformed(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("batch response: ", why));
}

// The elements of the array at the scanner's position.
absl::StatusOr<std::vector<BatchItem>> Elements(Scanner& sc, absl::string_view body) {
  std::vector<BatchItem> items;
  if (!sc.Eat('['))
    return Malformed("\"responses\" is not an array");
  if (sc.Eat(']'))
    return items;
  do {
    sc.SkipSpace();
    const size_t start = sc.pos();
    BatchItem item;
    item.is_object = sc.Peek('{');
    std::vector<absl::string_view> keys;
    if (!sc.Value(&keys))
      return Malformed("a response is not valid JSON");
    item.text = body.substr(start, sc.pos() - start);
    for (absl::string_view k : keys) {
      item.has_error |= k == "error";
      item.has_id |= k == "id";
    }
    items.push_back(item);
  } while (sc.Eat(','));
  if (!sc.Eat(']'))
    return Malformed("\"responses\" is not closed");
  return items;
}

}  // namespace

absl::StatusOr<std::vector<BatchItem>> SplitBatchResponse(absl::string_view body) {
  Scanner sc(body);
  std::optional<std::vector<BatchItem>> items;
  if (!sc.Eat('{'))
    return Malformed("not a JSON object");
  if (!sc.Peek('}')) {
    do {
      absl::string_view key;
      if (!sc.String(&key) || !sc.Eat(':'))
        return Malformed("not a JSON object");
      if (key == "responses") {
        SLUICE_ASSIGN_OR_RETURN(items, Elements(sc, body));
      } else if (!sc.Value()) {
        return Malformed(absl::StrCat("field '", key, "' is not valid JSON"));
      }
    } while (sc.Eat(','));
  }
  if (!sc.Eat('}') || !sc.AtEnd())
    return Malformed("not a JSON object");
  if (!items.has_value())
    return Malformed("\"responses\" missing");
  return *std::move(items);
}

std::string WithRequestId(const BatchItem& item, const std::optional<std::string>& id) {
  if (!id.has_value() || !item.is_object || item.has_id)
    return std::string(item.text);
  absl::string_view rest = item.text.substr(item.text.find('{') + 1);
  const size_t first = rest.find_first_not_of(" \n\r\t");
  const bool empty = first != absl::string_view::npos && rest[first] == '}';
  return absl::StrCat("{\"id\":", nlohmann::json(*id).dump(), empty ? "" : ",", rest);
}

}  // namespace sluice::runtime
