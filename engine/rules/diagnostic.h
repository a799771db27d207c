// Diagnostics of the rule loader: every error and warning one load finds, each
// with a stable code, a position (file:line:col, 1-based) and the rule, macro or
// list it belongs to. Codes never change meaning once released; see
// docs/rules-language.md for the table.
//
// Thread-safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vigil::rules {

enum class Severity { kError, kWarning };

// Stable codes. Errors: the load fails. Warnings: the load goes on (a warning
// may still skip one rule, e.g. kUnknownField).
namespace code {
inline constexpr const char* kFileRead = "E001";           // unreadable file or directory
inline constexpr const char* kYamlParse = "E002";          // not valid YAML
inline constexpr const char* kYamlValidate = "E003";       // valid YAML, wrong shape/keys/types
inline constexpr const char* kConditionSyntax = "E004";    // condition does not parse
inline constexpr const char* kUndefinedMacro = "E005";     // macro used but never defined
inline constexpr const char* kTypeError = "E006";          // operator/value does not fit the field
inline constexpr const char* kOutputSyntax = "E007";       // bad output format string
inline constexpr const char* kOverride = "E008";           // bad append/override
inline constexpr const char* kPriority = "E009";           // unknown priority
inline constexpr const char* kException = "E010";          // malformed exception
inline constexpr const char* kRegex = "E011";              // regex does not compile
inline constexpr const char* kEngineVersion = "E012";      // required_engine_version too new
inline constexpr const char* kMacroCycle = "E013";         // macro refers to itself
inline constexpr const char* kConditionTooLarge = "E014";  // over LoadOptions::max_condition_nodes
inline constexpr const char* kCompileBudget = "E015";      // compile time budget spent, or cancelled
inline constexpr const char* kSequence = "E016";           // malformed sequence (steps, by, within, output)
inline constexpr const char* kAggregate = "E017";          // malformed aggregate (by, window)
inline constexpr const char* kUnknownItem = "W001";        // unknown top-level item
inline constexpr const char* kUnknownKey = "W002";         // unknown key in an item (ignored)
inline constexpr const char* kUnknownField = "W003";       // rule uses an unknown field: skipped
inline constexpr const char* kUnknownSource = "W004";      // rule of a source vigil lacks: skipped
inline constexpr const char* kDeprecated = "W005";         // deprecated form (append: true, ...)
inline constexpr const char* kUnusedMacro = "W006";
inline constexpr const char* kUnusedList = "W007";
inline constexpr const char* kNoEvttype = "W008";       // condition matches every event type
inline constexpr const char* kExceptionName = "W009";   // exception name not unique
inline constexpr const char* kAppendNoValues = "W010";  // exception append without values
inline constexpr const char* kInvalidName = "W011";     // macro/list name Falco would reject
inline constexpr const char* kOutputField = "W012";     // unknown field in an output: <NA>
inline constexpr const char* kUnknownEvtType = "W013";  // evt.type value vigil never sees
inline constexpr const char* kPlugin = "W014";          // required plugin not present
inline constexpr const char* kNeverMatches = "W015";    // condition can match no vigil event
}  // namespace code

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;  // "E004", "W003", ...
  std::string file;
  int line = 0;      // 1-based; 0 when unknown
  int col = 0;       // 1-based; 0 when unknown
  std::string item;  // "rule 'Name'", "macro 'name'", "list 'name'", "" for file-level
  std::string message;

  // "file:line:col: error E004: rule 'X': message"
  std::string to_string() const;
};

// Where a node of a rules file is: file and 1-based line/column.
struct Pos {
  std::string file;
  int line = 0;
  int col = 0;
};

// Collects diagnostics of one load.
class Diagnostics {
 public:
  void add(Severity s, const char* code, const Pos& pos, std::string item, std::string message);
  void error(const char* code, const Pos& pos, std::string item, std::string message) {
    add(Severity::kError, code, pos, std::move(item), std::move(message));
  }
  void warning(const char* code, const Pos& pos, std::string item, std::string message) {
    add(Severity::kWarning, code, pos, std::move(item), std::move(message));
  }
  std::size_t error_count() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return all_; }
  std::vector<Diagnostic> take() { return std::move(all_); }

 private:
  std::vector<Diagnostic> all_;
  std::size_t errors_ = 0;
};

}  // namespace vigil::rules
